"""Durations written by people: ``"90"``, ``"90s"``, ``"10m"``, ``"1h30m"``, ``"250ms"``.

Used by budgets (``[agent.agents.budget] time``, ``nyz run --budget-time``), so one spelling
works in the config and on the command line.
"""

from __future__ import annotations

import re
from typing import Any

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")


def parse_duration(text: str) -> float:
    """Seconds in ``text``; a bare number is seconds. ValueError (saying what is accepted) for
    anything else, zero or negative included."""
    spec = str(text).strip().lower().replace(" ", "")
    if re.fullmatch(r"\d+(?:\.\d+)?", spec):
        seconds = float(spec)
    elif spec and not _PART.sub("", spec):
        seconds = sum(float(n) * _UNITS[u] for n, u in _PART.findall(spec))
    else:
        raise ValueError(
            f"expected a duration such as \"90s\", \"10m\", \"1h30m\" or a number of seconds, "
            f"got {text!r}"
        )
    if seconds <= 0:
        raise ValueError(f"a duration must be longer than zero, got {text!r}")
    return seconds


class Duration(str):
    """A config string that must be a duration; the config converter checks it at load time
    (so a bad value is reported with its file and key) and keeps the text as written."""

    @property
    def seconds(self) -> float:
        return parse_duration(self)


def structure_duration(value: Any) -> Duration:
    """``value`` as a ``Duration``; ValueError when it is not one."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"expected a duration string, got {value!r}")
    parse_duration(str(value))
    return Duration(str(value))
