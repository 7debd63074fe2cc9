"""The mailbox: a bounded FIFO with a parked consumer, plus one-shot reply slots for asks.

Why not a trio memory channel: every channel ``send``/``receive`` is a scheduler checkpoint
(~4.4 µs here) and a channel pair costs ~1.9 KB. A list filled without checkpoints and
drained in batches costs ~0.4 µs per message. The consumer parks with
``wait_task_rescheduled`` and a producer wakes it with ``reschedule``; no Event object is
allocated per wait. Senders that must wait (``Overflow.WAIT``) park the same way, in a FIFO
deque created only the first time one is needed: each take asks whether a sender waits,
and a deque answers that without a Python call (a ``ParkingLot``'s ``__bool__`` is one).

Everything here is synchronous except the two parking calls, so no message is ever lost or
duplicated by cancellation: an item is either in the list or it is not.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable
from typing import Any

import trio
from trio.lowlevel import Abort, current_task, reschedule, wait_task_rescheduled

from ._errors import AskTimeout
from ._types import Overflow

#: What :meth:`Mailbox.offer` did: no room (falsy), queued, queued and woke the consumer.
FULL, QUEUED, WOKE = 0, 1, 2


#: An :class:`AskSlot`'s ``task`` while its asker has yielded once but is not parked: the
#: answer is stored and the asker, already scheduled, finds it without being rescheduled.
UNPARKED: Any = object()


class AskSlot:
    """A one-shot reply slot: the ask's message, the waiting asker and, later, its answer.

    ``task`` is the parked asker, :data:`UNPARKED` while the asker yielded once without
    parking (see ``ActorRef.ask``), or ``None`` once answered or when the asker gave up
    (timeout or cancellation), which tells the actor to skip the request or drop its late
    reply.
    """

    __slots__ = ("message", "task", "value", "error", "path", "timeout")

    def __init__(self, message: object, task: Any) -> None:
        # ``value`` is set by :meth:`reply`; ``path`` and ``timeout`` only when a timer is
        # armed (an ask is on the hot path: every assignment here is paid per ask).
        self.message = message
        self.task = task
        self.error: BaseException | None = None

    def expire(self) -> None:
        """Called by the system timer when the ask's timeout passes."""
        if self.task is not None:
            self.fail(AskTimeout(self.path, self.message, self.timeout))

    def reply(self, value: object) -> None:
        task = self.task
        if task is not None:
            self.task = None
            self.value = value
            if task is not UNPARKED:
                reschedule(task)

    def fail(self, error: BaseException) -> None:
        task = self.task
        if task is not None:
            self.task = None
            self.error = error
            if task is not UNPARKED:
                reschedule(task)

    def result(self) -> Any:
        """The answer: the reply's value, or raise what the handler (or the system) failed
        the request with."""
        error = self.error
        if error is not None:
            raise error
        return self.value

    def wait(self) -> Awaitable[None]:
        """Park until :meth:`reply`/:meth:`fail`. A checkpoint; cancellation abandons the slot.

        A plain function returning trio's awaitable, so an ask adds no coroutine frame."""
        return wait_task_rescheduled(self._abort)  # noqa: ASYNC105 (awaited by the caller)

    def _abort(self, _: object) -> Abort:
        self.task = None
        return Abort.SUCCEEDED


class Mailbox:
    """Bounded FIFO of user messages with an explicit overflow policy.

    Ordering guarantee: messages from one sender arrive in the order sent (trio is
    single-threaded, so this is plain FIFO over the list).
    """

    __slots__ = (
        "items", "head", "capacity", "overflow", "dropped", "_consumer", "senders", "closed",
    )  # fmt: skip

    def __init__(self, capacity: int, overflow: Overflow) -> None:
        if capacity < 1:
            raise ValueError(f"mailbox_size must be >= 1, got {capacity}")
        # A list read from ``head`` rather than a deque (an empty deque is ~600 bytes), and
        # ``None`` while empty (an empty list is still 56): most actors' mailboxes are empty
        # most of the time. Invariant: ``None``, or a list holding items from ``head`` on.
        self.items: list[Any] | None = None
        self.head = 0
        self.capacity = capacity
        self.overflow = overflow
        self.dropped = 0
        self._consumer: trio.lowlevel.Task | None = None
        self.senders: deque[trio.lowlevel.Task] | None = None  # parked in wait_for_room
        self.closed = False

    def __len__(self) -> int:
        items = self.items
        return 0 if items is None else len(items) - self.head

    @property
    def parked(self) -> bool:
        """The consumer waits in :meth:`wait` and nothing has woken it yet."""
        return self._consumer is not None

    # -- producer side -------------------------------------------------------------------
    def offer(self, item: object) -> int:
        """Append ``item`` if there is room and wake the consumer: :data:`WOKE` when it was
        parked (it runs in trio's next scheduler batch), :data:`QUEUED` when it was not,
        :data:`FULL` (falsy), doing nothing, when there is no room. The one call of the
        tell and ask paths (a length check and a push would be two)."""
        items = self.items
        if items is None:
            self.items = [item]  # capacity is at least 1
        elif len(items) - self.head >= self.capacity:
            return FULL
        else:
            items.append(item)
        consumer = self._consumer
        if consumer is not None:
            self._consumer = None
            reschedule(consumer)
            return WOKE
        return QUEUED

    def push(self, item: object) -> None:
        """Append unconditionally (callers checked capacity) and wake the consumer."""
        items = self.items
        if items is None:
            self.items = [item]
        else:
            items.append(item)
        consumer = self._consumer
        if consumer is not None:
            self._consumer = None
            reschedule(consumer)

    async def wait_for_room(self) -> None:
        """Park until a message is taken out (or the mailbox closes). A checkpoint; a
        cancelled sender leaves the queue of waiting senders."""
        senders = self.senders
        if senders is None:
            senders = self.senders = deque()
        task = current_task()
        senders.append(task)

        def abort(_: object) -> Abort:
            senders.remove(task)
            return Abort.SUCCEEDED

        await wait_task_rescheduled(abort)

    # -- consumer side -------------------------------------------------------------------
    # Taking the next item is written inline in ``_lifecycle._drain``, the one consumer: a
    # method call per message was a sixth of what a message costs the receiver. It keeps
    # the invariant above (``items`` is ``None`` once drained) and wakes the longest
    # waiting sender (``senders``) each time it takes an item out.

    def wake(self) -> None:
        """Wake the parked consumer (a stop request or a system message arrived)."""
        consumer = self._consumer
        if consumer is not None:
            self._consumer = None
            reschedule(consumer)

    def wait(self) -> Awaitable[None]:
        """Park the consumer until :meth:`push` or :meth:`wake`. A checkpoint.

        A plain function returning trio's awaitable: a parked actor holds no frame (nor
        closure) for this call, which is most of what an idle actor costs after its task."""
        self._consumer = current_task()
        return wait_task_rescheduled(self._abort)  # noqa: ASYNC105 (awaited by the caller)

    def _abort(self, _: object) -> Abort:
        self._consumer = None
        return Abort.SUCCEEDED

    def close(self) -> list[Any]:
        """Refuse further messages, wake waiting senders, and return what was still queued."""
        self.closed = True
        items = self.items
        left = items[self.head :] if items is not None else []
        self.items = None
        self.head = 0
        senders = self.senders
        while senders:
            reschedule(senders.popleft())
        return left
