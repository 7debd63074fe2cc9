"""The live-session wire format (the web page's WebSocket, ``nyz attach``'s socket): every message is a JSON object with a ``type``, encoded and
checked by the one converter (``nyzhi.convert``), so a client can rely on field names and a
malformed message is refused with one line naming the field.

After the handshake the client speaks first, with ``hello`` (its protocol version, the
session to attach to, the last sequence number it has). The server
answers ``welcome`` (the protocol version it speaks, the session, the command table), a
``state`` snapshot, then every event since ``since`` as ``event`` messages, then live ones.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

import attrs

from nyzhi import convert, records

PROTOCOL = 1
SERVER = "nyzhi"

# Cancel scopes a client may name: "turn" and "agent" stop the agent's running turn,
# "subtree" that agent's and every agent's under it.
CANCEL_SCOPES = ("turn", "agent", "subtree")


class ProtocolError(ValueError):
    """A client message that cannot be served; ``str()`` is one line for the client."""


@convert.wire(tag="type")
@records.frozen
class Message:
    """Base of every message on the wire, both ways."""

    type: ClassVar[str] = ""


# ---- client -> server ---------------------------------------------------------------------


@convert.wire(tag="type", omit_if_none=("session",), null_is_missing=True)
@records.frozen
class Hello(Message):
    """The client's first message. ``session``: a session id to attach to, ``"new"`` for a
    new session, absent for the server's first session. ``since``: the sequence number of the
    last event the client has (0: none), so a reconnect gets only what it missed."""

    type: ClassVar[str] = "hello"
    protocol: int
    session: str | None = None
    since: int = 0


@convert.wire(tag="type", null_is_missing=True)
@records.frozen
class SendMessage(Message):
    """User input for the agent at ``agent`` (the main agent by default)."""

    type: ClassVar[str] = "message"
    text: str
    agent: str = "/agents/main"


@convert.wire(tag="type", null_is_missing=True)
@records.frozen
class Cancel(Message):
    type: ClassVar[str] = "cancel"
    agent: str = "/agents/main"
    scope: str = attrs.field(default="subtree")

    @scope.validator  # pyright: ignore[reportAttributeAccessIssue]  (attrs' field decorator)
    def _check(self, _attr: Any, value: str) -> None:
        if value not in CANCEL_SCOPES:
            raise ValueError(f"scope must be one of {', '.join(CANCEL_SCOPES)}, not {value!r}")


@records.frozen
class Approve(Message):
    """``answer``: approve, always (this tool for the rest of the session) or deny."""

    type: ClassVar[str] = "approve"
    request_id: str
    answer: str = "approve"


@records.frozen
class Answer(Message):
    """The answer to a ``user_question`` event (the agent's ``ask_user``)."""

    type: ClassVar[str] = "answer"
    request_id: str
    text: str


@records.frozen
class Command(Message):
    """A slash command line (``/status``), run from the one command table."""

    type: ClassVar[str] = "command"
    line: str


@records.frozen
class SetTrust(Message):
    """Set the session's trust mode (off, limited, autoedit, full), as ``/trust`` does."""

    type: ClassVar[str] = "set_trust"
    mode: str


@records.frozen
class SetPlanMode(Message):
    """Plan mode on or off, as ``/plan`` does (leaving it runs the plan written)."""

    type: ClassVar[str] = "set_plan_mode"
    on: bool


@records.frozen
class KillShell(Message):
    """Kill a background process (``bash`` run_in_background) by its id, as ``kill_shell``."""

    type: ClassVar[str] = "kill_shell"
    id: str


CLIENT_MESSAGES: dict[str, type[Message]] = {
    cls.type: cls for cls in (Hello, SendMessage, Cancel, Approve, Answer, Command, SetTrust,
                              SetPlanMode, KillShell)}


# ---- server -> client ---------------------------------------------------------------------


@records.frozen
class Welcome(Message):
    type: ClassVar[str] = "welcome"
    protocol: int
    server: str
    version: str
    session_id: str
    sessions: tuple[str, ...] = attrs.field(default=(), converter=records.as_tuple)
    commands: tuple[dict[str, str], ...] = attrs.field(default=(), converter=records.as_tuple)


@records.frozen
class AgentNode(Message):
    """One agent of the live tree (``state.agents``)."""

    type: ClassVar[str] = "agent"
    path: str
    status: str = "idle"
    detail: str = ""
    step: int = 0
    tokens: int = 0
    cost_usd: float = 0.0


@records.frozen
class State(Message):
    """What a viewer needs before the events: the tree, what waits for an answer, whether
    the main agent is busy, the status line, and the sequence number of the last event.
    ``first_seq`` is the oldest event still kept (older ones were dropped from memory)."""

    type: ClassVar[str] = "state"
    session_id: str
    seq: int
    first_seq: int
    busy: bool
    status: str
    provider: str
    model: str
    cwd: str
    agents: tuple[AgentNode, ...] = attrs.field(default=(), converter=records.as_tuple)
    pending: tuple[dict[str, Any], ...] = attrs.field(default=(), converter=records.as_tuple)


@records.frozen
class EventMessage(Message):
    """One runtime event (``nyzhi.core.events``, as in stream-json), numbered from 1."""

    type: ClassVar[str] = "event"
    seq: int
    event: dict[str, Any]


@records.frozen
class Output(Message):
    """A line a slash command showed (``kind``: body, notice, error, added, removed)."""

    type: ClassVar[str] = "output"
    kind: str
    text: str


@records.frozen
class Resolved(Message):
    """An approval or question was answered (by any viewer): close its dialog."""

    type: ClassVar[str] = "resolved"
    request_id: str


@records.frozen
class ErrorMessage(Message):
    """A client message was refused or failed; one line, never a traceback."""

    type: ClassVar[str] = "error"
    message: str


def encode(message: Message) -> str:
    return json.dumps(convert.unstructure(message), ensure_ascii=False)


def decode(text: str | bytes) -> Message:
    """A client message from its JSON text. Raises ``ProtocolError`` (one line)."""
    try:
        data = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ProtocolError("a message must be a JSON object")
    kind = data.get("type")
    cls = CLIENT_MESSAGES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ProtocolError(f"unknown message type {kind!r}; expected one of "
                            + ", ".join(CLIENT_MESSAGES))
    return convert.structure(data, cls, f"{kind} message", ProtocolError)
