"""Plain line-mode chat over the shared runtime (stands in until the urwid console).

One reader task turns stdin lines into a channel; the chat loop sends them to the agent or,
while an approval is pending, answers it (y = yes, a = always for this session, n or an empty
line = no; anything else asks again). Events are shown by ``ChatRenderer`` on the one dispatch
of ``nyzhi.core.event_renderer``. Ctrl-C cancels the running turn and every subagent's under
it (their threads are kept: the model can continue them); at the prompt it exits. ``/exit`` or
EOF quits.

Subagents' lines are prefixed with their nickname (``[explorer-1] [tool: grep]``); their
answers are shown whole when their turn ends rather than streamed, so several agents working at
once never interleave mid-line. An approval or question says which agent asks.

SIGTERM and SIGHUP (the terminal closed) cancel the running turn, let it settle, save the
session and exit with 143 and 129 (``nyzhi.cli.signals``).
"""

from __future__ import annotations

import argparse
import signal
import sys
from typing import Any, TextIO

import trio

from nyzhi.cli.signals import STOP_SIGNALS, detach_closed_terminal, exit_code
from nyzhi.core import events as ev
from nyzhi.core.event_renderer import EventRenderer
from nyzhi.core.flags import runtime_options
from nyzhi.core.tool_step import ApprovalAnswer

HELP = """commands: /exit (or Ctrl-D) quit · /cancel cancel the turn · /compact compact the context
          /undo revert the last file change · /plan toggle plan mode (leaving it executes the plan)
          /mcp MCP servers (read, prompt) · /team the team this session leads
          /thinking off|low|medium|high|TOKENS show or set how hard the model thinks
          /NAME args run a custom command (.nyzhi/commands,
          .claude/commands) · /help this text
Ctrl-C cancels a running turn and its subagents' (they can be continued).
Approvals: y = yes, a = always this session (every agent), n = no."""

APPROVAL_KEYS = {
    "y": ApprovalAnswer.APPROVE, "yes": ApprovalAnswer.APPROVE,
    "a": ApprovalAnswer.ALWAYS, "always": ApprovalAnswer.ALWAYS,
    "n": ApprovalAnswer.DENY, "no": ApprovalAnswer.DENY, "": ApprovalAnswer.DENY,
}


async def _read_lines(send: trio.MemorySendChannel[str | None]) -> None:
    async with send:
        while True:
            try:
                line = await trio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True)
            except (OSError, ValueError):  # the terminal is gone (EIO): as good as EOF
                line = ""
            if not line:
                await send.send(None)
                return
            await send.send(line.rstrip("\n"))


class ChatRenderer(EventRenderer):
    """What the chat shows of each event; approvals and questions wait in ``pending``."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.pending: list[ev.ApprovalRequest | ev.UserQuestion] = []
        self.errors: list[str] = []

    @staticmethod
    def prefix(event: ev.AnyEvent) -> str:
        """"" for the main agent, "[nickname] " for a subagent."""
        return "" if event.agent == ev.MAIN_AGENT else f"[{event.agent.rsplit('/', 1)[-1]}] "

    @staticmethod
    def asker(event: ev.AnyEvent) -> str:
        return "" if event.agent == ev.MAIN_AGENT else f"{event.agent} asks: "

    def on_text_delta(self, event: ev.TextDelta) -> None:
        if event.agent == ev.MAIN_AGENT:
            self.out.write(event.text)

    def on_tool_start(self, event: ev.ToolStart) -> None:
        self.out.write(f"\n{self.prefix(event)}[tool: {event.name}]\n")

    def on_tool_done(self, event: ev.ToolDone) -> None:
        status = "failed" if event.is_error else "done"
        preview = (event.output or "").strip().replace("\n", " ")[:160]
        self.out.write(f"{self.prefix(event)}[{event.name} {status}] {preview}\n")

    def on_team_message(self, event: ev.TeamMessage) -> None:
        if event.kind == "message":
            self.out.write(f"[{event.sender} → {event.to}] {event.text}\n")

    def on_task_update(self, event: ev.TaskUpdate) -> None:
        owner = f" ({event.owner})" if event.owner else ""
        self.out.write(f"[task {event.task_id} {event.status}{owner}] {event.subject}\n")

    def on_agent_status(self, event: ev.AgentStatus) -> None:
        if event.agent == ev.MAIN_AGENT or event.status in ("running", "pending_init"):
            return
        detail = f": {event.detail}" if event.detail else ""
        self.out.write(f"{self.prefix(event)}{event.status}{detail}\n")

    def on_user_question(self, event: ev.UserQuestion) -> None:
        self.pending.append(event)
        self.out.write(f"\n{self.asker(event)}{event.question}\n")
        for i, opt in enumerate(event.options, 1):
            self.out.write(f"  {i}. {opt.get('label', opt.get('value'))}\n")
        self.out.write("answer (number" + (" or text" if event.allow_custom else "") + "): ")

    def on_approval_request(self, event: ev.ApprovalRequest) -> None:
        self.pending.append(event)
        self.out.write(
            f"\n{event.preview or ''}\n{self.asker(event)}"
            f"Approve {event.tool}: {event.summary}? [y/a/N] "
        )

    def on_error(self, event: ev.Error) -> None:
        self.errors.append(event.message)
        self.out.write(f"\n{self.prefix(event)}error: {event.message}\n")

    def on_turn_complete(self, event: ev.TurnComplete) -> None:
        if event.agent != ev.MAIN_AGENT:
            if event.text:
                self.out.write(f"{self.prefix(event)}{event.text}\n")
            return
        self.out.write("\n" if event.stop_reason != "cancelled" else "\n[cancelled]\n")


def approval_answer(line: str) -> ApprovalAnswer | None:
    """The answer a typed line means (empty: the default, N); None for anything else, so a
    typo asks again instead of silently declining."""
    return APPROVAL_KEYS.get(line.strip().lower())


def team_summary(rt: Any) -> str:
    """``/team``: the bound team's members and tasks (``nyz team status``)."""
    team = rt.main_agent.tooling.context.team_name
    if not team:
        return "[not in a team: nyz team start NAME, or ask the agent to create one]"
    from nyzhi.core.teams.report import summary_lines, team_status

    return "\n".join(summary_lines(team_status(team)))


