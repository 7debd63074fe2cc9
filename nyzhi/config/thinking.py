"""Thinking levels as people write them: ``off``, ``low``, ``medium``, ``high`` or a token budget.

The one parser of a level, in the config layer because every place that takes one sits above
it: ``[agent] thinking`` and a role's ``thinking`` (checked when the config loads, so a bad value
names its file and key), ``nyz run --thinking``, a role file's front matter and ``/thinking``.
How a level becomes each model's own parameter is ``nyzhi.provider.thinking``.
"""

from __future__ import annotations

from typing import Any

LEVELS = ("off", "low", "medium", "high")
EXPECTED = "off, low, medium, high or a token budget (a whole number)"

Level = str | int  # one of LEVELS, or a token budget (> 0)


def parse_level(value: Any, where: str = "thinking") -> Level:
    """``value`` as a level: a name of ``LEVELS`` (any case) or a positive token count, given as
    a number or a string of digits. ValueError naming ``where`` otherwise."""
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str):
        text = value.strip().lower()
        if text in LEVELS:
            return text
        if text.isdigit():
            number = int(text)
    if number is None:
        raise ValueError(f"{where}: expected {EXPECTED}, found {value!r}")
    if number <= 0:
        raise ValueError(f"{where}: a token budget must be at least 1, found {number}")
    return number


class ThinkingLevel(str):
    """A config value that must be a thinking level; checked when the config loads and kept as
    written (``level`` gives it parsed)."""

    @property
    def level(self) -> Level:
        return parse_level(str(self))


def structure_thinking(value: Any) -> ThinkingLevel:
    """``value`` as a ``ThinkingLevel``; ValueError when it is not one."""
    parse_level(value)
    return ThinkingLevel(str(value))
