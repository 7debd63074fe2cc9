"""The ``Supervisor`` actor and the messages that manage its dynamic children.

A supervisor is simply an actor whose only job is its children: every actor supervises the
children it spawns (the rules are in ``_restart.py``); ``Supervisor`` starts them from child
specs and applies the policy it was given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from ._actor import Actor
from ._types import (
    DEFAULT_MAX_RESTARTS,
    DEFAULT_WITHIN,
    Backoff,
    ChildSpec,
    Strategy,
    Supervision,
)


@attrs.frozen
class StartChild:
    """Ask a :class:`Supervisor` to start a dynamic child; the reply is its ``ActorRef``."""

    spec: ChildSpec


@attrs.frozen
class StopChild:
    """Ask a :class:`Supervisor` to stop the child named ``name``; the reply is its
    ``Outcome`` (or ``None`` if there was no such child)."""

    name: str
    grace: float | None = None


@attrs.frozen
class WhichChildren:
    """Ask a :class:`Supervisor` for its live children; the reply is a tuple of refs."""


class Supervisor(Actor):
    """An actor that only supervises: it starts ``children`` (child specs) in order when it
    starts (and again after it is restarted), and applies ``strategy`` with
    ``max_restarts`` restarts per ``within`` seconds and an optional ``backoff``.

    Dynamic children: ``await sup.ask(StartChild(spec))``, ``StopChild(name)``,
    ``WhichChildren()``. Dynamic children are not re-created when the supervisor itself
    restarts (its state starts afresh, as in OTP).
    """

    def __init__(
        self,
        children: Sequence[ChildSpec] = (),
        strategy: Strategy = Strategy.ONE_FOR_ONE,
        max_restarts: int = DEFAULT_MAX_RESTARTS,
        within: float = DEFAULT_WITHIN,
        backoff: Backoff | None = None,
    ) -> None:
        self.specs = tuple(children)
        self.supervision = Supervision(strategy, max_restarts, within, backoff)

    async def started(self) -> None:
        for spec in self.specs:
            self.context.spawn(spec)

    async def receive(self, message: Any) -> Any:
        if isinstance(message, StartChild):
            return self.context.spawn(message.spec)
        if isinstance(message, StopChild):
            for ref in self.context.children:
                if ref.name == message.name:
                    return await ref.stop(grace=message.grace)
            return None
        if isinstance(message, WhichChildren):
            return self.context.children
        return await super().receive(message)
