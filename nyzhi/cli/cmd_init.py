"""``nyz init``: scaffold ``.nyzhi/`` in the workspace root without overwriting anything."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("init", help="create .nyzhi/ (config, rules, agents, commands, skills)")
    p.set_defaults(handler=run_init)


def run_init(args: argparse.Namespace) -> int:
    for line in init_lines():
        print(line)
    return 0


def init_lines(cwd: Path | None = None) -> list[str]:
    """Scaffold the workspace containing ``cwd`` (default: the working directory) and say what
    was created and what was left alone; ``nyz init`` prints it, the console's ``/init`` shows
    it."""
    from nyzhi.config import detect_workspace
    from nyzhi.config.scaffold import scaffold

    root = detect_workspace(cwd).root
    report = scaffold(root)
    lines = [f"created  {path.relative_to(root)}{'/' if path.is_dir() else ''}"
             for path in report.created]
    lines += [f"exists   {path.relative_to(root)}{'/' if path.is_dir() else ''} (left unchanged)"
              for path in report.skipped]
    if not report.created:
        lines.append(f"nothing to do: .nyzhi/ is already set up in {root}")
    else:
        lines.append(f"initialised .nyzhi/ in {root}")
    return lines
