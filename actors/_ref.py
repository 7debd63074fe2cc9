"""``ActorRef``: the only way to talk to an actor. Stable across restarts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio
from trio.lowlevel import checkpoint, checkpoint_if_cancelled, current_task

from ._errors import ActorDead, ActorError, AskTimeout, MailboxFull
from ._mailbox import FULL, UNPARKED, WOKE, AskSlot
from ._timer import cancel as cancel_timer
from ._types import Outcome, Overflow, Status

if TYPE_CHECKING:
    from ._cell import Cell

#: Like Erlang's ``gen_server:call``: an ask that gets no answer in 5 s is a bug to report.
#: Pass ``timeout=None`` for requests that legitimately take long (a model stream).
DEFAULT_ASK_TIMEOUT = 5.0


class ActorRef:
    """A handle on an actor: send it messages, stop it, wait for it, inspect it.

    Refs compare equal only to refs of the same actor and keep working across restarts (the
    mailbox is kept; the message being handled when it crashed is lost). Once the actor has
    terminated, ``tell``/``ask`` raise ``ActorDead``.
    """

    __slots__ = ("_cell",)

    def __init__(self, cell: Cell) -> None:
        self._cell = cell

    # -- inspection ---------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._cell.name

    @property
    def path(self) -> str:
        """Unique path in the tree, e.g. ``/agents/main/sub-1``."""
        return self._cell.path

    @property
    def status(self) -> Status:
        return self._cell.status

    @property
    def outcome(self) -> Outcome | None:
        """The final outcome once terminated, else ``None``."""
        return self._cell.outcome

    @property
    def restarts(self) -> int:
        return self._cell.restarts

    @property
    def parent(self) -> ActorRef | None:
        """The parent's ref (``None`` for top-level actors)."""
        parent = self._cell.parent
        return None if parent is None or parent.parent is None else parent.ref

    @property
    def children(self) -> tuple[ActorRef, ...]:
        children = self._cell.children
        return tuple(c.ref for c in children) if children else ()

    @property
    def queued(self) -> int:
        """Messages waiting in the mailbox."""
        mailbox = self._cell.mailbox
        return len(mailbox) if mailbox is not None else 0

    @property
    def dropped(self) -> int:
        """Messages discarded by ``Overflow.DROP`` since spawn."""
        mailbox = self._cell.mailbox
        return mailbox.dropped if mailbox is not None else 0

    def __repr__(self) -> str:
        return f"<ActorRef {self._cell.path} {self._cell.status.value}>"

    # -- messaging ------------------------------------------------------------------------
    def tell_nowait(self, message: Any) -> None:
        """Queue ``message`` without waiting. Not a checkpoint.

        Raises ``ActorDead`` if the actor terminated, ``MailboxFull`` if the mailbox is full
        under ``RAISE`` or ``WAIT``; under ``DROP`` a full mailbox discards the message and
        counts it in ``dropped``."""
        cell = self._cell
        mailbox = cell.mailbox
        if cell.outcome is not None or mailbox is None:
            raise ActorDead(cell.path, cell.outcome)
        if not mailbox.offer(message):
            if mailbox.overflow is Overflow.DROP:
                mailbox.dropped += 1
                return
            raise MailboxFull(cell.path, mailbox.capacity)

    async def tell(self, message: Any) -> None:
        """Queue ``message``, honouring the actor's overflow policy when the mailbox is full:
        ``WAIT`` blocks until there is room (backpressure), ``RAISE`` raises ``MailboxFull``,
        ``DROP`` yields once and then discards the message if still full.

        Always a cancellation point (if cancelled, the message was not queued); a scheduling
        point only when it has to wait, so a burst of tells to a roomy mailbox costs no
        context switches (the receiver runs once the sender blocks)."""
        await checkpoint_if_cancelled()
        cell = self._cell
        # The fast path: a live actor (its mailbox closes only after its outcome is set)
        # with room. Everything else (dead, full) is the slow path's.
        if cell.outcome is None and cell.mailbox.offer(message):  # type: ignore[union-attr]
            return
        await self._tell_full(message)

    async def _tell_full(self, message: Any) -> None:
        """``tell`` to a dead actor or a full mailbox: the overflow policy decides."""
        cell = self._cell
        mailbox = cell.mailbox
        while True:
            if cell.outcome is not None or mailbox is None or mailbox.closed:
                raise ActorDead(cell.path, cell.outcome)
            if mailbox.offer(message):
                return
            overflow = mailbox.overflow
            if overflow is Overflow.WAIT:
                await mailbox.wait_for_room()
            elif overflow is Overflow.RAISE:
                raise MailboxFull(cell.path, mailbox.capacity)
            else:
                await checkpoint()
                if cell.outcome is None and len(mailbox) >= mailbox.capacity:
                    mailbox.dropped += 1
                    return

    async def ask(self, message: Any, *, timeout: float | None = DEFAULT_ASK_TIMEOUT) -> Any:  # noqa: ASYNC109 (the timeout names the target in AskTimeout)
        """Send ``message`` and wait for ``receive``'s return value. Always a checkpoint.

        Raises: the handler's own exception if ``receive`` raised; ``AskTimeout`` (naming
        the target and the message type) after ``timeout`` seconds, in which case the
        request is withdrawn or its late reply discarded; ``ActorDead`` if the actor
        terminated before answering; ``MailboxFull`` if the mailbox is full and the policy
        is not ``WAIT``. If the caller is cancelled, the request is withdrawn the same way.
        """
        cell = self._cell
        mailbox = cell.mailbox
        if cell.outcome is not None or mailbox is None:
            await checkpoint()
            raise ActorDead(cell.path, cell.outcome)
        task = current_task()
        if task is cell.task:
            raise ActorError(f"{cell.path} asked itself: it would wait forever for its own reply")
        slot = AskSlot(message, UNPARKED)
        offered = mailbox.offer(slot)
        if offered == WOKE:
            # The actor was parked, so it runs in trio's next scheduler batch. Yield once
            # into that batch instead of parking: when trio runs the actor first (batch
            # order is random) and it answers without blocking, the reply is here when we
            # resume, with no timer armed and no second batch for a wake-up.
            try:
                await checkpoint()
            except BaseException:
                slot.task = None  # cancelled: withdraw the request, or drop its reply
                raise
        elif offered == FULL:
            slot.task = task
            return await self._ask_full(slot, timeout)
        if slot.task is UNPARKED:
            slot.task = task
            if timeout is None:
                await slot.wait()
            else:
                # The system timer fails the slot on expiry (no CancelScope per ask), armed
                # only when the asker parks.
                slot.path = cell.path
                slot.timeout = timeout
                entry = cell.system._timer.call_after(timeout, AskSlot.expire, slot)
                try:
                    await slot.wait()
                finally:
                    cancel_timer(entry)
        error = slot.error
        if error is not None:
            raise error
        return slot.value

    async def _ask_full(self, slot: AskSlot, timeout: float | None) -> Any:  # noqa: ASYNC109
        """An ask to a full mailbox: wait for room (``Overflow.WAIT``) within the timeout."""
        cell = self._cell
        if timeout is None:
            await self._enqueue_and_wait(slot)
        else:
            with trio.move_on_after(timeout) as scope:
                await self._enqueue_and_wait(slot)
            if scope.cancelled_caught:
                raise AskTimeout(cell.path, slot.message, timeout)
        return slot.result()

    async def _enqueue_and_wait(self, slot: AskSlot) -> None:
        cell = self._cell
        mailbox = cell.mailbox
        assert mailbox is not None
        while len(mailbox) >= mailbox.capacity:
            if mailbox.overflow is not Overflow.WAIT:
                raise MailboxFull(cell.path, mailbox.capacity)
            await mailbox.wait_for_room()
            if cell.outcome is not None or mailbox.closed:
                raise ActorDead(cell.path, cell.outcome)
        mailbox.push(slot)
        await slot.wait()

    # -- lifecycle ------------------------------------------------------------------------------
    async def stop(self, *, grace: float | None = None) -> Outcome:
        """Stop the actor and its subtree; return its outcome. Always a checkpoint.

        First a stop request: the actor finishes its current message, stops its children
        (reverse start order), runs ``stopping()``. If that takes longer than ``grace``
        seconds (default: the grace it was spawned with), its whole subtree is cancelled.
        A stop you request is not an error: this returns normally with status ``STOPPED``
        (or the earlier outcome if it had already ended). If *you* are cancelled while
        waiting, the stop request stays in force and the actor still stops."""
        cell = self._cell
        if cell.task is not None and cell.task is current_task():
            raise ActorError(
                f"{cell.path} cannot await its own stop; call self.context.stop() instead"
            )
        return await cell.stop(grace)

    async def join(self) -> Outcome:
        """Wait until the actor terminates for good; return its outcome (never raises the
        actor's exception: read ``outcome.exception``). Always a checkpoint; cancelling
        the wait leaves the actor untouched."""
        await self._cell.wait_done()
        outcome = self._cell.outcome
        assert outcome is not None
        return outcome

    async def wait_running(self) -> None:
        """Wait until ``started()`` has returned (status ``RUNNING``). Raises ``ActorDead``
        if it terminates first. Always a checkpoint."""
        await self._cell.wait_running()
