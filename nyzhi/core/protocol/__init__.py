"""The session protocol: what crosses between the runtime and a front end.

Ops in (``ops``: typed records a front end submits, with ``ApprovalAnswer`` for the
approve op), events out (``events``: ``nyzhi.core.events``, the one vocabulary, with
``redact_event`` for a front end's own events), a status snapshot (``status``) with its one
line and one card, ``describe_error`` (any failure as the one line a person is shown), and
the slash commands (``protocol.commands``: the one command table a ``run_command`` op runs).
A front end holds a ``Session`` (``session``) on the runtime ``open_runtime`` gives it and
talks to the runtime through it alone (the layering test holds the front ends to that).

Importing it is cheap: attrs records and the event classes every front end renders anyway;
the runtime is imported by whoever opens one, the command table by ``protocol.commands``.
"""

from __future__ import annotations

from nyzhi.core import events
from nyzhi.core.errors import describe_error
from nyzhi.core.protocol import ops
from nyzhi.core.protocol.ops import ApprovalAnswer
from nyzhi.core.protocol.session import Applied, Session, session_kept, session_status
from nyzhi.core.protocol.status import (
    AgentLine,
    SessionStatus,
    context_share,
    status_card,
    status_line,
)

__all__ = ["AgentLine", "Applied", "ApprovalAnswer", "Session", "SessionStatus",
           "context_share", "describe_error", "events", "ops", "session_kept", "session_status",
           "status_card", "status_line"]
