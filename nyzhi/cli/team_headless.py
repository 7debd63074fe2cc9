"""``nyz team start --headless``: the lead's task, then wait until the team is done.

Like ``nyz run`` (the same printers and output formats), except that the run does not end with
the lead's first answer: it ends when the lead's turn has completed, every teammate is idle
and no inbox holds an unread message (``TeamRuntime.wait_quiet``). The lead may take more
turns meanwhile (a teammate's message wakes it). Every teammate's events are in the stream,
tagged with its path (``/team/<team>/<member>``).

Exit status: 0 done; 1 on an error (a turn of the lead or of a teammate failed, a teammate's
process failed past its restarts, the runtime could not start); 128 + signal when stopped by
a signal.
"""

from __future__ import annotations

import argparse
import sys

import trio
import trio.lowlevel

from nyzhi.cli.headless import make_printer
from nyzhi.cli.render import STARTUP
from nyzhi.cli.signals import STOP_SIGNALS, exit_code
from nyzhi.core import events as ev
from nyzhi.core.flags import runtime_options


async def run_team_headless(args: argparse.Namespace, task: str, fmt: str) -> int:
    from nyzhi.core.runtime import open_runtime
    from nyzhi.core.teams.control import TeamRuntimeError

    options = runtime_options(args, interactive=False)
    printer = make_printer(fmt, bool(getattr(args, "quiet", False)))
    stopped_by: int | None = None
    errors: list[str] = []
    last_answer = ""
    failed = False
    teammate_failed: list[str] = []
    try:
        async with open_runtime(options) as rt:
            printer.render(rt.session_start)
            async with rt.subscribe() as events, trio.open_nursery() as nursery:

                async def pump() -> None:
                    nonlocal last_answer
                    async for event in events:
                        if isinstance(event, ev.Error) and (
                                event.agent == ev.MAIN_AGENT or event.kind == "turn"):
                            errors.append(event.message)  # the lead's, or a failed turn's
                            if event.kind == "turn":
                                teammate_failed.append(f"{event.agent}: {event.message}")
                        if isinstance(event, ev.TurnComplete) and event.agent == ev.MAIN_AGENT:
                            last_answer = event.text or last_answer
                        printer.render(event)

                async def on_signal() -> None:
                    nonlocal stopped_by
                    with trio.open_signal_receiver(*STOP_SIGNALS) as sigs:
                        async for signum in sigs:
                            stopped_by = signum
                            await rt.cancel()
                            nursery.cancel_scope.cancel()
                            return

                nursery.start_soon(pump)
                nursery.start_soon(on_signal)
                if task.strip():
                    handle = await rt.submit(rt.knowledge.expand(task))
                    await handle.wait()
                    failed = bool(handle.error or (handle.outcome and handle.outcome.is_error))
                if not failed:
                    try:
                        await rt.teams.wait_quiet(options.team)
                    except TeamRuntimeError as exc:
                        errors.append(str(exc))
                        failed = True
                while events.statistics().current_buffer_used:
                    await trio.lowlevel.checkpoint()  # let the printer drain what is already queued
                nursery.cancel_scope.cancel()
            session_id, usage = rt.session_id, rt.usage_totals()
        failed = failed or bool(teammate_failed)
    except Exception as exc:
        from nyzhi.core.errors import describe_error

        message = describe_error(exc)
        printer.render(ev.Error(message=message, kind=STARTUP))
        print(f"nyz: {message}", file=sys.stderr)
        return 1
    result = ev.Result(result=last_answer, session_id=session_id, usage=usage,
                       is_error=bool(stopped_by or failed))
    printer.render(result)
    if stopped_by is not None:
        return exit_code(stopped_by)
    if failed:
        if fmt == "json" and errors:
            print(f"nyz: {errors[-1]}", file=sys.stderr)
        return 1
    return 0
