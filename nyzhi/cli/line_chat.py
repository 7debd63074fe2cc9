"""Plain line-mode chat over the shared runtime (stands in until the urwid console)."""

from __future__ import annotations

import argparse
import sys


def main(args: argparse.Namespace) -> int:
    print("nyz: the agent runtime is not assembled yet.", file=sys.stderr)
    return 1
