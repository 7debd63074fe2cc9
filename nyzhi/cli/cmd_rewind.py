"""``nyz rewind SESSION [--to N] [--code|--conversation|--both] [--force]``: a saved
session's checkpoints, headless.

Without ``--to`` it lists the prompts (and named checkpoints) to go back to. ``--to N`` puts
back the state as it was just before prompt N (counting from 1), as Claude Code's rewind
does: the files the agents changed since (``--code``), the conversation (``--conversation``,
so ``nyz --session ID`` continues from there), or both (the default). Files changed outside
nyz since it last wrote them, and protected configuration (``.git``, ``.nyzhi``, ...), are
named and left alone unless ``--force``; a path that leads through a symlink now is refused
even so. The files a restore overwrites are kept first as a checkpoint of their own. The work is
``nyzhi.core.runtime.checkpoints.actions.rewind_saved``; stdlib imports only at module level.
"""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "rewind", help="restore a session's files and/or conversation to before a prompt",
        description="List a saved session's prompts, or restore the state just before one "
                    "(--to N, counting from 1): its files, its conversation, or both.")
    p.add_argument("query", metavar="SESSION", help="id, id prefix or title")
    p.add_argument("--to", metavar="N",
                   help="the prompt to go back to (1 = the first), or a checkpoint's name")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--code", dest="mode", action="store_const", const="code",
                      help="only the files")
    what.add_argument("--conversation", dest="mode", action="store_const",
                      const="conversation", help="only the conversation")
    what.add_argument("--both", dest="mode", action="store_const", const="both",
                      help="files and conversation (the default)")
    p.add_argument("--force", action="store_true",
                   help="overwrite files changed outside nyz since it last wrote them, and "
                        "restore protected configuration (.git, .nyzhi, .claude, .mcp.json) "
                        "nyz changed; a path leading through a symlink is refused even so")
    p.set_defaults(handler=run_rewind, mode="both")


def run_rewind(args: argparse.Namespace) -> int:
    from nyzhi.core.runtime.checkpoints import CheckpointError
    from nyzhi.core.runtime.checkpoints.actions import rewind_saved
    from nyzhi.core.runtime.sessions import SessionError
    from nyzhi.tools.paths import ToolPathError

    try:
        lines = rewind_saved(args.query, args.to, args.mode, force=args.force)
    except (CheckpointError, SessionError, ToolPathError, OSError) as exc:
        print(f"nyz: {exc}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0
