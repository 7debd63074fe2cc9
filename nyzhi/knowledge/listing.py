"""Listings of skills and roles that fit a budget of characters.

A project carried over from Claude Code can hold hundreds of skills and agent files. Listed in
full, they cost tens of thousands of tokens on every request before the user says a word. So
the skill index (system prompt) and the role list (``spawn_agent`` description) are each kept
within ``[agent] listing_budget_chars``; entries are cut to a short description, and when some
do not fit, the last line says how many were left out and which tool lists them all.
"""

from __future__ import annotations

from nyzhi.config.schema_agent import LISTING_BUDGET_CHARS

__all__ = ["ENTRY_CHARS", "LISTING_BUDGET_CHARS", "fit_listing"]

ENTRY_CHARS = 100  # characters of one entry's description in a listing
_TAIL_ROOM = 200  # kept free for the "N more" line


def fit_listing(lines: list[str], budget: int | None, what: str, tool: str) -> str:
    """``lines`` joined, keeping as many as fit ``budget`` characters with room for the line
    saying how many ``what`` were left out and that ``tool`` lists them all."""
    if budget is None or sum(len(line) + 1 for line in lines) <= budget:
        return "\n".join(lines)
    kept: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) + 1 > max(budget - _TAIL_ROOM, 0):
            break
        kept.append(line)
        used += len(line) + 1
    left = len(lines) - len(kept)
    kept.append(f"- ({left} more {what} not listed here: call {tool}, with a query to filter, "
                "to see them all; find it with tool_search if it is not loaded)")
    return "\n".join(kept)
