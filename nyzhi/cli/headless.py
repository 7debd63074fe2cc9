"""The headless front end of ``nyz run``: submit one prompt, render events, exit.

Like every front end it only consumes runtime events; it answers no approvals (headless runs
follow the trust mode: what would need a person is denied, unless ``--trust full``). Every
line it prints in ``json`` and ``stream-json`` is an event of ``nyzhi.core.events``, rendered
by ``nyzhi.cli.render``: ``session_start`` first, ``result`` last, and an ``error`` event when
the runtime cannot start.
"""

from __future__ import annotations

import argparse
import signal
import sys

import trio

from nyzhi.cli.options import runtime_options
from nyzhi.cli.render import STARTUP, JsonLines, Progress, ResultOnly
from nyzhi.core import events as ev
from nyzhi.core.event_renderer import EventRenderer


def make_printer(fmt: str, quiet: bool) -> EventRenderer:
    if fmt == "stream-json":
        return JsonLines(sys.stdout)
    if fmt == "json":
        return ResultOnly(sys.stdout)
    return Progress(sys.stdout, sys.stderr, quiet)


async def run_headless(args: argparse.Namespace, prompt: str, fmt: str) -> int:
    from nyzhi.core.runtime import open_runtime

    options = runtime_options(args, interactive=False)
    printer = make_printer(fmt, bool(args.quiet))
    quiet = bool(args.quiet) or fmt != "text"
    interrupted = False
    errors: list[str] = []
    try:
        async with open_runtime(options) as rt:
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
                        printer.render(event)
                        if isinstance(event, ev.TurnComplete) and event.agent == ev.MAIN_AGENT:
                            return

                async def on_sigint() -> None:
                    nonlocal interrupted
                    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as sigs:
                        async for _ in sigs:
                            interrupted = True
                            await rt.cancel()
                            return

                nursery.start_soon(on_sigint)
                handle = await rt.submit(rt.knowledge.expand(prompt))  # custom /name args
                await pump()
                await handle.wait()
                nursery.cancel_scope.cancel()
            outcome = handle.outcome
            if options.plan and not quiet and rt.knowledge.plan_path.is_file():
                sys.stderr.write(f"plan: {rt.knowledge.plan_path}\n")
            result = ev.Result(
                result=outcome.text if outcome else "",
                session_id=rt.session_id,
                usage=rt.usage_totals(),
                is_error=bool(interrupted or handle.error or not outcome or outcome.is_error),
            )
    except Exception as exc:  # configuration, provider, session errors: one clear line
        from nyzhi.core.errors import describe_error

        message = describe_error(exc)
        printer.render(
            ev.Error(message=message, kind=STARTUP,
                     retryable=bool(getattr(exc, "retryable", False)))
        )
        print(f"nyz: {message}", file=sys.stderr)
        return 1
    printer.render(result)
    if getattr(args, "output", None):
        await trio.Path(args.output).write_text(result.result, encoding="utf-8")
    if interrupted:
        return 130
    if result.is_error:
        if errors and fmt == "text":
            print(f"nyz: {errors[-1]}", file=sys.stderr)
        return 1
    return 0
