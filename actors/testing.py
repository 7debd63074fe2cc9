"""Helpers for testing code built on ``actors`` (public API, used by nyzhi's own tests).

- :class:`Probe`: an actor that records every message it receives, with waits that work
  under ``trio.testing.MockClock`` (they use trio deadlines, never wall time).
- :func:`no_leaked_tasks`: fail if a block leaves tasks running behind it.
- :func:`live_tasks`: every task currently alive in this trio run.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Protocol

import trio

from ._actor import Actor
from ._ref import ActorRef

_ANY: Any = object()


class _Spawner(Protocol):
    def spawn(self, factory: Any, *args: Any, name: str | None = ...) -> ActorRef: ...


def _matches(match: Any, message: Any) -> bool:
    if match is _ANY:
        return True
    if isinstance(match, type):
        return isinstance(message, match)
    if callable(match):
        return bool(match(message))
    return bool(message == match)


def _describe(match: Any) -> str:
    if match is _ANY:
        return "any message"
    if isinstance(match, type):
        return f"a {match.__qualname__}"
    if callable(match):
        return f"a message satisfying {getattr(match, '__qualname__', match)!r}"
    return f"{match!r}"


class _ProbeActor(Actor):
    def __init__(self, probe: Probe) -> None:
        self.probe = probe

    async def receive(self, message: Any) -> Any:
        probe = self.probe
        probe.received.append(message)
        probe._pending.append(message)
        probe._changed.set()
        probe._changed = trio.Event()
        reply = probe.reply
        return reply(message) if callable(reply) else reply


_ProbeActor.__name__ = _ProbeActor.__qualname__ = "Probe"  # default names: probe-1, ...


class Probe:
    """A recording actor. ``Probe(system_or_context, name=...)`` spawns it; send to
    ``probe.ref``; ``await probe.expect(...)`` to check what arrived.

    ``reply``: a constant, or a function of the message, used to answer asks.
    ``received`` keeps every message ever received; ``expect``/``wait_for`` consume from a
    separate pending queue.
    """

    def __init__(
        self, spawner: _Spawner, *, name: str | None = None, reply: Any = None, **spawn_opts: Any
    ) -> None:
        self.received: list[Any] = []
        self._pending: list[Any] = []
        self._changed = trio.Event()
        self.reply = reply
        self.ref: ActorRef = spawner.spawn(_ProbeActor, self, name=name, **spawn_opts)

    @property
    def pending(self) -> tuple[Any, ...]:
        """Received but not yet consumed by ``expect``/``wait_for``."""
        return tuple(self._pending)

    async def expect(self, match: Any = _ANY, *, timeout: float = 5.0) -> Any:  # noqa: ASYNC109
        """Wait for the next message and check it matches; return it (consumed).

        ``match``: a type (isinstance), a predicate, or a value (==); omitted: anything.
        Raises ``AssertionError`` if the next message does not match or none arrives within
        ``timeout`` (trio time, so MockClock's autojump makes this instant in tests)."""
        with trio.move_on_after(timeout):
            while not self._pending:
                await self._changed.wait()
            message = self._pending.pop(0)
            if not _matches(match, message):
                raise AssertionError(f"probe expected {_describe(match)}, got {message!r}")
            return message
        raise AssertionError(
            f"probe got no message within {timeout:g} s (expected {_describe(match)})"
        )

    async def wait_for(self, match: Any = _ANY, *, timeout: float = 5.0) -> Any:  # noqa: ASYNC109
        """Skip (consume) messages until one matches; return it. ``AssertionError`` on
        timeout, listing what was skipped."""
        skipped: list[Any] = []
        with trio.move_on_after(timeout):
            while True:
                while not self._pending:
                    await self._changed.wait()
                message = self._pending.pop(0)
                if _matches(match, message):
                    return message
                skipped.append(message)
        raise AssertionError(
            f"probe saw no {_describe(match)} within {timeout:g} s; skipped {skipped!r}"
        )

    async def expect_nothing(self, within: float = 0.1) -> None:
        """Assert that no message arrives for ``within`` seconds (trio time)."""
        await trio.sleep(within)
        if self._pending:
            raise AssertionError(f"probe expected no message, got {self._pending!r}")


def live_tasks() -> set[trio.lowlevel.Task]:
    """Every task alive in the current trio run (walks the task tree from the root)."""
    found: set[trio.lowlevel.Task] = set()
    stack = [trio.lowlevel.current_root_task()]
    while stack:
        task = stack.pop()
        if task is None or task in found:
            continue
        found.add(task)
        for nursery in task.child_nurseries:
            stack.extend(nursery.child_tasks)
    return found


@asynccontextmanager
async def no_leaked_tasks() -> AsyncIterator[None]:
    """Fail with ``AssertionError`` if tasks started inside the block are still alive
    after it (e.g. an actor or background task that outlived its system)."""
    before = live_tasks()
    yield
    await trio.lowlevel.checkpoint()
    left = live_tasks() - before
    if left:
        names = sorted(task.name for task in left)
        raise AssertionError(f"{len(left)} task(s) left behind: {names}")
