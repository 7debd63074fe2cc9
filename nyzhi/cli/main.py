"""Entry point of ``nyz``: global flags, subcommand registration, exit codes.

Subcommand modules register themselves through ``register(subparsers)`` and set
``handler`` on their parser to a function ``(args) -> int``. Handlers import what they
need lazily, and only the given subcommand's module is imported (``COMMANDS``). Exit codes:
0 success, 1 error (message on stderr), 2 usage error (argparse), 130 interrupted.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import NoReturn

from nyzhi import __version__, codecache, collector, process
from nyzhi.config.modes import TeammateMode, TrustMode, choices, parse_trust, spelled

codecache.install()  # before any attrs class is created (nyzhi.codecache says why it is safe)
process.claim()  # nyz owns this interpreter: gc.freeze() and the lean httpcore (nyzhi.process)

# httpx imports its own command-line client at import time (click, rich and pygments, when they
# are installed, as they are next to mcp: ~20 ms of every start-up) inside ``try/except
# ImportError``. nyz never uses it; a None entry makes that import fail at once, and httpx falls
# back to its stub. This module is the nyz entry point; programs embedding nyzhi do not import it.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

# The module that registers each subcommand, aliases included, in the order ``nyz --help``
# lists them. Keep module-level imports in them light.
COMMANDS: dict[str, str] = {
    "chat": "nyzhi.cli.cmd_chat",
    "run": "nyzhi.cli.cmd_run", "exec": "nyzhi.cli.cmd_run",
    "config": "nyzhi.cli.cmd_config",
    "init": "nyzhi.cli.cmd_init", "deepinit": "nyzhi.cli.cmd_deepinit",
    "login": "nyzhi.cli.cmd_auth", "logout": "nyzhi.cli.cmd_auth", "whoami": "nyzhi.cli.cmd_auth",
    "sessions": "nyzhi.cli.cmd_sessions", "session": "nyzhi.cli.cmd_sessions",
    "attach": "nyzhi.cli.cmd_attach",
    "export": "nyzhi.cli.cmd_sessions", "replay": "nyzhi.cli.cmd_sessions",
    "rewind": "nyzhi.cli.cmd_rewind",
    "index": "nyzhi.cli.cmd_index",
    "mcp": "nyzhi.cli.cmd_mcp",
    "plugin": "nyzhi.cli.cmd_plugin", "plugins": "nyzhi.cli.cmd_plugin",
    "memory": "nyzhi.cli.cmd_memory",
    "models": "nyzhi.cli.cmd_models",
    "team": "nyzhi.cli.cmd_team", "teams": "nyzhi.cli.cmd_team",
    "acp": "nyzhi.cli.cmd_acp",
    "serve": "nyzhi.cli.cmd_serve",
    "stats": "nyzhi.cli.cmd_stats", "cost": "nyzhi.cli.cmd_stats",
    "doctor": "nyzhi.cli.cmd_doctor",
}
COMMAND_MODULES: tuple[str, ...] = tuple(dict.fromkeys(COMMANDS.values()))


def _trust(value: str) -> str:
    try:
        return parse_trust(value).value
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _thinking(value: str) -> str | int:
    from nyzhi.config.thinking import parse_level

    try:
        return parse_level(value, "--thinking")
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
    parser.add_argument("--thinking", type=_thinking, metavar="LEVEL",
                        help="how hard the model thinks: off, low, medium, high or a token "
                        "budget (default: [agent] thinking)", **d)
    parser.add_argument(
        "-y", "--trust", type=_trust, help=f"trust mode: {spelled(TrustMode)}", **d
    )
    parser.add_argument(
        "--approve-project-config", action="store_true",
        help="use the project's configuration that needs approval (hooks, MCP servers, hosts, "
        "environment...) for this run without asking, as `nyz config trust` would (for CI)",
        **d,
    )
    parser.add_argument(
        "-c", "--continue", dest="continue_", action="store_true",
        help="resume the most recent session", **d,
    )
    parser.add_argument("-s", "--session", help="resume a session by id prefix or title", **d)
    parser.add_argument("--team-name", metavar="TEAM",
                        help="run as the lead of this team (created if missing)", **d)
    parser.add_argument("--teammate-mode", choices=choices(TeammateMode),
                        help="how teammates run: agents in this process, or nyz processes", **d)


def build_parser(
    modules: Sequence[str] = COMMAND_MODULES,
    parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser,
) -> argparse.ArgumentParser:
    """The ``nyz`` parser with the subcommands of ``modules`` (all of them by default)."""
    parser = parser_class(
        prog="nyz",
        description="nyzhi: a terminal coding agent and multi-agent runtime.",
    )
    parser.add_argument("--version", action="version", version=f"nyz {__version__}")
    add_global_flags(parser)
    # ``nyz serve --team NAME``: argparse reads every option-like token of the whole command
    # line against this parser first, and to it ``--team`` would be an ambiguous abbreviation
    # of --team-name and --teammate-mode (an error before ``serve`` is reached). An exact,
    # hidden ``--team`` here stops that; given before a subcommand it says where it belongs.
    parser.add_argument("--team", action=_SubcommandOption, nargs=1, default=argparse.SUPPRESS,
                        help=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in modules:
        importlib.import_module(name).register(sub)
    return parser


class _SubcommandOption(argparse.Action):
    """An option of a subcommand, given before it: a usage error saying where it goes."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        parser.error(f"{option_string} is an option of `nyz serve`: put it after serve")


