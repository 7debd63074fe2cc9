"""``nyz doctor``: one line per check of what nyz needs here, a fix under each failure, and
exit status 1 when anything failed (``nyzhi.core.runtime.doctor``)."""

from __future__ import annotations

import argparse
import json
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "doctor", help="check providers, sandbox, tools, permissions and disk; say what to fix",
        description="Check what nyz needs on this machine: every configured provider (where "
                    "its key comes from), bubblewrap (a real sandboxed `true`), git, ripgrep, "
                    "node, language servers, the offline model, permissions of auth.json and "
                    "the data dirs, and disk space. Exits 1 when a check fails.")
    p.add_argument("--online", action="store_true",
                   help="also make one authenticated call per provider (its model list)")
    p.add_argument("--json", action="store_true", help="the checks as a JSON list")
    p.set_defaults(handler=run_doctor)


def run_doctor(args: argparse.Namespace) -> int:
    from pathlib import Path

    import attrs

    from nyzhi.core.runtime.doctor import failed, run_checks, verdict

    checks = run_checks(Path.cwd(), online=args.online)
    if args.json:
        sys.stdout.write(json.dumps([attrs.asdict(c) for c in checks], indent=1) + "\n")
    else:
        for check in checks:
            print(check.line())
        print(verdict(checks))
    return 1 if failed(checks) else 0
