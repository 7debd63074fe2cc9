"""``nyz attach [SESSION]``: the console's view of a live session started elsewhere (a long
``nyz run`` in CI or tmux, a console, a ``nyz serve`` session), over its live socket
(``nyzhi.core.protocol.live_socket``; the view is ``nyzhi.tui.attached``).

Module-level imports are stdlib only, so ``nyz --help`` stays fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "attach", help="open the console on a live session started elsewhere",
        description="Attach to a live session (nyz run, the console, nyz serve) of this user: "
                    "its stream so far, then live events; answer its approvals and send it "
                    "turns. Ctrl-C detaches; the session goes on. `nyz sessions` marks the "
                    "live ones.")
    p.add_argument("session", nargs="?", metavar="SESSION",
                   help="a session id or unique id prefix (default: the newest live session "
                        "of this workspace)")
    p.set_defaults(handler=run_attach)


def run_attach(args: argparse.Namespace) -> int:
    from nyzhi.core.protocol.live_socket import find_live

    try:
        session_id, path = find_live(args.session, Path.cwd())
    except OSError as exc:  # LiveError, or the live directory cannot be used
        print(f"nyz: {exc}", file=sys.stderr)
        return 1
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        print("nyz: nyz attach needs a terminal", file=sys.stderr)
        return 1
    from nyzhi.tui.attached import main

    return main(path, session_id, no_color=bool(os.environ.get("NO_COLOR")))
