"""The headless front end of ``nyz run`` and ``nyz team start --headless``: submit, render
events, build the ``result``, exit (``HeadlessRun``; the team's drive is in ``team``).

Like every front end it only consumes runtime events; it answers no approvals (headless runs
follow the trust mode: what would need a person is denied, unless ``--trust full``, or a
person is attached with ``nyz attach``: then they are asked, on the session's live socket). Every
line it prints in ``json`` and ``stream-json`` is an event of ``nyzhi.core.events``, rendered
by ``nyzhi.headless.render``: ``session_start`` first, ``result`` last, and an ``error`` event when
the runtime cannot start.

Exit status: 0 answered; 1 failed, or answered but a fault of the machine lost something (the
session could not be saved: a full or read-only disk; a listener failed), said once on
stderr; 128 + signal when stopped by SIGINT, SIGTERM or SIGHUP (``nyzhi.signals``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import Any, TextIO

import trio

from nyzhi import collector
from nyzhi.core.protocol import events as ev
from nyzhi.core.protocol.renderer import EventRenderer
from nyzhi.front.flags import runtime_options
from nyzhi.headless.render import STARTUP, JsonLines, Progress, ResultOnly
from nyzhi.headless.run_result import Failure, ResultSubtype, turn_failure
from nyzhi.oserror import StorageError
from nyzhi.signals import exit_code, stop_on_signal


class OutputError(StorageError):
    """stdout could not be written (a full disk under ``nyz run > file``, a closed pipe)."""


class GuardedOutput:
    """stdout for the printers: a failed write becomes one ``OutputError`` that says so, not a
    traceback from deep in a renderer."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def _guard(self, action: Callable[[], Any]) -> Any:
        try:
            return action()
        except OSError as exc:
            raise OutputError.wrap(exc, "write the output to", "stdout") from exc

    def write(self, text: str) -> int:
        return self._guard(lambda: self._stream.write(text))

    def flush(self) -> None:
        self._guard(self._stream.flush)

    def isatty(self) -> bool:
        return self._stream.isatty()


