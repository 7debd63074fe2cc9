"""What a run's whole agent tree used: tokens and cost per agent path, and their sum.

Every model call of every agent (the main one, its subagents, in-process teammates, and
process teammates, whose events the lead re-tags to ``/team/<team>/<member>``) ends with a
``usage`` event on the runtime's bus. ``track_usage`` adds a listener that sums them by path,
so a headless ``result`` reports the tree, not the main agent alone (``usage``, ``cost_usd``,
``usage_by_agent``). It is the one place front ends read the tree's usage from; when the
runtime keeps these totals itself, only this function changes.
"""

from __future__ import annotations

from typing import Any

from nyzhi.core.protocol import events as ev

# thinking_tokens: of output_tokens, where the provider says (issue 32)
_KEYS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
         "thinking_tokens")


def _zero() -> dict[str, Any]:
    return {**dict.fromkeys(_KEYS, 0), "cost_usd": 0.0}


class UsageLedger:
    """Usage by agent path, in the shape of ``Runtime.usage_totals()``."""

    def __init__(self) -> None:
        self.agents: dict[str, dict[str, Any]] = {}

    async def on_event(self, event: ev.Event) -> None:
        if isinstance(event, ev.Usage):
            row = self.agents.setdefault(event.agent, _zero())
            for key in _KEYS:
                row[key] += getattr(event, key)
            row["cost_usd"] += event.cost_usd

    def by_agent(self) -> dict[str, dict[str, Any]]:
        """Each agent that made a model call, sorted by path; costs rounded to 1e-6 dollars."""
        return {path: {**row, "cost_usd": round(row["cost_usd"], 6)}
                for path, row in sorted(self.agents.items())}

    def totals(self) -> dict[str, Any]:
        total = _zero()
        for row in self.agents.values():
            for key in (*_KEYS, "cost_usd"):
                total[key] += row[key]
        total["cost_usd"] = round(total["cost_usd"], 6)
        return total


def track_usage(rt: Any) -> UsageLedger:
    """A ledger of the tree's usage from now on (call it before the first turn)."""
    ledger = UsageLedger()
    rt.add_listener(ledger.on_event, name="usage ledger")
    return ledger
