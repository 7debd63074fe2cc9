"""``nyz deepinit``: explore the project with explorer subagents and write AGENTS.md
(``nyzhi.core.runtime.deepinit``). The diff is printed first (stdout); an existing AGENTS.md is only
replaced with ``--force``. The found commands run through the verify tool's gates: approve
them for this run with ``--run-checks`` (or a trust mode that approves ``verify``)."""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:
    from nyzhi.cli.main import add_global_flags

    p = sub.add_parser(
        "deepinit", help="explore the project with subagents and write AGENTS.md",
        description="Explore the project with explorer subagents and write AGENTS.md: the "
                    "build, test and lint commands (each run, sandboxed, and kept only if it "
                    "passed), the layout and the conventions. Prints the diff first; an "
                    "existing AGENTS.md is replaced only with --force.")
    p.add_argument("--force", action="store_true", help="replace an existing AGENTS.md")
    p.add_argument("--run-checks", action="store_true",
                   help="approve running the found commands (sandboxed) to verify them; "
                        "without it they run only if the trust mode approves `verify`")
    add_global_flags(p, suppress=True)
    p.set_defaults(handler=run_deepinit)


def run_deepinit(args: argparse.Namespace) -> int:
    import trio

    return trio.run(_deepinit, args)


async def _deepinit(args: argparse.Namespace) -> int:

    from nyzhi.core.protocol import Session, describe_error
    from nyzhi.core.runtime.deepinit import deep_init
    from nyzhi.core.runtime.runtime import open_runtime
    from nyzhi.front.flags import runtime_options

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    try:
        async with open_runtime(runtime_options(args, interactive=False)) as rt:
            for notice in rt.notices:
                progress(notice)
            session = Session(rt)
            if args.run_checks:
                session.allow_always("verify")
            root = session.workspace_root
            result = await deep_init(rt, root, force=args.force, progress=progress)
    except Exception as exc:  # configuration, provider, storage: one line
        print(f"nyz: {describe_error(exc)}", file=sys.stderr)
        return 1
    sys.stdout.write("\n".join(result.diff) + "\n" if result.diff else "")
    if result.existed and not result.written:
        print(f"nyz: {result.path} exists and was not replaced (the diff above is what "
              "deepinit would write): run with --force to replace it", file=sys.stderr)
        return 1
    progress(f"wrote {result.path}" if result.diff else f"{result.path} is up to date")
    return 0
