"""``nyz`` with no subcommand: the console on a terminal, the line chat otherwise.

The console (``nyzhi.tui``, urwid) needs a terminal on both stdin and stdout; ``nyz chat
--plain``, a pipe or a redirect gets the line-mode chat over the same runtime.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("chat", help="interactive chat (the default command): the console on a "
                                     "terminal, line mode otherwise")
    p.add_argument("--plain", action="store_true",
                   help="line-mode chat even on a terminal (no full-screen console)")
    p.set_defaults(handler=run_chat)


def wants_console(args: argparse.Namespace) -> bool:
    return not getattr(args, "plain", False) and sys.stdin.isatty() and sys.stdout.isatty()


async def serve_on_web(rt: Any, nursery: Any, say: Any) -> Any:
    """The console's ``/web``: its runtime served in process (``nyzhi.web.embed``), imported
    only when asked for. Given from here, the top: the console imports no other front end."""
    from nyzhi.web.embed import serve_runtime

    return await serve_runtime(rt, nursery, say)


def run_chat(args: argparse.Namespace) -> int:
    from nyzhi import collector

    # Off until the runtime is open (the console and the line chat resume it then), as for
    # ``nyz run``: start-up makes next to no cyclic garbage, and its collections cost ~40 ms.
    collector.pause()
    try:
        if wants_console(args):
            from nyzhi.tui.launch import main as console_main  # draws, then imports urwid

            return console_main(args, web=serve_on_web)
        from nyzhi.provider import tls

        tls.prewarm()  # the CA bundle loads on another core while the chat is imported
        from nyzhi.linechat.chat import main

        return main(args)
    finally:
        collector.resume()  # when the runtime never opened