def output_error(exc: BaseException) -> OutputError | None:
    """The ``OutputError`` in ``exc`` (or in the exception group it is), if any."""
    if isinstance(exc, OutputError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            if (found := output_error(inner)) is not None:
                return found
    return None


def make_printer(fmt: str, quiet: bool) -> EventRenderer:
    out: Any = GuardedOutput(sys.stdout)
    if fmt == "stream-json":
        return JsonLines(out)
    if fmt == "json":
        return ResultOnly(out)
    return Progress(out, sys.stderr, quiet)


class HeadlessRun:
    """One headless run, for ``nyz run`` and ``nyz team start --headless`` alike: it opens the
    runtime, prints every event through the printer, stops on a signal, and builds and prints
    the ``result``. What differs is the ``drive``: what is submitted and when the run is done.

    ``until``: the event after which nothing more is printed (``nyz run``: the main agent's
    ``turn_complete``); None prints everything that arrived until the drive returned.
    ``fails_on``: error events that fail the run although the main turn answered (a teammate's
    failed turn).

    The drive sets ``handle`` (the main agent's turn the result is about) and, for a failure
    of its own, ``failure``; the ``result`` says why the run failed (``subtype``, ``error``)
    and what the whole tree used (``nyzhi.headless.usage``)."""

    def __init__(self, args: argparse.Namespace, fmt: str, *,
                 until: Callable[[ev.AnyEvent], bool] | None = None,
                 fails_on: Callable[[ev.Error], bool] | None = None) -> None:
        self.args = args
        self.fmt = fmt
        self.quiet_flag = bool(getattr(args, "quiet", False))
        self.printer = make_printer(fmt, self.quiet_flag)
        self.quiet = self.quiet_flag or fmt != "text"  # no notices on stderr
        self.until = until
        self.fails_on = fails_on
        self.stopped_by: int | None = None
        self.errors: list[ev.Error] = []
        self.faults: list[str] = []  # listener failures (the session log on a full disk): exit 1
        self.last_answer = ""  # the main agent's last answer
        self.late_fault = False  # the session failed to save at close (no event said so)
        self.handle: Any = None  # the main agent's turn (a TurnHandle), set by the drive
        self.failure: Failure | None = None  # set by the drive

    def see(self, event: ev.AnyEvent) -> None:
        if isinstance(event, ev.Error):
            self.errors.append(event)
            if event.kind == ev.LISTENER_FAILED:
                self.faults.append(event.message)
        if isinstance(event, ev.TurnComplete) and event.agent == ev.MAIN_AGENT:
            self.last_answer = event.text or self.last_answer
        self.printer.render(event)

    async def _pump(self, events: trio.MemoryReceiveChannel[ev.Event], done: trio.Event) -> None:
        async for event in events:
            self.see(event)
            if self.until is not None and self.until(event):
                break
        done.set()

    async def _on_signal(self, rt: Any, drive: trio.CancelScope) -> None:
        async def stop(signum: int) -> None:
            self.stopped_by = signum
            await rt.cancel()  # the main turn settles; its turn_complete is printed
            drive.cancel()  # a team's wait for quiet ends here

        await stop_on_signal(stop, detach_terminal=True)

    async def run(self, drive: Callable[[Any], Awaitable[None]]) -> int:
        """Open the runtime, ``drive(rt)``, print the result; the exit status."""
        from nyzhi.core.protocol import Session
        from nyzhi.core.runtime.runtime import open_runtime
        from nyzhi.headless.usage import track_usage

        options = runtime_options(self.args, interactive=False)
        opened = False
        try:
            async with open_runtime(options) as rt:
                opened = True
                collector.resume(freeze=True)  # paused by ``nyz run`` while it started
                ledger = track_usage(rt)  # before the first turn: the tree's usage
                self._announce(rt)
                async with rt.subscribe() as events:
                    await self._drive(rt, events, drive)
                self._check_schema()
                if options.plan and not self.quiet and rt.knowledge.plan_path.is_file():
                    sys.stderr.write(f"plan: {rt.knowledge.plan_path}\n")
                session_id = rt.session_id
                session = Session(rt)
            # The session is closed now: a write that failed at the very end is known too.
            fault = rt.save_fault
            self.late_fault = fault is not None and not any(str(fault) in f for f in self.faults)
            if self.late_fault:
                self.faults.append(str(fault))
            failure = self._failure()
            usage = ledger.totals()
            result = ev.Result(
                result=self.last_answer, session_id=session_id, usage=usage,
                is_error=failure is not None,
                subtype=failure.subtype if failure else ResultSubtype.SUCCESS,
                error=failure.message if failure else "", cost_usd=usage["cost_usd"],
                usage_by_agent=ledger.by_agent(),
                # every background process, each killed by now if it was still running
                background=tuple({k: d[k] for k in ("id", "command", "state")}
                                 for d in session.background_processes()),
            )
        except Exception as exc:  # configuration, provider, session errors: one clear line
            return self._failed(exc, opened)
        return await self._finish(result, fault)

    def _announce(self, rt: Any) -> None:
        """The session's start on the stream, and what the runtime has to say on stderr."""
        self.printer.render(rt.session_start)
        if self.fmt == "stream-json" and rt.untrusted_notice:
            # the project's hooks were skipped: said on the stream too, not only on stderr
            # (printed, not recorded: nyz replay leaves it out, as the result)
            self.printer.render(ev.Notice(message=rt.untrusted_notice, kind="untrusted_project"))
        if not self.quiet:
            for notice in rt.notices:
                sys.stderr.write(notice + "\n")

    def _failed(self, exc: Exception, opened: bool) -> int:
        """A run that could not start or go on (configuration, provider, session): one
        error event, a failed result and one line on stderr; exit status 1. An unwritable
        output is raised instead, for ``run_and_exit`` to say."""
        from nyzhi.core.protocol import describe_error
        from nyzhi.headless.usage import UsageLedger

        if (unwritable := output_error(exc)) is not None:
            raise unwritable from None
        message = describe_error(exc)
        self.printer.render(ev.Error(message=message, kind=STARTUP,
                                     retryable=bool(getattr(exc, "retryable", False))))
        subtype = ResultSubtype.ERROR if opened else ResultSubtype.STARTUP_ERROR
        self.printer.render(ev.Result(result="", is_error=True, subtype=subtype,
                                      error=message, usage=UsageLedger().totals()))
        print(f"nyz: {message}", file=sys.stderr)
        return 1

    def _check_schema(self) -> None:
        """``nyz run --output-schema``: an answer that does not match the schema stands, marked
        as not what was asked for (an ``output_schema`` error, then a failed result)."""
        from nyzhi.core.protocol.session import answer_mismatch

        outcome = self.handle.outcome if self.handle is not None else None
        mismatch = answer_mismatch(getattr(self.args, "output_schema", None), outcome)
        if mismatch is None:
            return
        self.failure = self.failure or Failure(ResultSubtype.OUTPUT_SCHEMA, mismatch)
        self.see(ev.Error(message=mismatch, kind="output_schema"))
        if self.fmt == "json":  # json prints only the result: say why on stderr
            print(f"nyz: {mismatch}", file=sys.stderr)

    def _failure(self) -> Failure | None:
        """Why the run failed, first reason first; None: it succeeded."""
        if self.stopped_by is not None:
            name = signal.Signals(self.stopped_by).name
            return Failure(ResultSubtype.CANCELLED, f"stopped by {name}")
        if self.failure is not None:
            return self.failure
        if self.handle is not None and (failed := turn_failure(self.handle, self.errors)):
            return failed
        for error in self.errors:
            if self.fails_on is not None and self.fails_on(error):
                subtype = (ResultSubtype.TEAMMATE_ERROR if error.agent.startswith(ev.TEAM_ROOT)
                           else ResultSubtype.ERROR)
                return Failure(subtype, f"{error.agent}: {error.message}")
        if self.faults:
            return Failure(ResultSubtype.SAVE_ERROR, self.faults[0])
        return None

    async def _drive(self, rt: Any, events: trio.MemoryReceiveChannel[ev.Event],
                     drive: Callable[[Any], Awaitable[None]]) -> None:
        from nyzhi.core.protocol import Session

        pumped = trio.Event()
        async with trio.open_nursery() as nursery:
            with trio.CancelScope() as scope:
                nursery.start_soon(self._on_signal, rt, scope)
                nursery.start_soon(self._pump, events, pumped)
                await nursery.start(self._serve_live, rt)
                if isinstance(self.printer, Progress) and self.printer.spins():
                    nursery.start_soon(self._spin, self.printer)
                await drive(rt)
            # What the run started in the background ends with it (its process_exit shown).
            await Session(rt).stop_background()
            if self.until is not None:
                await pumped.wait()  # up to the end the printer waits for (always emitted)
            nursery.cancel_scope.cancel()  # the pump stops between two events
        # What was already queued when the drive returned (past the printer's last event:
        # only the exits of the background processes the run's end killed).
        while True:
            try:
                event = events.receive_nowait()
            except trio.WouldBlock:
                break
            if self.until is None or isinstance(event, ev.ProcessExit):
                self.see(event)

    async def _serve_live(self, rt: Any, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """The session on its live socket for ``nyz attach`` while it runs; an attached
        viewer may answer what would otherwise be refused (``serve_live(attend=True)``)."""
        from nyzhi.core.protocol.live_socket import serve_live

        def notice(line: str) -> None:
            if not self.quiet_flag:
                sys.stderr.write(f"nyz: {line}\n")

        await serve_live(rt, attend=True, notice=notice, task_status=task_status)

    @staticmethod
    async def _spin(printer: Progress) -> None:
        """The spinner's clock: a frame every 1/8 s while the model is waited on."""
        while True:
            await trio.sleep(0.125)
            printer.spin()

    async def _finish(self, result: ev.Result, fault: OSError | None) -> int:
        self.printer.render(result)
        if getattr(self.args, "output", None):
            await trio.Path(self.args.output).write_text(result.result, encoding="utf-8")
        if self.stopped_by is not None:
            return exit_code(self.stopped_by)
        if not result.is_error:
            return 0
        # Said once: text mode already showed each error live, unless quiet; stream-json has
        # them on stdout; json shows only the result, so faults go to stderr.
        shown = self.fmt == "stream-json" or (self.fmt == "text" and not self.quiet_flag)
        if not shown:
            unsaid = self.faults if self.fmt == "json" else (
                self.faults or [e.message for e in self.errors[-1:]])
            for message in unsaid:
                print(f"nyz: {message}", file=sys.stderr)
        elif self.late_fault:
            print(f"nyz: {fault}", file=sys.stderr)  # failed at close: no event carried it
        return 1


async def run_headless(args: argparse.Namespace, prompt: str, fmt: str) -> int:
    """``nyz run``: one prompt; done when the main agent's turn is."""

    def main_turn_ended(event: ev.AnyEvent) -> bool:
        # Every turn ends with the main agent's turn_complete (also on error or cancellation).
        return isinstance(event, ev.TurnComplete) and event.agent == ev.MAIN_AGENT

    async def drive(rt: Any) -> None:
        from nyzhi.core.protocol.commands import headless_prompt

        run.handle = await rt.submit(  # custom /name args; -i images, @image mentions
            headless_prompt(prompt, rt.knowledge), tuple(getattr(args, "image", None) or ()))
        await run.handle.wait()

    run = HeadlessRun(args, fmt, until=main_turn_ended)
    return await run.run(drive)


def run_and_exit(runner: Callable[..., Awaitable[int]], *args: Any) -> int:
    """``trio.run(runner, *args)`` and exit at once with its status (``exit_now``); stdout
    that cannot be written is said once on stderr (exit 1)."""
    try:
        code = trio.run(runner, *args)
    except OutputError as exc:  # the session is saved; only what we print is lost
        print(f"nyz: {exc}", file=sys.stderr)
        discard_stdout()
        code = 1
    exit_now(code)
    return code  # only when the output could not be flushed


def discard_stdout() -> None:
    """stdout cannot be written: drop what is buffered for it (point it at /dev/null), so the
    exit does not fail a second time on the same output."""
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)


def exit_now(code: int) -> None:
    """End the process at once after a run that returned normally.

    The interpreter's own teardown (freeing every module and object, collecting garbage) takes
    tens of milliseconds after the answer is already printed, and nothing in it matters here:
    the runtime, its session files and child processes were closed inside ``trio.run``. So
    flush what we wrote, close logging's handlers as atexit would, and ``os._exit``. If the
    output cannot be flushed (a closed pipe), return and let the normal exit report it.
    """
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    if "logging" in sys.modules:
        sys.modules["logging"].shutdown()
    from nyzhi import codecache

    codecache.save()  # the classes this run compiled first, for the next start
    os._exit(code)
