"""``nyz`` with no subcommand: the interactive chat.

Until the urwid console lands this is a plain line-mode chat over the same runtime that
``nyz run`` uses.
"""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("chat", help="interactive line-mode chat (the default command)")
    p.set_defaults(handler=run_chat)


def run_chat(args: argparse.Namespace) -> int:
    from nyzhi.provider import tls

    tls.prewarm()  # the CA bundle loads on another core while the chat is imported
    from nyzhi.cli.line_chat import main

    return main(args)
