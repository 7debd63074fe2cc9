"""Every exception the ``actors`` library raises, in one place.

The tree::

    Exception
    └── ActorError                      base of everything below
        ├── MailboxFull                 tell_nowait()/ask() found a full mailbox (RAISE policy,
        │                               or WAIT policy without a way to wait)
        ├── AskTimeout (+ TimeoutError) no reply within the ask's timeout; names target and type
        ├── ActorDead                   the target is terminated (or terminated while you waited)
        ├── NameTaken                   a sibling already uses that name
        ├── SystemClosed                spawn() after the system began shutting down
        ├── UnhandledMessage            the default receive() got a message it has no handler for
        ├── LinkedCrash                 an actor linked to this one crashed (``__cause__`` = why)
        └── RestartIntensityExceeded    a supervisor gave up: too many restarts in its window

Why these are plain ``Exception`` subclasses: they describe application-level failures
that a supervisor may restart from. Cancellation stays ``trio.Cancelled`` (a
``BaseException``) and is never converted into one of these, so ``except ActorError``
can never swallow a cancel.
"""

from __future__ import annotations


class ActorError(Exception):
    """Base class of every error raised by the ``actors`` library."""


class MailboxFull(ActorError):
    """The target's mailbox is at capacity and its overflow policy refuses the message.

    Raised by ``tell_nowait`` under ``Overflow.RAISE`` and ``Overflow.WAIT`` (a sync call cannot
    wait), by ``tell`` under ``Overflow.RAISE``, and by ``ask`` under ``RAISE`` or ``DROP`` (a
    dropped ask would only turn into a timeout later, so it fails now instead).
    """

    def __init__(self, path: str, capacity: int) -> None:
        super().__init__(f"mailbox of {path} is full ({capacity} messages queued)")
        self.path = path
        self.capacity = capacity


class AskTimeout(ActorError, TimeoutError):
    """No reply arrived in time. The message names the target and the message type.

    The request is withdrawn: if the target has not begun handling it, it never will; a reply
    produced after the timeout is discarded (it cannot reach a later ask by mistake).
    """

    def __init__(self, path: str, message: object, timeout: float) -> None:
        kind = type(message).__qualname__
        super().__init__(
            f"{path} did not reply to a {kind} message within {timeout:g} s "
            "(the actor may be busy with an earlier message, or its receive() never returned)"
        )
        self.path = path
        self.message_type = type(message)
        self.timeout = timeout


class ActorDead(ActorError):
    """The target actor has terminated, so it cannot take the message.

    ``outcome`` is the actor's final :class:`~actors.Outcome` (status and exception).
    """

    def __init__(self, path: str, outcome: object) -> None:
        status = getattr(getattr(outcome, "status", None), "value", "terminated")
        super().__init__(f"{path} is not running (it {status})")
        self.path = path
        self.outcome = outcome


class NameTaken(ActorError):
    """``spawn(name=...)`` used a name a live sibling already has (paths are unique)."""

    def __init__(self, path: str) -> None:
        super().__init__(f"an actor already runs at {path}; pick another name or stop it first")
        self.path = path


class SystemClosed(ActorError):
    """The actor system (or the parent actor) is stopping and accepts no new actors."""


class UnhandledMessage(ActorError):
    """The base ``Actor.receive`` was called: the subclass defines no handler for this message."""

    def __init__(self, path: str, message: object) -> None:
        super().__init__(
            f"{path} has no handler for {type(message).__qualname__} messages "
            "(override receive(), or register a handler for this type)"
        )
        self.path = path
        self.message = message


class LinkedCrash(ActorError):
    """An actor linked to this one crashed; links propagate crashes both ways.

    ``path`` names the actor that crashed first; its exception is ``__cause__``.
    """

    def __init__(self, path: str) -> None:
        super().__init__(f"linked actor {path} crashed")
        self.path = path


class RestartIntensityExceeded(ActorError):
    """A supervisor saw more than ``max_restarts`` restarts within ``within`` seconds.

    It stops all its children and fails itself, escalating to its own parent. At the top of
    the tree this ends the system and is raised from ``open_system``. ``__cause__`` is the
    last child failure.
    """

    def __init__(self, path: str, max_restarts: int, within: float) -> None:
        super().__init__(
            f"supervisor {path} exceeded {max_restarts} restart(s) within {within:g} s; "
            "giving up and escalating to its parent"
        )
        self.path = path
        self.max_restarts = max_restarts
        self.within = within