async def chat(args: argparse.Namespace) -> int:
    from nyzhi.core.runtime import open_runtime

    options = runtime_options(args, interactive=True)
    out = sys.stdout
    stopped_by: int | None = None
    async with open_runtime(options) as rt:
        for notice in rt.notices:
            print(notice, file=sys.stderr)
        print(f"nyz · {rt.provider_name}/{rt.model} · session {rt.session_id[:8]} · /help", file=out)
        renderer = ChatRenderer(out)
        pending = renderer.pending
        busy = trio.Event()
        busy.set()
        lines_send, lines = trio.open_memory_channel[str | None](16)
        async with rt.subscribe() as events, trio.open_nursery() as nursery:
            nursery.start_soon(_read_lines, lines_send)

            async def pump() -> None:
                async for event in events:
                    renderer.render(event)
                    out.flush()

            async def on_signal() -> None:
                nonlocal stopped_by
                with trio.open_signal_receiver(*STOP_SIGNALS) as sigs:
                    async for signum in sigs:
                        if signum == signal.SIGINT and not busy.is_set():
                            await rt.cancel()  # Ctrl-C mid-turn: back to the prompt
                            continue
                        if signum != signal.SIGINT:
                            stopped_by = signum
                            detach_closed_terminal(signum)
                            await rt.cancel()
                            await busy.wait()  # the turn has settled: its thread is whole
                        nursery.cancel_scope.cancel()
                        return

            nursery.start_soon(pump)
            nursery.start_soon(on_signal)

            async def run_turn(text: str) -> None:
                nonlocal busy
                busy = trio.Event()
                try:
                    try:
                        handle = await rt.submit(text)
                    except ValueError as exc:  # an @image that cannot be sent (ImageError)
                        out.write(f"[not sent: {exc}]\n")
                        return
                    await handle.wait()
                finally:
                    busy.set()
                    out.write("> ")
                    out.flush()

            out.write("> ")
            out.flush()
            if getattr(args, "first_prompt", None):  # nyz team start --task
                nursery.start_soon(run_turn, rt.knowledge.expand(args.first_prompt))
            async for line in lines:
                if line is None:
                    break
                if pending:
                    request = pending[0]
                    if isinstance(request, ev.UserQuestion):
                        text = line.strip()
                        if text.isdigit() and 1 <= int(text) <= len(request.options):
                            text = request.options[int(text) - 1].get("value", text)
                        await rt.answer_question(request.request_id, text)
                    else:
                        answer = approval_answer(line)
                        if answer is None:
                            out.write("please answer y (yes), a (always this session) or n (no): ")
                            out.flush()
                            continue
                        await rt.answer_approval(request.request_id, answer)
                    pending.pop(0)
                    continue
                text = line.strip()
                if not text:
                    out.write("> ")
                    out.flush()
                    continue
                if text in ("/exit", "/quit"):
                    break
                if text == "/help":
                    out.write(HELP + "\n> ")
                elif text == "/cancel":
                    await rt.cancel()
                elif text == "/team":
                    out.write(team_summary(rt) + "\n> ")
                elif text == "/thinking" or text.startswith("/thinking "):
                    from nyzhi.core.thinking import thinking_command

                    out.write(thinking_command(rt, text[len("/thinking"):]) + "\n> ")
                elif not busy.is_set():
                    # the thread and the files belong to the running turn until it ends
                    out.write("[a turn is running; Ctrl-C or /cancel first]\n")
                elif text == "/compact":
                    await rt.compact()
                    out.write("[context compacted]\n> ")
                elif text == "/undo":
                    out.write(rt.undo() + "\n> ")
                elif text == "/mcp" or text.startswith("/mcp "):
                    from nyzhi.core.mcp.console import mcp_command

                    prompt = await mcp_command(rt, text, out)
                    if prompt:
                        nursery.start_soon(run_turn, prompt)
                    else:
                        out.write("> ")
                elif text == "/plan":
                    execute = rt.knowledge.set_plan_mode(not rt.knowledge.plan_mode)
                    out.write("[plan mode on: read-only tools]\n> " if rt.knowledge.plan_mode
                              else "[plan mode off]\n" + ("" if execute else "> "))
                    if execute:
                        nursery.start_soon(run_turn, execute)
                else:
                    nursery.start_soon(run_turn, rt.knowledge.expand(text))
                out.flush()
            nursery.cancel_scope.cancel()
    if stopped_by is not None:
        return exit_code(stopped_by)
    fault = rt.save_fault  # the session could not be saved (full or read-only disk)
    if fault is not None:
        if not any(str(fault) in message for message in renderer.errors):
            print(f"nyz: {fault}", file=sys.stderr)  # failed at close: no event said it
        return 1
    return 0


def main(args: argparse.Namespace) -> int:
    try:
        return trio.run(chat, args)
    except Exception as exc:
        from nyzhi.core.errors import describe_error

        print(f"nyz: {describe_error(exc)}", file=sys.stderr)
        return 1
