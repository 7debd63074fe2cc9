"""The headless front end of ``nyz run``: submit one prompt, print events, exit.

Like every front end it only consumes runtime events; it answers no approvals (headless runs
follow the trust mode: what would need a person is denied, unless ``--trust full``).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from typing import Any, TextIO

import trio

from nyzhi.core import events as ev


class Printer:
    def __init__(self, fmt: str, quiet: bool, out: TextIO, err: TextIO) -> None:
        self.fmt = fmt
        self.quiet = quiet
        self.out = out
        self.err = err
        self._mid_line = False

    def line(self, obj: dict[str, Any]) -> None:
        self.out.write(json.dumps(obj, ensure_ascii=False) + "\n")
        self.out.flush()

    def progress(self, text: str) -> None:
        if not self.quiet:
            self.err.write(text)
            self.err.flush()

    def event(self, event: Any) -> None:
        if self.fmt == "stream-json":
            if event.type != "session_start":
                self.line(ev.to_json(event))
            return
        if self.fmt == "json":
            return
        kind = event.type
        if kind == "text_delta":
            # The answer itself goes to stdout at the end; echo it live on stderr only when
            # stdout is not the same terminal (it would be printed twice).
            if self.out.isatty():
                return
            self.progress(event.text)
            self._mid_line = not event.text.endswith("\n")
        elif kind == "tool_start":
            self._newline()
            self.progress(f"[tool: {event.name}]\n")
        elif kind == "tool_done":
            preview = (event.output or "").strip().replace("\n", " ")[:200]
            status = "failed" if event.is_error else "done"
            self.progress(f"{event.name} {status}: {preview}\n")
        elif kind == "retry":
            self._newline()
            self.progress(f"[retry {event.attempt}/{event.max}] waiting {event.wait_ms}ms: {event.reason}\n")
        elif kind == "compaction":
            self._newline()
            self.progress(f"[compacted context: {event.before_tokens} -> {event.after_tokens} tokens]\n")
        elif kind == "error":
            self._newline()
            self.progress(f"error: {event.message}\n")

    def _newline(self) -> None:
        if self._mid_line:
            self.progress("\n")
            self._mid_line = False


async def run_headless(args: argparse.Namespace, prompt: str, fmt: str) -> int:
    from nyzhi.cli.options import runtime_options
    from nyzhi.core.runtime import open_runtime

    options = runtime_options(args, interactive=False)
    printer = Printer(fmt, args.quiet or fmt != "text", sys.stdout, sys.stderr)
    if fmt == "text" and args.quiet:
        printer.quiet = True
    interrupted = False
    errors: list[str] = []
    try:
        async with open_runtime(options) as rt:
            if fmt == "stream-json":
                printer.line(ev.to_json(rt.session_start))
            for notice in rt.notices:
                printer.progress(notice + "\n")
            async with rt.subscribe() as events, trio.open_nursery() as nursery:

                async def pump() -> None:
                    # Every turn ends with the main agent's turn_complete (also on error or
                    # cancellation), so everything up to it has been printed when we stop.
                    async for event in events:
                        if event.type == "error":
                            errors.append(event.message)
                        printer.event(event)
                        if event.type == "turn_complete" and event.agent == "/agents/main":
                            return

                async def on_sigint() -> None:
                    nonlocal interrupted
                    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as sigs:
                        async for _ in sigs:
                            interrupted = True
                            await rt.cancel()
                            return

                nursery.start_soon(on_sigint)
                handle = await rt.submit(prompt)
                await pump()
                await handle.wait()
                nursery.cancel_scope.cancel()
            outcome = handle.outcome
            text = outcome.text if outcome else ""
            is_error = bool(interrupted or handle.error or not outcome or outcome.is_error)
            result = {
                "type": "result",
                "result": text,
                "session_id": rt.session_id,
                "usage": rt.usage_totals(),
                "is_error": is_error,
            }
    except Exception as exc:  # configuration, provider, session errors: one clear line
        from nyzhi.core.errors import describe_error

        message = describe_error(exc)
        if fmt == "stream-json":
            printer.line({"type": "error", "message": message})
        print(f"nyz: {message}", file=sys.stderr)
        return 1
    if fmt == "text":
        printer._newline()
        if text:
            sys.stdout.write(text if text.endswith("\n") else text + "\n")
    else:
        printer.line(result)
    if getattr(args, "output", None):
        await trio.Path(args.output).write_text(text, encoding="utf-8")
    if interrupted:
        return 130
    if is_error:
        if errors and fmt == "text":
            print(f"nyz: {errors[-1]}", file=sys.stderr)
        return 1
    return 0
