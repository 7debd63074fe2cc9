"""The session protocol: what crosses between the runtime and a front end.

Ops in (``ops``: typed records a front end submits, with ``ApprovalAnswer`` for the
approve op), events out (``events``: ``nyzhi.core.events``, the one vocabulary), a status
snapshot (``status``) with its one line and one card, ``describe_error`` (any failure as the
one line a person is shown) and ``failure_kind`` (whether a turn's exception came from the
model call or the tool step: ``failure``), the slash commands (``protocol.commands``: the one
command table a ``run_command`` op runs), the one dispatch from an event to a front end's
handler (``protocol.renderer``), the activity line of a working model (``protocol.activity``),
the saved sessions (``saved``: whether one is kept, the list, one's recorded events), a
running team seen from its files (``team_view``: what ``nyz serve --team`` shows and
messages, without becoming the team's lead), a prompt's ``@path`` files and pasted images
(``prompt``), an autopilot driven to its end (``autopilot``) and commands run in a front
end's own process, confined as the session's bash would be (``elsewhere``). A front end
holds a ``Session`` (``session``) on the runtime ``open_runtime`` gives it and talks to the
runtime through it alone (the layering test holds the front ends to that).

Importing it costs only the events every front end renders anyway: the ops, the status and
the session load on first use (``nyz run``'s printer needs only the events before its first
request), each by a literal import below.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from nyzhi.core import events
from nyzhi.core.errors import describe_error

if TYPE_CHECKING:
    from nyzhi.core.protocol import ops as ops
    from nyzhi.core.protocol.failure import FailureKind as FailureKind
    from nyzhi.core.protocol.failure import failure_kind as failure_kind
    from nyzhi.core.protocol.ops import ApprovalAnswer as ApprovalAnswer
    from nyzhi.core.protocol.saved import SessionError as SessionError
    from nyzhi.core.protocol.saved import recorded_events as recorded_events
    from nyzhi.core.protocol.saved import saved_sessions as saved_sessions
    from nyzhi.core.protocol.saved import session_kept as session_kept
    from nyzhi.core.protocol.session import Applied as Applied
    from nyzhi.core.protocol.session import ScreenlessHost as ScreenlessHost
    from nyzhi.core.protocol.session import Session as Session
    from nyzhi.core.protocol.session import session_status as session_status
    from nyzhi.core.protocol.status import AgentLine as AgentLine
    from nyzhi.core.protocol.status import SessionStatus as SessionStatus
    from nyzhi.core.protocol.status import context_share as context_share
    from nyzhi.core.protocol.status import status_card as status_card
    from nyzhi.core.protocol.status import status_line as status_line

_SESSION = ("Applied", "ScreenlessHost", "Session", "session_status")
_FAILURE = ("FailureKind", "failure_kind")
_SAVED = ("SessionError", "recorded_events", "saved_sessions", "session_kept")
_STATUS = ("AgentLine", "SessionStatus", "context_share", "status_card", "status_line")


def __getattr__(name: str) -> Any:
    # by literal names (``from . import x`` here would ask this hook again for ``x``)
    if name == "ops" or name == "ApprovalAnswer":
        module = importlib.import_module("nyzhi.core.protocol.ops")
        value = module if name == "ops" else module.ApprovalAnswer
    elif name in _SESSION:
        value = getattr(importlib.import_module("nyzhi.core.protocol.session"), name)
    elif name in _FAILURE:
        value = getattr(importlib.import_module("nyzhi.core.protocol.failure"), name)
    elif name in _SAVED:
        value = getattr(importlib.import_module("nyzhi.core.protocol.saved"), name)
    elif name in _STATUS:
        value = getattr(importlib.import_module("nyzhi.core.protocol.status"), name)
    else:
        raise AttributeError(f"module 'nyzhi.core.protocol' has no attribute {name!r}")
    globals()[name] = value  # later lookups skip __getattr__
    return value


__all__ = ["AgentLine", "Applied", "ApprovalAnswer", "FailureKind", "ScreenlessHost", "Session",
           "SessionError", "SessionStatus", "context_share", "describe_error", "events",
           "failure_kind", "ops", "recorded_events", "saved_sessions", "session_kept",
           "session_status", "status_card", "status_line"]
