"""``nyz run`` / ``nyz exec``: one headless turn, for scripts and CI.

Output formats: ``text`` (final answer on stdout, progress on stderr), ``json`` (one result
object at the end) and ``stream-json`` (one JSON event per line: ``session_start`` first,
``result`` last). ``--autopilot`` runs a goal through subagents instead of one turn
(``nyzhi.headless.autopilot``).
Exit codes: 0 success, 1 error (message on stderr, also when the answer
came but the session could not be saved), 130 / 143 / 129 stopped by SIGINT / SIGTERM / SIGHUP.
"""

from __future__ import annotations

import argparse
import sys

from nyzhi.config.modes import SandboxLevel, TrustMode, parse_sandbox, spelled


def _sandbox(value: str) -> str:
    try:
        return parse_sandbox(value).value
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _duration(value: str) -> float:
    from nyzhi.config.durations import parse_duration

    try:
        return parse_duration(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _positive(kind: type) -> object:
    def check(value: str) -> object:
        try:
            number = kind(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {value!r}") from None
        if number <= 0:
            raise argparse.ArgumentTypeError(f"must be greater than zero, got {value!r}")
        return number

    return check


def register(sub: argparse._SubParsersAction) -> None:
    from nyzhi.cli.main import add_global_flags

    for name in ("run", "exec"):
        p = sub.add_parser(
            name,
            help="run one prompt headless (stdin, if piped, goes before the prompt)"
            if name == "run"
            else "alias of run",
        )
        p.add_argument("prompt", nargs="*", help="the prompt")
        add_global_flags(p, suppress=True)
        p.add_argument("--sandbox", type=_sandbox, help=spelled(SandboxLevel))
        p.add_argument(
            "--network", action="store_true", default=None,
            help="let sandboxed commands use the network (off by default under workspace-write)",
        )
        p.add_argument("-i", "--image", action="append", metavar="PATH",
                       help="send this image (PNG, JPEG, GIF, WebP) with the prompt; repeatable")
        p.add_argument("--max-steps", type=int, help="maximum tool-calling steps")
        p.add_argument("--ephemeral", action="store_true", help="do not save the session")
        p.add_argument(
            "--plan", action="store_true",
            help="plan only: read-only tools; the plan goes to .nyzhi/plans/<session>.plan.md",
        )
        p.add_argument(
            "--output-format",
            choices=("text", "json", "stream-json"),
            default=None,
            help="text (default), json, or stream-json",
        )
        p.add_argument("--format", dest="legacy_format", choices=("text", "json"), help=argparse.SUPPRESS)
        p.add_argument("--json", dest="legacy_json", action="store_true", help=argparse.SUPPRESS)
        p.add_argument("--budget-tokens", type=_positive(int), metavar="N",
                       help="stop when the agents of this run used N tokens in all")
        p.add_argument("--budget-usd", type=_positive(float), metavar="X",
                       help="stop when the agents of this run cost X dollars in all")
        p.add_argument("--budget-time", type=_duration, metavar="DURATION",
                       help="stop after this long (90s, 10m, 1h30m)")
        p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
        p.add_argument("-o", "--output", help="also write the final answer to this file")
        p.add_argument("--output-schema", metavar="FILE.json",
                       help="the final answer must be JSON matching this JSON schema "
                       "(constrained where the provider can; checked; a mismatch is an error)")
        p.add_argument(
            "--autopilot", action="store_true",
            help="the prompt is a goal: subagents expand it, plan, execute, check (verify) and "
            "review it; without a prompt, resume the unfinished autopilot "
            "(.nyzhi/state/autopilot.json)",
        )
        p.add_argument(
            "--full-auto", "--full_auto", dest="full_auto", action="store_true",
            help="trust full with the workspace-write sandbox",
        )
        p.set_defaults(handler=run_command)


def run_command(args: argparse.Namespace) -> int:
    from nyzhi import collector

    collector.pause()  # until the runtime is built (run_headless resumes it): ~40 ms less
    try:
        return _run_command(args)
    finally:
        collector.resume()  # when the runtime never got built


def _run_command(args: argparse.Namespace) -> int:
    from nyzhi.provider import tls

    tls.prewarm()  # the CA bundle loads on another core while the rest is imported
    from nyzhi.prompt_input import argv_prompt, stdin_prompt

    prompt, note = argv_prompt(args.prompt or [])
    if note:
        print(note, file=sys.stderr)
    if not sys.stdin.isatty():
        stream = getattr(sys.stdin, "buffer", None)  # None: replaced by a text stream
        piped, note = stdin_prompt(stream.read()) if stream else (sys.stdin.read(), None)
        if note:
            print(note, file=sys.stderr)
        if piped.strip():
            prompt = f"{piped.rstrip()}\n\n{prompt}" if prompt else piped
    autopilot = getattr(args, "autopilot", False)
    if autopilot and (args.plan or getattr(args, "output_schema", None) or args.image):
        print("nyz run: --autopilot cannot be combined with --plan, --output-schema or --image",
              file=sys.stderr)
        return 1
    if not prompt.strip() and not autopilot:
        print("nyz run: no prompt given (pass it as an argument or pipe it on stdin)", file=sys.stderr)
        return 1
    fmt = args.output_format or ("json" if args.legacy_json else args.legacy_format) or "text"
    if getattr(args, "output_schema", None):
        from nyzhi.provider.output_schema import OutputSchemaError, load_schema

        try:
            args.output_schema = load_schema(args.output_schema)
        except OutputSchemaError as exc:
            print(f"nyz: {exc}", file=sys.stderr)
            return 1
    if args.full_auto:
        args.trust = TrustMode.FULL.value
        args.sandbox = args.sandbox or SandboxLevel.WORKSPACE_WRITE.value

    from nyzhi.headless.run import run_and_exit, run_headless

    if autopilot:
        from nyzhi.headless.autopilot import run_autopilot

        return run_and_exit(run_autopilot, args, prompt, fmt)
    return run_and_exit(run_headless, args, prompt, fmt)
