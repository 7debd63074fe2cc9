"""``nyz stats`` and ``nyz cost``: usage totals and spend over time, read from the session
journals through the incremental index of ``nyzhi.core.runtime.usage_stats`` (stdlib only at
import time, so registering these commands costs nothing)."""

from __future__ import annotations

import argparse
import json
import sys

from nyzhi.core.runtime.usage_stats import GROUPS, PERIODS


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "stats", help="usage totals over all sessions: tokens, cache hits, cost, turns, tools",
        description="Totals over every saved session: tokens, cache hits, cost, turns and "
                    "tool calls, read from the session journals.")
    p.add_argument("--by", choices=GROUPS, help="also split the totals by model, project "
                                                "(workspace root) or agent role")
    p.add_argument("--json", action="store_true", help="one JSON object, for scripts")
    p.set_defaults(handler=run_stats)

    p = sub.add_parser(
        "cost", help="spend per day, week or month: nyz cost [daily|weekly|monthly]",
        description="Usage and cost per period, oldest first, read from the session journals.")
    p.add_argument("period", nargs="?", choices=PERIODS, default="daily",
                   help="default: daily (weeks are ISO weeks; days are local days)")
    p.add_argument("--by", choices=GROUPS, help="split each period by model, project or agent")
    p.add_argument("--json", action="store_true", help="one JSON object, for scripts")
    p.set_defaults(handler=run_cost)


def _summaries() -> dict:
    from nyzhi.core.runtime.sessions import default_sessions_dir
    from nyzhi.core.runtime.usage_stats import session_summaries

    return session_summaries(default_sessions_dir())


def run_stats(args: argparse.Namespace) -> int:
    from nyzhi.core.runtime.usage_stats import stats, stats_lines

    data = stats(_summaries(), args.by)
    _print(data, args.json, stats_lines)
    return 0


def run_cost(args: argparse.Namespace) -> int:
    from nyzhi.core.runtime.usage_stats import cost, cost_lines

    data = cost(_summaries(), args.period, args.by)
    _print(data, args.json, cost_lines)
    return 0


def _print(data: dict, as_json: bool, lines: object) -> None:
    if as_json:
        sys.stdout.write(json.dumps(data, indent=1) + "\n")
    else:
        sys.stdout.write("\n".join(lines(data)) + "\n")  # type: ignore[operator]
