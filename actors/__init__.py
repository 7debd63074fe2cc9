"""Supervised actors on trio: ``async with actors.open_system() as system: ...``.

Thin public face (no logic here): every name is defined in a private module and re-exported.
``actors.testing`` holds helpers for tests of code built on this library.
Imports only trio and attrs, so it can be used in any trio program.
"""

from ._actor import Actor as Actor
from ._actor import Context as Context
from ._errors import ActorDead as ActorDead
from ._errors import ActorError as ActorError
from ._errors import AskTimeout as AskTimeout
from ._errors import LinkedCrash as LinkedCrash
from ._errors import MailboxFull as MailboxFull
from ._errors import NameTaken as NameTaken
from ._errors import RestartIntensityExceeded as RestartIntensityExceeded
from ._errors import SystemClosed as SystemClosed
from ._errors import UnhandledMessage as UnhandledMessage
from ._events import ActorEvent as ActorEvent
from ._events import EventKind as EventKind
from ._events import EventStream as EventStream
from ._ref import DEFAULT_ASK_TIMEOUT as DEFAULT_ASK_TIMEOUT
from ._ref import ActorRef as ActorRef
from ._supervisor import StartChild as StartChild
from ._supervisor import StopChild as StopChild
from ._supervisor import Supervisor as Supervisor
from ._supervisor import WhichChildren as WhichChildren
from ._system import ActorSystem as ActorSystem
from ._system import open_system as open_system
from ._types import DEFAULT_GRACE as DEFAULT_GRACE
from ._types import DEFAULT_MAILBOX_SIZE as DEFAULT_MAILBOX_SIZE
from ._types import DEFAULT_MAX_RESTARTS as DEFAULT_MAX_RESTARTS
from ._types import DEFAULT_WITHIN as DEFAULT_WITHIN
from ._types import Backoff as Backoff
from ._types import ChildSpec as ChildSpec
from ._types import Outcome as Outcome
from ._types import Overflow as Overflow
from ._types import Restart as Restart
from ._types import Status as Status
from ._types import Strategy as Strategy
from ._types import Supervision as Supervision
from ._types import Terminated as Terminated

__all__ = [
    "DEFAULT_ASK_TIMEOUT", "DEFAULT_GRACE", "DEFAULT_MAILBOX_SIZE", "DEFAULT_MAX_RESTARTS",
    "DEFAULT_WITHIN", "Actor", "ActorDead", "ActorError", "ActorEvent", "ActorRef",
    "ActorSystem", "AskTimeout", "Backoff", "ChildSpec", "Context", "EventKind", "EventStream",
    "LinkedCrash", "MailboxFull", "NameTaken", "Outcome", "Overflow", "Restart",
    "RestartIntensityExceeded", "StartChild", "Status", "StopChild", "Strategy", "Supervision",
    "Supervisor", "SystemClosed", "Terminated", "UnhandledMessage", "WhichChildren",
    "open_system",
]  # fmt: skip
