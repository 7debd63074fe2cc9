"""Budgets: how many tokens, dollars, seconds and model steps an agent (and its subtree) may use.

No agent runs away with the bill. Each agent may have a ``Budget``; a subagent's is carved out
of its parent's (``Budget.carve``): its limits are its own (role or config) capped at what the
parent has left, and everything it uses is charged to every ancestor as well, so a parent's
limit covers its whole subtree. The tree enforces them cooperatively: the turn loop asks
``over()`` before every model step and ends the turn with ``stop_reason="budget"`` when a limit
is reached; the wall-time limit is also watched while the agent waits on a tool or the model
(``deadline``), by whoever runs the turn (``nyzhi.core.runtime.subagents``).

The reason reads ``budget: tokens 20000/20000`` (used/limit), for status events and for the
parent's ``wait``.
"""

from __future__ import annotations

import math

import attrs
import trio

from nyzhi import records


@records.frozen
class Limits:
    """Limits; None: unlimited. ``time`` in seconds."""

    tokens: int | None = None
    usd: float | None = None
    time: float | None = None
    steps: int | None = None

    @classmethod
    def from_config(cls, config: object | None) -> Limits:
        """From a ``BudgetConfig`` (``[agent.agents.budget]`` or a role's ``budget``)."""
        if config is None:
            return cls()
        time = getattr(config, "time", None)
        return cls(
            tokens=getattr(config, "tokens", None),
            usd=getattr(config, "usd", None),
            time=time.seconds if hasattr(time, "seconds") else (float(time) if time else None),
            steps=getattr(config, "steps", None),
        )

    def merged(self, other: Limits) -> Limits:
        """``other``'s limits where set, else these."""
        return Limits(*(o if o is not None else s for s, o in zip(
            attrs.astuple(self), attrs.astuple(other), strict=True)))

    @property
    def empty(self) -> bool:
        return all(v is None for v in attrs.astuple(self))


def _min(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


@records.define(eq=False)
class Budget:
    """One agent's limits and what it and its subtree used. ``own_*`` is the agent alone
    (for its status line); ``tokens``/``usd``/``steps`` include every descendant."""

    limits: Limits = attrs.field(factory=Limits)
    parent: Budget | None = None
    started: float = attrs.field(factory=trio.current_time)
    tokens: int = 0
    usd: float = 0.0
    steps: int = 0
    own_tokens: int = 0
    own_usd: float = 0.0
    own_steps: int = 0

    def carve(self, limits: Limits) -> Budget:
        """A child's budget: ``limits`` capped at what this budget has left."""
        left = self.remaining()
        capped = Limits(
            tokens=_min(limits.tokens, left.tokens),
            usd=_min(limits.usd, left.usd),
            time=_min(limits.time, left.time),
            steps=_min(limits.steps, left.steps),
        )
        return Budget(capped, parent=self)

    def remaining(self) -> Limits:
        lim = self.limits
        elapsed = trio.current_time() - self.started
        return Limits(
            tokens=None if lim.tokens is None else max(lim.tokens - self.tokens, 0),
            usd=None if lim.usd is None else max(lim.usd - self.usd, 0.0),
            time=None if lim.time is None else max(lim.time - elapsed, 0.0),
            steps=None if lim.steps is None else max(lim.steps - self.steps, 0),
        )

    @property
    def deadline(self) -> float:
        """When the nearest wall-time limit of this budget or an ancestor runs out (trio
        time; ``inf`` when none)."""
        own = math.inf if self.limits.time is None else self.started + self.limits.time
        return own if self.parent is None else min(own, self.parent.deadline)

    def chain(self) -> list[Budget]:
        out, node = [], self
        while node is not None:
            out.append(node)
            node = node.parent
        return out

    def charge(self, *, tokens: int = 0, usd: float = 0.0, steps: int = 0) -> None:
        """Count use against this agent and every ancestor."""
        self.own_tokens += tokens
        self.own_usd += usd
        self.own_steps += steps
        for node in self.chain():
            node.tokens += tokens
            node.usd += usd
            node.steps += steps

    def over(self, *, next_step: bool = False) -> str | None:
        """The reason this agent must stop (its own or an ancestor's limit reached), or None.
        ``next_step``: whether one more model step would pass the step limit."""
        now = trio.current_time()
        for node in self.chain():
            lim = node.limits
            if lim.tokens is not None and node.tokens >= lim.tokens:
                return f"budget: tokens {node.tokens}/{lim.tokens}"
            if lim.usd is not None and node.usd >= lim.usd:
                return f"budget: usd {node.usd:.4f}/{lim.usd:.4f}"
            if lim.steps is not None and node.steps + (1 if next_step else 0) > lim.steps:
                return f"budget: steps {node.steps}/{lim.steps}"
            if lim.time is not None and now - node.started >= lim.time:
                return f"budget: time {now - node.started:.0f}s/{lim.time:.0f}s"
        return None

    def before_step(self) -> str | None:
        """For the turn loop: the reason to stop before the next model step, or None (and the
        step is counted)."""
        reason = self.over(next_step=True)
        if reason is None:
            self.charge(steps=1)
        return reason
