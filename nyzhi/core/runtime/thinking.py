"""``/thinking``: show or set the main agent's thinking level, for every front end.

The console and the line chat both answer ``/thinking`` with ``thinking_command``, so it reads
and says the same everywhere; the console's key cycles the named levels with ``next_level``.
"""

from __future__ import annotations

from typing import Any

from nyzhi.config.thinking import LEVELS, parse_level

USAGE = "/thinking off|low|medium|high|TOKENS"


def describe(rt: Any) -> str:
    level = rt.thinking_level if rt.thinking_level is not None else "off"
    sent = rt.main_agent.loop.thinking
    if sent is None:
        detail = "no thinking parameter"
    elif sent.mode == "budget":
        detail = f"budget {sent.budget_tokens} tokens"
    elif sent.mode is None:  # a model the table does not know: as its format takes it
        detail = f"effort {sent.effort} or budget {sent.budget_tokens} tokens"
    else:
        detail = f"effort {sent.effort}"
    return f"thinking: {level} on {rt.model} ({detail})"


def thinking_command(rt: Any, arg: str) -> str:
    """What ``/thinking ARG`` shows after doing it: the level now, or the error."""
    if arg.strip():
        try:
            level = parse_level(arg, "/thinking")
        except ValueError as exc:
            return f"{exc} ({USAGE})"
        notice = rt.set_thinking(level)
        if notice:
            return f"{notice}\n{describe(rt)}"
    return describe(rt)


def next_level(level: str | int | None) -> str:
    """The named level after ``level``, round from high back to off (a budget goes to off)."""
    if level not in LEVELS:
        return "off"
    return LEVELS[(LEVELS.index(level) + 1) % len(LEVELS)]  # type: ignore[arg-type]
