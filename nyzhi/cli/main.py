"""Entry point of ``nyz``: global flags, subcommand registration, exit codes.

Subcommand modules register themselves through ``register(subparsers)`` and set
``handler`` on their parser to a function ``(args) -> int``. Handlers import what they
need lazily. Exit codes: 0 success, 1 error (message on stderr), 2 usage error (argparse),
130 interrupted.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from nyzhi import __version__
from nyzhi.config.modes import TrustMode, parse_trust, spelled
from nyzhi.core import collector

# httpx imports its own command-line client at import time (click, rich and pygments, when they
# are installed, as they are next to mcp: ~20 ms of every start-up) inside ``try/except
# ImportError``. nyz never uses it; a None entry makes that import fail at once, and httpx falls
# back to its stub. This module is the nyz entry point; programs embedding nyzhi do not import it.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

# Each module adds its subcommands. Keep module-level imports in them light.
COMMAND_MODULES: tuple[str, ...] = (
    "nyzhi.cli.cmd_chat",
    "nyzhi.cli.cmd_run",
    "nyzhi.cli.cmd_config", "nyzhi.cli.cmd_init", "nyzhi.cli.cmd_auth",
    "nyzhi.cli.cmd_sessions", "nyzhi.cli.cmd_index", "nyzhi.cli.cmd_mcp", "nyzhi.cli.cmd_memory",
    "nyzhi.cli.cmd_team",
)


def _trust(value: str) -> str:
    try:
        return parse_trust(value).value
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_global_flags(parser: argparse.ArgumentParser, *, suppress: bool = False) -> None:
    """Flags accepted before a subcommand and, with ``suppress=True``, repeated after it.

    A subparser's defaults would overwrite values parsed before the subcommand, so its copies
    default to ``argparse.SUPPRESS`` (absent unless given).
    """
    d = {"default": argparse.SUPPRESS} if suppress else {}
    parser.add_argument("-p", "--provider", help="provider name (default: [provider] default)", **d)
    parser.add_argument("-m", "--model", help="model id for the provider", **d)
    parser.add_argument(
        "-y", "--trust", type=_trust, help=f"trust mode: {spelled(TrustMode)}", **d
    )
    parser.add_argument(
        "-c", "--continue", dest="continue_", action="store_true",
        help="resume the most recent session", **d,
    )
    parser.add_argument("-s", "--session", help="resume a session by id prefix or title", **d)
    parser.add_argument("--team-name", metavar="TEAM",
                        help="run as the lead of this team (created if missing)", **d)
    parser.add_argument("--teammate-mode", choices=("in-process", "process"),
                        help="how teammates run: agents in this process, or nyz processes", **d)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nyz",
        description="nyzhi: a terminal coding agent and multi-agent runtime.",
    )
    parser.add_argument("--version", action="version", version=f"nyz {__version__}")
    add_global_flags(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    with collector.paused():  # the parser's modules and classes: no garbage to look for
        parser = build_parser()
        args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        from nyzhi.cli.cmd_chat import run_chat

        handler = run_chat
    try:
        return int(handler(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
