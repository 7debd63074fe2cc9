"""Plain line-mode chat over the shared runtime: what ``nyz chat --plain``, a pipe or a
redirect get instead of the console (``nyz chat`` on a terminal).

One reader task turns stdin lines into a channel; the chat loop sends them to the agent or,
while an approval is pending, answers it (y = yes, a = always for this session, n or an empty
line = no; anything else asks again). Events are shown by ``ChatRenderer`` on the one dispatch
of ``nyzhi.core.protocol.renderer``. Ctrl-C cancels the running turn and every subagent's under
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

The session is served on its live socket (``nyzhi.core.protocol.live_socket``), so ``nyz
attach`` can watch it and answer what it asks: the first answer wins. One answered there is
withdrawn here: the read waiting for its answer is cancelled (no line is lost) and one line
says so; the next line is a prompt again.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import trio

from nyzhi.core.protocol import ApprovalAnswer, ScreenlessHost
from nyzhi.core.protocol import events as ev
from nyzhi.core.protocol.commands import NOTICE, dispatch
from nyzhi.core.protocol.renderer import EventRenderer
from nyzhi.front.flags import runtime_options
from nyzhi.prompt_input import decode_part
from nyzhi.signals import exit_code, stop_on_signal

KEYS_HELP = """Ctrl-C cancels a running turn and its subagents' (they can be continued); Ctrl-D quits.
Approvals: y = yes, a = always this session (every agent), n = no."""

APPROVAL_KEYS = {
    "y": ApprovalAnswer.APPROVE, "yes": ApprovalAnswer.APPROVE,
    "a": ApprovalAnswer.ALWAYS, "always": ApprovalAnswer.ALWAYS,
    "n": ApprovalAnswer.DENY, "no": ApprovalAnswer.DENY, "": ApprovalAnswer.DENY,
}
# Said when a line answers an approval with none of its keys (it asks again).
REPROMPT = "please answer y (yes), a (always this session) or n (no): "
# A prompt while a turn runs: the thread and the files belong to that turn until it ends.
NOT_NOW = "[a turn is running; Ctrl-C or /cancel first]\n"
INPUT_ENDED = "(no answer: the input ended)"  # what a question gets once nobody can answer
ANSWERED_ELSEWHERE = "[{kind} answered in another front end]"  # by a viewer (nyz attach)


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


class ChatHost(ScreenlessHost):
    """The chat as the slash commands' ``CommandHost`` (``nyzhi.core.runtime.commands``): output as
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

    def show(self, kind: str, text: str) -> None:
        notice = kind == NOTICE and "\n" not in text and not text.endswith(":")
        self.out.write(f"[{text}]\n" if notice else f"{text}\n")


    def send_main(self, text: str) -> None:
        if self.busy:
            # the thread and the files belong to the running turn until it ends
            self.out.write(NOT_NOW)
            return
        self.started = True
        self.start_turn(text)

    def cancel_turn(self) -> None:
        self.nursery.start_soon(self.rt.cancel)

    def quit(self) -> None:
        self.done = True



def _chat_output() -> tuple[Any, Any]:
    """Where the chat writes, and the activity line (rewritten in place: only on a terminal,
    where it is also the writer; None elsewhere)."""
    if not sys.stdout.isatty():
        return sys.stdout, None
    import shutil

    from nyzhi.core.protocol.activity import Activity
    from nyzhi.linechat.activity_line import StatusLine

    status = StatusLine(sys.stdout, Activity(), width=shutil.get_terminal_size().columns)
    return status, status


