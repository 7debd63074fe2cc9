"""``nyz init``: scaffold ``.nyzhi/`` in the workspace root without overwriting anything."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("init", help="create .nyzhi/ (config, rules, agents, commands, skills)")
    p.set_defaults(handler=run_init)


def run_init(args: argparse.Namespace) -> int:
    from nyzhi.config import detect_workspace
    from nyzhi.config.scaffold import scaffold

    root = detect_workspace().root
    report = scaffold(root)
    for path in report.created:
        print(f"created  {path.relative_to(root)}{'/' if path.is_dir() else ''}")
    for path in report.skipped:
        print(f"exists   {path.relative_to(root)}{'/' if path.is_dir() else ''} (left unchanged)")
    if not report.created:
        print(f"nothing to do: .nyzhi/ is already set up in {root}")
    else:
        print(f"initialised .nyzhi/ in {root}")
    return 0
