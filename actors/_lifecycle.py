"""The one task that runs each actor, incarnation after incarnation.

Task layout (why it is flat): every actor is ONE task in the system's nursery, with its own
``CancelScope`` (trio has no per-task cancel). No actor owns a nursery: a nursery per actor
nearly doubles its memory, and the tree is kept as data (``children``) instead. That tree
drives shutdown: an incarnation ends by (1) leaving its message loop, (2) stopping its
children in reverse start order, (3) running ``stopping()``, (4) cancelling its background
tasks. A hard cancel (grace expired) cancels the whole subtree at once and then waits for
it, shielded, so no task outlives its actor.

Every scope an actor runs in is *shielded*: only this library cancels actors. A
cancellation from outside the system (the block around ``open_system`` is cancelled) does
not tear actors down mid-message; it cancels the block's body, and the system's shutdown
then stops every actor in order, each within its grace.

An actor that is *idle* when stopped (parked waiting for a message, with no children, no
background work and no ``stopping()`` hook) has an empty stop sequence, so the stopper ends
it in place (``Cell._stop_idle``) and wakes its task, which then only returns. Stopping a
tree of idle actors thus costs no scheduler round trip per actor, and the order (reverse
start order, children first) is the order in which the stopper reaches them.

This module only sequences the steps; the state they change lives in ``_cell.py``.
"""

from __future__ import annotations

import trio
from trio.lowlevel import current_task

from ._actor import Actor, Context
from ._cell import NO_RESTART, STOPPED, STOPPED_OUTCOME, Cell
from ._errors import ActorDead, UnhandledMessage
from ._mailbox import AskSlot
from ._restart import supervise_exit
from ._types import Outcome, Status

#: Messages handled before the loop takes a checkpoint, so one busy actor cannot starve others.
#: Each checkpoint costs a scheduler batch and, under backpressure, a wake-up of the waiting
#: sender (~4 µs together): at 64 that was a tenth of a flooded actor's time per message, at
#: 128 it is half that, and 128 trivial messages still hold the thread for only ~50 µs.
BATCH = 128
_BATCH = range(BATCH)  # iterated: cheaper per message than counting

_BASE_STARTED = Actor.started
_BASE_RESTARTED = Actor.restarted
_BASE_STOPPING = Actor.stopping


async def run_cell(cell: Cell) -> None:
    """The body of an actor's task (started by the system for every spawned cell).

    Each pass of the loop is one incarnation: construct and start the instance and run its
    message loop inside the incarnation's shielded scope, then its stop sequence and the
    restart decision (``_after_incarnation``). The message loop (``_drain``) returns
    whenever the mailbox is empty and the actor parks here, so an idle actor's task holds
    this one frame and trio's parking, not a frame of the loop as well. The frame is kept
    small on purpose (one local besides the cell; the incarnation's state lives in the
    cell): trio keeps a frame object of a task's first coroutine, so every slot of this
    frame is paid twice by every idle actor."""
    cell.bind(current_task(), Context(cell))
    outcome: Outcome | None = None
    try:
        while outcome is None:
            with cell.begin_incarnation():
                if await _start_instance(cell):
                    while await _drain(cell):  # then idle until a message, stop or kill:
                        await cell.mailbox.wait()  # type: ignore[union-attr]
            outcome = await _after_incarnation(cell)
    finally:
        cell.finish(outcome or STOPPED_OUTCOME)


async def _after_incarnation(cell: Cell) -> Outcome | None:
    """Run the ended incarnation's stop sequence and decide what follows: the outcome the
    cell ends with, or ``None`` when it starts another incarnation."""
    result = await _end_incarnation(cell)
    if result is None:  # stopped by a group restart: wait for the go-ahead
        reason = await cell.await_resume()
        if reason is STOPPED:
            return cell.requested_outcome()
    else:
        if result.status is Status.STOPPED:
            return result
        cell.set_exiting(True)
        try:
            reason = await supervise_exit(cell, result)
        except BaseException:
            cell.finish(result)  # cancelled while deciding: the task ends with this outcome
            raise
        finally:
            cell.set_exiting(False)
        if reason is NO_RESTART:
            return result
    cell.prepare_restart(reason)
    return None


