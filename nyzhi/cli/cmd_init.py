"""``nyz init``: scaffold ``.nyzhi/`` in the workspace root without overwriting anything."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("init", help="create .nyzhi/ (config, rules, agents, commands, skills)")
    p.set_defaults(handler=run_init)


def run_init(args: argparse.Namespace) -> int:
    from nyzhi.config.scaffold import init_lines

    for line in init_lines():
        print(line)
    return 0
