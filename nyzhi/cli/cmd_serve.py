"""``nyz serve``: the web console (``nyzhi.web``) on loopback, with a per-run token.

Module-level imports are stdlib only: ``nyz --help`` and ``nyz run`` never load the server.

The token may come from ``--token``, ``--token-file PATH`` (its first line) or the environment
(``NYZHI_SERVE_TOKEN``): a command line is readable by every user of the machine (``ps``,
``/proc/PID/cmdline``), a file or the environment is not.
"""

from __future__ import annotations

import argparse
import os
import sys

TOKEN_ENV = "NYZHI_SERVE_TOKEN"
MAX_TOKEN_FILE = 4096


def register(sub: argparse._SubParsersAction) -> None:
    from nyzhi.cli.cmd_run import _sandbox
    from nyzhi.cli.main import add_global_flags

    p = sub.add_parser(
        "serve", help="serve the web console (a browser UI) on 127.0.0.1",
        description="Serves the web console: the conversation, the live agent tree, "
                    "approvals and slash commands in a browser, on 127.0.0.1:6494 by "
                    "default. A token is printed at start (or set with --token) and every "
                    "request but the page itself needs it. See docs/web.md.",
    )
    p.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1; others need --allow-remote)")
    p.add_argument("--port", type=int, default=6494, help="port (default 6494; 0: any free)")
    p.add_argument("--token", help="the access token (default: a new random one per run); "
                                   "visible in ps: prefer --token-file or NYZHI_SERVE_TOKEN")
    p.add_argument("--token-file", metavar="PATH",
                   help=f"read the access token from the first line of PATH (or set {TOKEN_ENV})")
    p.add_argument("--allow-remote", action="store_true",
                   help="allow a non-loopback --host (prefer an SSH tunnel)")
    p.add_argument("--max-message", type=int, default=1024 * 1024, metavar="BYTES",
                   help="largest client message (default 1 MiB)")
    p.add_argument("--max-connections", type=int, default=32, metavar="N",
                   help="WebSocket connections at once (default 32)")
    p.add_argument("--send-queue", type=int, default=4096, metavar="N",
                   help="messages queued for a viewer before it is dropped as too slow "
                        "(default 4096)")
    p.add_argument("--team", metavar="NAME",
                   help="show a running team (its lead and teammates) in the tree and message "
                        "its members, without becoming its lead")
    p.add_argument("--sandbox", type=_sandbox, default=argparse.SUPPRESS,
                   help="read-only, workspace-write or full-access (default: as configured)")
    # -p, -m, -y, --team-name (the session runs as that team's lead), ... after ``serve`` too.
    # ``--team`` is an exact option here; the top-level parser knows it too (``main``), so it
    # is never read there as an ambiguous abbreviation of --team-name or --teammate-mode.
    add_global_flags(p, suppress=True)
    p.set_defaults(handler=run_serve)


def chosen_token(args: argparse.Namespace) -> str | None | SystemExit:
    """The token the user gave (``--token``, ``--token-file``, ``NYZHI_SERVE_TOKEN``, in that
    order), None for a generated one, or a ``SystemExit`` carrying the one-line reason."""
    path = getattr(args, "token_file", None)
    if args.token is not None and path is not None:
        return SystemExit("give --token or --token-file, not both")
    if args.token is not None:
        return args.token
    if path is not None:
        from nyzhi.config.textfile import read_regular

        try:
            data = read_regular(path, MAX_TOKEN_FILE + 1)
        except OSError as exc:
            return SystemExit(f"--token-file {path}: {exc.strerror or exc}")
        lines = data.decode("utf-8", "replace").splitlines()
        token = lines[0].strip() if lines else ""
        if not token or len(data) > MAX_TOKEN_FILE:
            return SystemExit(f"--token-file {path}: expected the token on its first line "
                              f"(at most {MAX_TOKEN_FILE} bytes), found "
                              + ("nothing" if not token else "a longer file"))
        return token
    env = os.environ.get(TOKEN_ENV, "").strip()
    return env or None


def run_serve(args: argparse.Namespace) -> int:
    import trio

    from nyzhi.core.protocol import describe_error
    from nyzhi.front.flags import runtime_options
    from nyzhi.web.server import ServeError, ServeOptions, serve

    options = ServeOptions(
        host=args.host, port=args.port, allow_remote=args.allow_remote,
        max_message=args.max_message, max_connections=args.max_connections,
        send_queue=args.send_queue)
    token = chosen_token(args)
    if isinstance(token, SystemExit):
        print(f"nyz serve: {token.code}", file=sys.stderr)
        return 2
    if token is not None:
        options.token, options.generated = token, False
    if args.team is not None:
        if getattr(args, "team_name", None):
            print("nyz serve: --team shows a running team; --team-name makes this session a "
                  "team's lead: give one of them", file=sys.stderr)
            return 2
        options.team = args.team
    try:
        options.check()
        return trio.run(serve, options, runtime_options(args, interactive=True))
    except ServeError as exc:
        print(f"nyz serve: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:
        print(f"nyz serve: {describe_error(exc)}", file=sys.stderr)
        return 1
