"""The headless front end of ``nyz run``: submit one prompt, render events, exit.

Like every front end it only consumes runtime events; it answers no approvals (headless runs
follow the trust mode: what would need a person is denied, unless ``--trust full``). Every
line it prints in ``json`` and ``stream-json`` is an event of ``nyzhi.core.events``, rendered
by ``nyzhi.cli.render``: ``session_start`` first, ``result`` last, and an ``error`` event when
the runtime cannot start.

Exit status: 0 answered; 1 failed, or answered but a fault of the machine lost something (the
session could not be saved: a full or read-only disk; a listener failed), said once on
stderr; 128 + signal when stopped by SIGINT, SIGTERM or SIGHUP (``nyzhi.cli.signals``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any, TextIO

import trio

from nyzhi.cli.render import STARTUP, JsonLines, Progress, ResultOnly
from nyzhi.cli.signals import STOP_SIGNALS, detach_closed_terminal, exit_code
from nyzhi.config.fsutil import StorageError
from nyzhi.core import collector
from nyzhi.core import events as ev
from nyzhi.core.event_bus import LISTENER_FAILED
from nyzhi.core.event_renderer import EventRenderer
from nyzhi.core.flags import runtime_options


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


def _schema_mismatch(schema: dict | None, outcome: Any) -> str | None:
    """Why a finished answer does not match ``--output-schema`` (None: it does, or no schema,
    or the turn failed anyway)."""
    if schema is None or outcome is None or outcome.is_error:
        return None
    from nyzhi.provider.output_schema import OutputSchemaError, check_answer

    try:
        check_answer(outcome.text, schema)
    except OutputSchemaError as exc:
        return f"--output-schema: {exc}"
    return None


def make_printer(fmt: str, quiet: bool) -> EventRenderer:
    out: Any = GuardedOutput(sys.stdout)
    if fmt == "stream-json":
        return JsonLines(out)
    if fmt == "json":
        return ResultOnly(out)
    return Progress(out, sys.stderr, quiet)


async def run_headless(args: argparse.Namespace, prompt: str, fmt: str) -> int:
    from nyzhi.core.runtime import open_runtime

    options = runtime_options(args, interactive=False)
    printer = make_printer(fmt, bool(args.quiet))
    quiet = bool(args.quiet) or fmt != "text"
    stopped_by: int | None = None
    errors: list[str] = []
    faults: list[str] = []  # listener failures (the session log on a full disk): exit 1
    try:
        async with open_runtime(options) as rt:
            collector.resume(freeze=True)  # paused by ``nyz run`` while it started
            printer.render(rt.session_start)
            if not quiet:
                for notice in rt.notices:
                    sys.stderr.write(notice + "\n")
            async with rt.subscribe() as events, trio.open_nursery() as nursery:

                async def pump() -> None:
                    # Every turn ends with the main agent's turn_complete (also on error or
                    # cancellation), so everything up to it has been printed when we stop.
                    async for event in events:
                        if isinstance(event, ev.Error):
                            errors.append(event.message)
                            if event.kind == LISTENER_FAILED:
                                faults.append(event.message)
                        printer.render(event)
                        if isinstance(event, ev.TurnComplete) and event.agent == ev.MAIN_AGENT:
                            return

                async def on_signal() -> None:
                    nonlocal stopped_by
                    with trio.open_signal_receiver(*STOP_SIGNALS) as sigs:
                        async for signum in sigs:
                            stopped_by = signum
                            detach_closed_terminal(signum)
                            await rt.cancel()  # the turn settles; pump sees its end
                            return

                nursery.start_soon(on_signal)
                handle = await rt.submit(  # custom /name args; -i images, @image mentions
                    rt.knowledge.expand(prompt), tuple(getattr(args, "image", None) or ()))
                await pump()
                await handle.wait()
                nursery.cancel_scope.cancel()
            outcome = handle.outcome
            if options.plan and not quiet and rt.knowledge.plan_path.is_file():
                sys.stderr.write(f"plan: {rt.knowledge.plan_path}\n")
            answer = outcome.text if outcome else ""
            schema_error = _schema_mismatch(options.output_schema, outcome)
            session_id, usage = rt.session_id, rt.usage_totals()
        # The session is closed now: a write that failed at the very end is known too.
        fault = rt.save_fault
        late_fault = fault is not None and not any(str(fault) in f for f in faults)
        if late_fault:
            faults.append(str(fault))
        result = ev.Result(
            result=answer, session_id=session_id, usage=usage,
            is_error=bool(
                stopped_by or faults or handle.error or not outcome or outcome.is_error
                or schema_error
            ),
        )
    except Exception as exc:  # configuration, provider, session errors: one clear line
        from nyzhi.core.errors import describe_error

        if (unwritable := output_error(exc)) is not None:
            raise unwritable from None  # ``run_command`` says it
        message = describe_error(exc)
        printer.render(
            ev.Error(message=message, kind=STARTUP,
                     retryable=bool(getattr(exc, "retryable", False)))
        )
        print(f"nyz: {message}", file=sys.stderr)
        return 1
    if schema_error is not None:  # the answer stands, marked as not what was asked for
        printer.render(ev.Error(message=schema_error, kind="output_schema"))
        if fmt == "json" or args.quiet:
            print(f"nyz: {schema_error}", file=sys.stderr)
    printer.render(result)
    if getattr(args, "output", None):
        await trio.Path(args.output).write_text(result.result, encoding="utf-8")
    if stopped_by is not None:
        return exit_code(stopped_by)
    if result.is_error:
        # Said once: text mode already showed each error live, unless quiet; stream-json has
        # them on stdout; json shows only the result, so faults go to stderr.
        shown = fmt == "stream-json" or (fmt == "text" and not args.quiet)
        if not shown:
            unsaid = faults if fmt == "json" else faults or errors[-1:]
            for message in unsaid:
                print(f"nyz: {message}", file=sys.stderr)
        elif late_fault:
            print(f"nyz: {fault}", file=sys.stderr)  # failed at close: no event carried it
        return 1
    return 0