class LineChat:
    """One chat's jobs over its runtime, split so each can be read on its own: rendering the
    events (``pump``), running turns and slash commands, answering what they ask, and the loop
    over the input lines (``converse``). ``idle`` is set while no turn runs; it is replaced at
    the start of each turn, so whoever waits on it waits for that turn."""

    def __init__(self, rt: Any, out: Any, status: Any, renderer: ChatRenderer,
                 nursery: trio.Nursery, lines: trio.MemoryReceiveChannel[str | None],
                 piped: bool) -> None:
        self.rt = rt
        self.out = out
        self.status = status
        self.renderer = renderer
        self.pending = renderer.pending
        self.nursery = nursery
        self.lines = lines
        self.piped = piped
        self.idle = trio.Event()
        self.idle.set()
        self.changed = trio.lowlevel.ParkingLot()  # woken by every event and every turn's end
        self.host = ChatHost(rt, out, nursery, self.start_turn)
        self.reading: trio.CancelScope | None = None  # the read of the next line, if waiting
        self.elsewhere: set[str] = set()  # answered by a viewer before it was shown here

    def prompt(self) -> None:
        self.out.write("> ")
        self.out.flush()

    # --- rendering -------------------------------------------------------------------------

    async def pump(self, events: Any) -> None:
        """Each event shown (and fed to the activity line) as it comes."""
        status = self.status
        async for event in events:
            if isinstance(event, ev.ApprovalRequest | ev.UserQuestion) \
                    and event.request_id in self.elsewhere:
                self.elsewhere.discard(event.request_id)
                continue  # a viewer answered it first: nothing to ask here
            if isinstance(event, ev.TurnComplete) and event.agent == ev.MAIN_AGENT:
                self.elsewhere.clear()  # ids of asks answered here already: none comes now
            if status is not None and event.agent == ev.MAIN_AGENT:
                status.activity.feed(event)
            self.renderer.render(event)
            if status is not None:
                status.draw()
            self.out.flush()
            self.changed.unpark_all()

    async def spin(self) -> None:
        """The activity line's clock (a screen clock, not synchronisation)."""
        assert self.status is not None
        while True:
            await trio.sleep(0.125)
            if self.status.activity.active:
                self.status.draw()

    # --- the live socket ---------------------------------------------------------------------

    async def serve(self, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """The session on its live socket for ``nyz attach``, while the chat runs."""
        from nyzhi.core.protocol.live_socket import serve_live

        def notice(line: str) -> None:
            print(f"nyz: {line}", file=sys.stderr, flush=True)

        await serve_live(self.rt, notice=notice, answered=self.answered_elsewhere,
                         task_status=task_status)

    def answered_elsewhere(self, request_id: str) -> None:
        """A viewer answered ``request_id`` first: withdrawn here, said in one line, and the
        read waiting for its answer cancelled (the next line is a prompt again)."""
        request = next((r for r in self.pending if r.request_id == request_id), None)
        if request is None:
            self.elsewhere.add(request_id)  # not rendered yet (or answered here already)
            return
        self.pending.remove(request)
        kind = "question" if isinstance(request, ev.UserQuestion) else "approval"
        self.out.write("\n" + ANSWERED_ELSEWHERE.format(kind=kind) + "\n")
        self.out.flush()
        if self.reading is not None:
            self.reading.cancel()
        self.changed.unpark_all()

    async def read_line(self) -> tuple[bool, str | None]:
        """The next input line (None: the input ended); ``(False, None)`` when the read was
        cancelled because what it would answer was answered elsewhere (no line is lost: a
        memory channel's receive is cancelled cleanly)."""
        with trio.CancelScope() as scope:
            self.reading = scope
            try:
                return True, await self.lines.receive()
            except trio.EndOfChannel:
                return True, None
            finally:
                self.reading = None
        return False, None

    async def reply(self, request: ev.ApprovalRequest | ev.UserQuestion,
                    answer: ApprovalAnswer | str) -> None:
        """Answer ``request``, withdrawn from ``pending`` first so a viewer's later answer is
        not said as the winner here; one a viewer answered meanwhile is only dropped (the
        runtime refuses a second answer)."""
        if request in self.pending:
            self.pending.remove(request)
        with contextlib.suppress(KeyError):
            if isinstance(request, ev.UserQuestion):
                await self.rt.answer_question(request.request_id, str(answer))
            else:
                await self.rt.answer_approval(request.request_id, answer)

    # --- waiting on the running turn --------------------------------------------------------

    async def settle(self) -> None:
        """Until no turn runs or the running one asks something."""
        while not self.idle.is_set() and not self.pending:
            await self.changed.park()

    async def finish(self) -> None:
        """stdin ended: let the running turn end; nobody can answer it any more."""
        while not self.idle.is_set():
            await self.settle()
            while self.pending:
                request = self.pending[0]
                await self.reply(request, INPUT_ENDED if isinstance(request, ev.UserQuestion)
                                 else ApprovalAnswer.DENY)

    # --- turns and commands ----------------------------------------------------------------

    def start_turn(self, text: str) -> None:
        self.idle = trio.Event()  # at once: the next line must see the turn as running
        self.nursery.start_soon(self.run_turn, text, self.idle)

    async def run_turn(self, text: str, done: trio.Event) -> None:
        status = self.status
        if status is not None:
            status.at_line_start = True  # the person's Enter ended the "> " line
            status.activity.start()
            status.draw()
        try:
            try:
                handle = await self.rt.submit(text)
            except ValueError as exc:  # an @image that cannot be sent (ImageError)
                self.out.write(f"[not sent: {exc}]\n")
                return
            await handle.wait()
        finally:
            if status is not None:
                status.activity.stop()
                status.clear()
            done.set()
            self.changed.unpark_all()
            self.prompt()

    async def _command(self, text: str, done: trio.Event) -> None:
        try:
            await dispatch(self.host, text)
        except Exception as exc:  # one failing command must not end the chat
            self.out.write(f"{text.split()[0]} failed: {exc}\n")
        finally:
            done.set()
            self.changed.unpark_all()

    async def run_command(self, text: str) -> bool:
        """Run a slash command. While it runs, the next lines answer only what it asks
        (``/init-deep`` runs commands through the gates, which may ask approval); other lines
        wait their turn, so piped input keeps its order. False: the input ended meanwhile
        (what the command asked is declined)."""
        done = trio.Event()
        self.nursery.start_soon(self._command, text, done)
        ended = False
        while not done.is_set():
            if not self.pending:
                await self.changed.park()
                continue
            request = self.pending[0]
            line: str | None = None
            if not ended:
                read, line = await self.read_line()
                if not read:
                    continue  # answered elsewhere: the next one, if any, is asked
            ended = line is None
            if isinstance(request, ev.UserQuestion):
                await self.reply(request, line.strip() if line else INPUT_ENDED)
                continue
            answer = ApprovalAnswer.DENY if line is None else approval_answer(line)
            if answer is None:
                self.out.write(REPROMPT)
                self.out.flush()
                continue
            await self.reply(request, answer)
        return not ended

    # --- the input lines -------------------------------------------------------------------

    async def answer_pending(self, line: str) -> None:
        """The line answers the oldest question or approval (a question's option by its
        number); an approval answer that means nothing asks again."""
        request = self.pending[0]
        if isinstance(request, ev.UserQuestion):
            text = line.strip()
            if text.isdigit() and 1 <= int(text) <= len(request.options):
                text = request.options[int(text) - 1].get("value", text)
            await self.reply(request, text)
            return
        answer = approval_answer(line)
        if answer is None:
            self.out.write(REPROMPT)
            self.out.flush()
            return
        await self.reply(request, answer)

    async def take_command(self, text: str) -> bool:
        """A slash command typed; False: the chat ends (/quit, or the input ended)."""
        host = self.host
        host.busy, host.started = not self.idle.is_set(), False
        if not await self.run_command(text):  # the input ended while it ran
            if self.piped:
                await self.finish()
            return False
        if host.done:
            return False
        if not host.started:
            self.out.write("> ")
        self.out.flush()
        return True

    async def take_line(self, line: str) -> bool:
        """One line with nothing pending: a prompt for the agent or a slash command. False: the
        chat ends."""
        text = line.strip()
        if not text:
            self.prompt()
            return True
        if text.startswith("/"):
            return await self.take_command(text)
        if not self.idle.is_set():
            self.out.write(NOT_NOW)
        else:
            self.start_turn(self.rt.knowledge.expand(text))
        self.out.flush()
        return True

    async def converse(self) -> None:
        """The loop over the input, until it ends (piped: after the running turn has ended),
        /quit, or the input ends while a command runs."""
        while True:
            read, line = await self.read_line()
            if not read:
                continue  # what it would have answered was answered elsewhere (said)
            if line is None:
                if self.piped:
                    await self.finish()
                return
            if self.piped:
                await self.settle()
            if self.pending:
                await self.answer_pending(line)
            elif not await self.take_line(line):
                return


def _exit_status(stopped_by: int | None, rt: Any, renderer: ChatRenderer) -> int:
    if stopped_by is not None:
        return exit_code(stopped_by)
    fault = rt.save_fault  # the session could not be saved (full or read-only disk)
    if fault is not None:
        if not any(str(fault) in message for message in renderer.errors):
            print(f"nyz: {fault}", file=sys.stderr)  # failed at close: no event said it
        return 1
    return 0


async def chat(args: argparse.Namespace) -> int:
    from nyzhi.core.runtime.runtime import open_runtime

    options = runtime_options(args, interactive=True)
    out, status = _chat_output()
    stopped_by: int | None = None
    async with open_runtime(options) as rt:
        from nyzhi import collector

        collector.resume(freeze=True)  # paused by ``nyz chat`` while it started
        for notice in rt.notices:
            print(notice, file=sys.stderr)
        print(f"nyz · {rt.provider_name}/{rt.model} · session {rt.session_id[:8]} · /help", file=out)
        renderer = ChatRenderer(out)
        piped = not sys.stdin.isatty()
        lines_send, lines = trio.open_memory_channel[str | None](16)
        async with rt.subscribe() as events, trio.open_nursery() as nursery:
            talk = LineChat(rt, out, status, renderer, nursery, lines, piped)
            nursery.start_soon(_read_lines, lines_send)

            async def mid_turn(signum: int) -> bool:
                if signum == signal.SIGINT and not talk.idle.is_set():
                    await rt.cancel()  # Ctrl-C mid-turn: back to the prompt
                    return True
                return False

            async def stop(signum: int) -> None:
                nonlocal stopped_by
                if signum != signal.SIGINT:
                    stopped_by = signum
                    await rt.cancel()
                    await talk.idle.wait()  # the turn has settled: its thread is whole
                nursery.cancel_scope.cancel()

            async def on_signal() -> None:
                await stop_on_signal(stop, interrupts=mid_turn, detach_terminal=True)

            nursery.start_soon(talk.pump, events)
            nursery.start_soon(on_signal)
            await nursery.start(talk.serve)
            if status is not None:
                nursery.start_soon(talk.spin)
            talk.prompt()
            if getattr(args, "first_prompt", None):  # nyz team start --task
                talk.start_turn(rt.knowledge.expand(args.first_prompt))
            await talk.converse()
            nursery.cancel_scope.cancel()
    return _exit_status(stopped_by, rt, renderer)


def main(args: argparse.Namespace) -> int:
    try:
        return trio.run(chat, args)
    except Exception as exc:
        from nyzhi.core.protocol import describe_error

        print(f"nyz: {describe_error(exc)}", file=sys.stderr)
        return 1