def _instantiate(cell: Cell) -> Actor:
    context = cell.context
    assert context is not None
    factory = cell.factory
    if isinstance(factory, type) and issubclass(factory, Actor):
        inst = factory.__new__(factory)
        inst._context = context
        inst.__init__(*cell.args)  # type: ignore[misc]
    else:
        inst = factory(*cell.args)
        if not isinstance(inst, Actor):
            raise TypeError(
                f"{cell.path}: the factory returned {type(inst).__qualname__}, not an actors.Actor"
            )
        inst._context = context
    return inst


async def _start_instance(cell: Cell) -> bool:
    """Construct the incarnation's instance and run its ``restarted``/``started`` hooks.

    False when there is nothing to run: a stop or a group restart came first, or the start
    failed (recorded with :meth:`Cell.failed`)."""
    if cell.stop_kind is not None or cell.hold is not None:
        return False
    try:
        inst = _instantiate(cell)
        kind = type(inst)
        # The base class's hooks do nothing: skip them (no coroutine to create).
        cell.adopt(inst, inst.stopping if kind.stopping is not _BASE_STOPPING else None)
        reason = cell.take_restart_reason()
        if reason is not NO_RESTART and kind.restarted is not _BASE_RESTARTED:
            await inst.restarted(reason)
        if kind.started is not _BASE_STARTED:
            await inst.started()
    except Exception as exc:
        cell.failed(exc)
        return False
    cell.mark_running()
    return True


async def _end_incarnation(cell: Cell) -> Outcome | None:
    """After the message loop: stop children, run ``stopping()``, reap background work.

    Returns the incarnation's outcome, or ``None`` when a group restart stopped it (the
    caller waits to be resumed)."""
    if cell.outcome is not None:  # stopped while idle: the stopper did the rest
        return cell.outcome
    error = cell.take_failure()
    cell.end_loop()
    if cell.children or cell.hook is not None:
        stop_error = await cell.stop_sequence(cell.hook)
        if error is None:
            error = stop_error
    if cell.bg or cell.children:
        await cell.reap()
    return cell.end_incarnation(error)


async def _drain(cell: Cell) -> bool:
    """Handle messages (and system notices) until the mailbox is empty: then True, for the
    caller to park and call again. False when the incarnation must end (a stop, a group
    restart holds it, or ``receive`` raised: recorded with :meth:`Cell.failed`)."""
    inst = cell.instance
    if inst is None:  # stopped while idle: finish() already let go of the instance
        return False
    mailbox = cell.mailbox
    assert mailbox is not None
    receive = inst.receive
    try:
        while True:
            for _ in _BATCH:
                if cell.sysq:
                    for notice in cell.take_notices() or ():
                        await receive(notice)
                if cell.stop_kind is not None or cell.hold is not None:
                    return False
                # Take the next item (the mailbox's pop, inline: see _mailbox).
                items = mailbox.items
                if items is None:
                    return True
                head = mailbox.head
                item = items[head]
                head += 1
                if head == len(items):
                    mailbox.items = None  # drained: an empty mailbox holds no list
                    mailbox.head = 0
                else:
                    items[head - 1] = None  # drop our reference to the taken message
                    if head >= 4096 and head * 2 >= len(items):
                        del items[:head]  # a long-lived backlog: reclaim the consumed front
                        head = 0
                    mailbox.head = head
                if mailbox.senders:  # the longest waiting sender: there is room now
                    trio.lowlevel.reschedule(mailbox.senders.popleft())
                if type(item) is not AskSlot:
                    await receive(item)
                elif item.task is not None:  # the asker may have given up already
                    try:
                        value = await receive(item.message)
                    except Exception as exc:
                        item.fail(exc)
                        # An ask the actor does not understand is the asker's error, not a
                        # crash.
                        if inst.crash_on_ask_error and not isinstance(exc, UnhandledMessage):
                            raise
                    except BaseException:  # cancelled mid-request: the asker must not hang
                        item.fail(ActorDead(cell.path, None))
                        raise
                    else:
                        item.reply(value)
            await trio.lowlevel.checkpoint()
    except Exception as exc:
        cell.failed(exc)
        return False
