"""Plain line-mode chat over the shared runtime: what ``nyz chat --plain``, a pipe or a
redirect get instead of the console (``nyz chat`` on a terminal).

One reader task turns stdin lines into a channel; the chat loop sends them to the agent or,
while an approval is pending, answers it (y = yes, a = always for this session, n or an empty
line = no; anything else asks again). Events are shown by ``ChatRenderer`` on the one dispatch
of ``nyzhi.core.event_renderer``. Ctrl-C cancels the running turn and every subagent's under
it (their threads are kept: the model can continue them); at the prompt it exits. ``/exit`` or
EOF quits.

Subagents' lines are prefixed with their nickname (``[explorer-1] [tool: grep]``); their
answers are shown whole when their turn ends rather than streamed, so several agents working at
once never interleave mid-line. An approval or question says which agent asks.

Piped input (stdin not a terminal, as in ``printf 'hello\n' | nyz chat --plain``) is a script:
each line waits until the turn before it has ended or asks something (then the line is the
answer), and the end of the input waits for the running turn to end, declining what it asks
from then on since nobody is left to answer. Only then does the chat exit.

SIGTERM and SIGHUP (the terminal closed) cancel the running turn, let it settle, save the
session and exit with 143 and 129 (``nyzhi.signals``).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import trio

from nyzhi.cli.prompt_input import decode_part
from nyzhi.core.event_renderer import EventRenderer
from nyzhi.core.flags import runtime_options
from nyzhi.core.protocol import ApprovalAnswer, Session, status_card, status_line
from nyzhi.core.protocol import events as ev
from nyzhi.core.protocol.commands import NOTICE, dispatch
from nyzhi.signals import exit_code, stop_on_signal

KEYS_HELP = """Ctrl-C cancels a running turn and its subagents' (they can be continued); Ctrl-D quits.
Approvals: y = yes, a = always this session (every agent), n = no."""

APPROVAL_KEYS = {
    "y": ApprovalAnswer.APPROVE, "yes": ApprovalAnswer.APPROVE,
    "a": ApprovalAnswer.ALWAYS, "always": ApprovalAnswer.ALWAYS,
    "n": ApprovalAnswer.DENY, "no": ApprovalAnswer.DENY, "": ApprovalAnswer.DENY,
}


async def _read_lines(send: trio.MemorySendChannel[str | None]) -> None:
    """Lines typed (or piped) on stdin, decoded here: a byte that is not UTF-8 is replaced and
    said once per line (a strict text stdin used to raise, which ended the chat). Read with
    ``os.read`` on the descriptor: a thread parked in a buffered reader would hold its lock
    when nyz exits, which aborts the interpreter."""
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):
        fd = None  # replaced by an in-memory stream (an embedding program, a test)
    pending = b""
    async with send:
        while True:
            if fd is None:
                line: str | None = await trio.to_thread.run_sync(sys.stdin.readline,
                                                                 abandon_on_cancel=True)
                line = line or None
            else:
                while b"\n" not in pending:
                    try:
                        chunk = await trio.to_thread.run_sync(os.read, fd, 65536,
                                                              abandon_on_cancel=True)
                    except OSError:  # the terminal is gone (EIO): as good as EOF
                        chunk = b""
                    if not chunk:
                        break
                    pending += chunk
                if not pending:
                    line = None
                else:
                    raw, sep, pending = pending.partition(b"\n")
                    line, note = decode_part(raw, "line")
                    if note:  # said, and the line still goes
                        print(note, file=sys.stderr, flush=True)
            if line is None:
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

    def on_autopilot_phase(self, event: ev.AutopilotPhase) -> None:
        self.out.write(f"[{event.summary()}]\n")

    def on_process_start(self, event: ev.ProcessStart) -> None:
        self.out.write(f"{self.prefix(event)}[{event.summary()}]\n")

    def on_process_exit(self, event: ev.ProcessExit) -> None:
        self.out.write(f"{self.prefix(event)}[{event.summary()}]\n")

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

    def on_compaction(self, event: ev.Compaction) -> None:
        self.out.write(f"{self.prefix(event)}[context compacted: {event.before_tokens} → "
                       f"{event.after_tokens} tokens]\n")

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


class ChatHost:
    """The chat as the slash commands' ``CommandHost`` (``nyzhi.core.commands``): output as
    plain lines (notices in brackets), prompts started as turns. It has none of the console's
    features (a screen, the agent tree, themes, reopening the runtime in place), so ``/clear``,
    ``/agents``, ``/theme`` and ``/resume`` are not offered here."""

    features: frozenset[str] = frozenset()
    cancel_hint = "Ctrl-C or /cancel"
    keys_help = KEYS_HELP

    def __init__(self, rt: Any, out: TextIO, nursery: trio.Nursery,
                 start_turn: Callable[[str], None]) -> None:
        self.rt = rt
        self.cwd = Path.cwd()
        self.out = out
        self.nursery = nursery
        # Starts a turn and marks the chat busy at once (the next piped line must see it).
        self.start_turn = start_turn
        self.busy = False
        self.started = False  # a command started a turn: its end prints the prompt
        self.done = False  # /quit
        self._loaded: Any = None

    def show(self, kind: str, text: str) -> None:
        notice = kind == NOTICE and "\n" not in text and not text.endswith(":")
        self.out.write(f"[{text}]\n" if notice else f"{text}\n")

    def show_lines(self, lines: list[tuple[str, str]]) -> None:
        for kind, text in lines:
            self.show(kind, text)

    def send_main(self, text: str) -> None:
        if self.busy:
            # the thread and the files belong to the running turn until it ends
            self.out.write("[a turn is running; Ctrl-C or /cancel first]\n")
            return
        self.started = True
        self.start_turn(text)

    def cancel_turn(self) -> None:
        self.nursery.start_soon(self.rt.cancel)

    def quit(self) -> None:
        self.done = True

    def refresh_status(self) -> None:
        pass

    def status_text(self, *, long: bool = False) -> str:
        status = Session(self.rt).status()
        return status_card(status) if long else status_line(status)

    def loaded_config(self) -> Any:
        if self._loaded is None:
            from nyzhi.config.project_trust import load_trusted

            self._loaded = load_trusted(self.cwd)[0]  # unapproved project keys left out
        return self._loaded


async def chat(args: argparse.Namespace) -> int:
    from nyzhi.core.runtime import open_runtime

    options = runtime_options(args, interactive=True)
    out: Any = sys.stdout
    status = None  # the activity line, rewritten in place: only on a terminal
    if sys.stdout.isatty():
        import shutil

        from nyzhi.tui.activity import Activity, StatusLine

        status = out = StatusLine(sys.stdout, Activity(),
                                  width=shutil.get_terminal_size().columns)
    stopped_by: int | None = None
    async with open_runtime(options) as rt:
        from nyzhi.core import collector

        collector.resume(freeze=True)  # paused by ``nyz chat`` while it started
        for notice in rt.notices:
            print(notice, file=sys.stderr)
        print(f"nyz · {rt.provider_name}/{rt.model} · session {rt.session_id[:8]} · /help", file=out)
        renderer = ChatRenderer(out)
        pending = renderer.pending
        busy = trio.Event()
        busy.set()
        piped = not sys.stdin.isatty()
        changed = trio.lowlevel.ParkingLot()  # woken by every event and every turn's end
        lines_send, lines = trio.open_memory_channel[str | None](16)
        async with rt.subscribe() as events, trio.open_nursery() as nursery:
            nursery.start_soon(_read_lines, lines_send)

            async def pump() -> None:
                async for event in events:
                    if status is not None and event.agent == ev.MAIN_AGENT:
                        status.activity.feed(event)
                    renderer.render(event)
                    if status is not None:
                        status.draw()
                    out.flush()
                    changed.unpark_all()

            async def spin() -> None:
                """The activity line's clock (a screen clock, not synchronisation)."""
                assert status is not None
                while True:
                    await trio.sleep(0.125)
                    if status.activity.active:
                        status.draw()

            async def settle() -> None:
                """Until no turn runs or the running one asks something."""
                while not busy.is_set() and not pending:
                    await changed.park()

            async def finish() -> None:
                """stdin ended: let the running turn end; nobody can answer it any more."""
                while not busy.is_set():
                    await settle()
                    while pending:
                        request = pending.pop(0)
                        if isinstance(request, ev.UserQuestion):
                            await rt.answer_question(request.request_id,
                                                     "(no answer: the input ended)")
                        else:
                            await rt.answer_approval(request.request_id, ApprovalAnswer.DENY)

            async def mid_turn(signum: int) -> bool:
                if signum == signal.SIGINT and not busy.is_set():
                    await rt.cancel()  # Ctrl-C mid-turn: back to the prompt
                    return True
                return False

            async def stop(signum: int) -> None:
                nonlocal stopped_by
                if signum != signal.SIGINT:
                    stopped_by = signum
                    await rt.cancel()
                    await busy.wait()  # the turn has settled: its thread is whole
                nursery.cancel_scope.cancel()

            async def on_signal() -> None:
                await stop_on_signal(stop, interrupts=mid_turn, detach_terminal=True)

            nursery.start_soon(pump)
            nursery.start_soon(on_signal)
            if status is not None:
                nursery.start_soon(spin)

            async def run_turn(text: str, done: trio.Event) -> None:
                if status is not None:
                    status.at_line_start = True  # the person's Enter ended the "> " line
                    status.activity.start()
                    status.draw()
                try:
                    try:
                        handle = await rt.submit(text)
                    except ValueError as exc:  # an @image that cannot be sent (ImageError)
                        out.write(f"[not sent: {exc}]\n")
                        return
                    await handle.wait()
                finally:
                    if status is not None:
                        status.activity.stop()
                        status.clear()
                    done.set()
                    changed.unpark_all()
                    out.write("> ")
                    out.flush()

            async def run_command(text: str) -> bool:
                """Run a slash command. While it runs, the next lines answer only what it asks
                (``/init-deep`` runs commands through the gates, which may ask approval);
                other lines wait their turn, so piped input keeps its order. False: the input
                ended meanwhile (what the command asked is declined)."""
                done = trio.Event()

                async def command() -> None:
                    try:
                        await dispatch(host, text)
                    except Exception as exc:  # one failing command must not end the chat
                        out.write(f"{text.split()[0]} failed: {exc}\n")
                    finally:
                        done.set()
                        changed.unpark_all()

                nursery.start_soon(command)
                ended = False
                while not done.is_set():
                    if not pending:
                        await changed.park()
                        continue
                    request = pending[0]
                    line = None if ended else await lines.receive()
                    ended = line is None
                    if isinstance(request, ev.UserQuestion):
                        await rt.answer_question(request.request_id, line.strip() if line
                                                 else "(no answer: the input ended)")
                    else:
                        answer = ApprovalAnswer.DENY if line is None else approval_answer(line)
                        if answer is None:
                            out.write("please answer y (yes), a (always this session) or n "
                                      "(no): ")
                            out.flush()
                            continue
                        await rt.answer_approval(request.request_id, answer)
                    pending.pop(0)
                return not ended

            def start_turn(text: str) -> None:
                nonlocal busy
                busy = trio.Event()  # at once: the next line must see the turn as running
                nursery.start_soon(run_turn, text, busy)

            host = ChatHost(rt, out, nursery, start_turn)
            out.write("> ")
            out.flush()
            if getattr(args, "first_prompt", None):  # nyz team start --task
                start_turn(rt.knowledge.expand(args.first_prompt))
            async for line in lines:
                if line is None:
                    if piped:
                        await finish()
                    break
                if piped:
                    await settle()
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
                if not text.startswith("/"):
                    if not busy.is_set():
                        out.write("[a turn is running; Ctrl-C or /cancel first]\n")
                    else:
                        start_turn(rt.knowledge.expand(text))
                    out.flush()
                    continue
                host.busy, host.started = not busy.is_set(), False
                if not await run_command(text):  # the input ended while it ran
                    if piped:
                        await finish()
                    break
                if host.done:
                    break
                if not host.started:
                    out.write("> ")
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
        from nyzhi.core.protocol import describe_error

        print(f"nyz: {describe_error(exc)}", file=sys.stderr)
        return 1