class _Unsure(Exception):  # noqa: N818 - a signal, not an error
    """The parser of a few subcommands met an error: the full parser says it, its own way."""


class _FewCommandsParser(argparse.ArgumentParser):
    """A parser (and, through ``add_subparsers``, subparsers) that leaves errors to the full one.

    It prints nothing before raising: only help and ``--version`` print, and they print the
    same with a few subcommands registered as with all of them (checked in ``_modules_for``).
    """

    def error(self, message: str) -> NoReturn:
        raise _Unsure(message)


def _asks_help(token: str) -> bool:
    """``-h``, ``--help`` or an abbreviation of it, or short flags bundled with ``h``."""
    if token.startswith("--"):
        return len(token) > 2 and "--help".startswith(token.split("=", 1)[0])
    return token.startswith("-") and "h" in token


def _modules_for(argv: Sequence[str]) -> tuple[str, ...] | None:
    """The modules whose subcommands ``argv`` can name, or None for all of them.

    Importing all ten command modules for every start costs more than the work of most
    commands' parsing, so only the given subcommand's module is imported. The subcommand is the
    first token that names one and does not follow an option (a value of ``-s``/``-p``/... may
    spell a command name too: such tokens' modules are registered as well, harmlessly). Help
    before the subcommand lists every command: all modules then. No subcommand at all (``nyz``
    alone: the console or the line chat) needs none of them; a wrong one is a usage error,
    which ``parse_args`` leaves to the full parser, whose message lists them all.
    """
    found: list[str] = []
    after_option = False
    for token in argv:
        if token in COMMANDS:
            found.append(COMMANDS[token])
            if not after_option:
                break
        elif _asks_help(token):
            return None
        after_option = token.startswith("-") and "=" not in token and token != "-"
    return tuple(m for m in COMMAND_MODULES if m in found)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line, importing only the given subcommand's module when that is sure.

    Whatever the few-subcommands parser cannot parse (any usage error) is parsed again with all
    subcommands registered, so every message, usage line and exit code is the full parser's.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    modules = _modules_for(argv)
    if modules is not None:
        try:
            return build_parser(modules, _FewCommandsParser).parse_args(argv)
        except _Unsure:
            pass
    return build_parser().parse_args(argv)

def main(argv: Sequence[str] | None = None) -> int:
    with collector.paused():  # the parser's modules and classes: no garbage to look for
        args = parse_args(argv)
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
    finally:
        codecache.save()


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
