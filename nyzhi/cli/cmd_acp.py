"""``nyz acp``: serve an editor over the Agent Client Protocol on stdin/stdout.

Zed, the JetBrains IDEs, Neovim and Emacs start ``nyz acp`` and speak ACP to it
(``nyzhi.acp``; docs/editors.md). The global provider, model and trust flags give every session's
defaults (``nyz -m MODEL acp``).
"""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    from nyzhi.cli.main import _trust

    p = sub.add_parser("acp", help="serve an editor (Zed, JetBrains, Neovim, Emacs) over the "
                                   "Agent Client Protocol on stdin/stdout")
    # The global flags that mean something to every session, repeatable after ``acp`` (an
    # editor's config usually lists them there); the editor picks sessions itself.
    quiet = {"default": argparse.SUPPRESS}
    p.add_argument("-p", "--provider", help="provider name for every session", **quiet)
    p.add_argument("-m", "--model", help="model id for every session", **quiet)
    p.add_argument("-y", "--trust", type=_trust, help="trust mode sessions start in", **quiet)
    p.set_defaults(handler=run_acp)


def run_acp(args: argparse.Namespace) -> int:
    import trio

    from nyzhi.acp.agent import serve_stdio

    defaults = {key: value for key in ("provider", "model", "trust")
                if (value := getattr(args, key, None)) is not None}
    try:
        return trio.run(serve_stdio, defaults)
    except KeyboardInterrupt:
        return 130
