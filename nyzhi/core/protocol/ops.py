"""What a front end may ask of a session: the ops, as typed records.

Every front end turns its input (a key, a slash command, a JSON-RPC request, a WebSocket
message) into one of these and hands it to ``Session.submit``; nothing else of the runtime
crosses the boundary. They are plain attrs records through the one converter
(``nyzhi.convert``), tagged by ``op``, so an op read from JSON (``read_op``) is checked field
by field with one line naming the field, and an op written (``write_op``) reads back the same.
"""

from __future__ import annotations

import enum
from typing import Any, ClassVar

import attrs

from nyzhi import convert, records
from nyzhi.config.modes import TrustMode as TrustMode  # what ``SetTrust.mode`` names

MAIN_AGENT = "/agents/main"  # nyzhi.core.events.MAIN_AGENT, without importing the events here
CANCEL_SCOPES = ("turn", "subtree")


class ApprovalAnswer(enum.StrEnum):
    """A person's answer to an ``approval_request``."""

    APPROVE = "approve"
    ALWAYS = "always"  # approve, and this tool for the rest of the session
    DENY = "deny"

    @classmethod
    def parse(cls, value: ApprovalAnswer | str) -> ApprovalAnswer:
        """The answer ``value`` names; a typo is an error, never a silent deny."""
        try:
            return cls(value)
        except ValueError:
            choices = ", ".join(a.value for a in cls)
            raise ValueError(f"approval answer {value!r} is not one of {choices}") from None


class OpError(ValueError):
    """An op that cannot be read or applied; ``str()`` is one line for the person."""


@convert.wire(tag="op", null_is_missing=True)
@records.frozen
class Op:
    """Base of every op; ``op`` is its tag on the wire."""

    op: ClassVar[str] = ""


def _one_of(choices: tuple[str, ...]) -> Any:
    def check(_inst: Any, attr: attrs.Attribute, value: str) -> None:
        if value not in choices:
            raise OpError(f"{attr.name} must be one of {', '.join(choices)}, not {value!r}")
    return check


@records.frozen
class UserTurn(Op):
    """Text (with attachments: image paths or parts) for the agent at ``agent``: the main
    agent's next turn, a subagent's next input, or a teammate's inbox."""

    op: ClassVar[str] = "user_turn"
    text: str
    attachments: tuple[Any, ...] = attrs.field(default=(), converter=records.as_tuple)
    agent: str = MAIN_AGENT


@records.frozen
class Interrupt(Op):
    """Cancel the running turn of ``agent`` (``scope="turn"``) or of it and every agent
    under it (``"subtree"``, Esc/Ctrl-C on the main agent). Threads are kept."""

    op: ClassVar[str] = "interrupt"
    agent: str = MAIN_AGENT
    scope: str = attrs.field(default="subtree", validator=_one_of(CANCEL_SCOPES))


@records.frozen
class Approve(Op):
    """The answer to an ``approval_request``: approve, always (this session) or deny."""

    op: ClassVar[str] = "approve"
    request_id: str
    answer: str = attrs.field(default="approve",
                              validator=_one_of(tuple(a.value for a in ApprovalAnswer)))


@records.frozen
class Answer(Op):
    """The answer to a ``user_question`` (the agent's ``ask_user``)."""

    op: ClassVar[str] = "answer"
    request_id: str
    text: str


@records.frozen
class SetTrust(Op):
    """A trust mode (a ``TrustMode``: off, limited, autoedit, full, or an alias ``--trust``
    takes), checked where it is applied (``Runtime.set_trust``). A front end that offers the
    modes (ACP's mode list) names them by ``TrustMode``, imported from here."""

    op: ClassVar[str] = "set_trust"
    mode: str


@records.frozen
class SetPlanMode(Op):
    """Plan mode on (read-only tools) or off; leaving it with a plan written sends the
    message that executes the plan."""

    op: ClassVar[str] = "set_plan_mode"
    on: bool


@records.frozen
class SetModel(Op):
    """Another model of the same provider from the main agent's next request."""

    op: ClassVar[str] = "set_model"
    model: str


@records.frozen
class SetThinking(Op):
    """A thinking level (off, low, medium, high) or a token budget; None: as configured."""

    op: ClassVar[str] = "set_thinking"
    level: str | int | None = None


@records.frozen
class RunCommand(Op):
    """A slash command line, run from the one command table against the front end's host."""

    op: ClassVar[str] = "run_command"
    line: str


@records.frozen
class MessageAgent(Op):
    """A message to the agent at ``path`` (a subagent's input, a teammate's inbox)."""

    op: ClassVar[str] = "message_agent"
    path: str
    text: str


@records.frozen
class ResumeAgent(Op):
    """Start a closed subagent again on its kept thread (the console's ``r`` in the tree)."""

    op: ClassVar[str] = "resume_agent"
    path: str


@records.frozen
class RunShell(Op):
    """``!cmd``: one ``bash`` call through the main agent's own gated tool step (trust, deny
    rules, sandbox, hooks, approval), shown as a tool call; its output goes to the model with
    the next prompt, as context (Claude Code's bash mode)."""

    op: ClassVar[str] = "run_shell"
    command: str


@records.frozen
class Compact(Op):
    """Summarise the older history now; ``hint`` says what the summary must keep (``/compact
    HINT``, as Claude Code's), beside ``[agent] compact_instructions``."""

    op: ClassVar[str] = "compact"
    hint: str = ""


@records.frozen
class Rewind(Op):
    """Revert the file changes of the last tool call (``all``: of the whole last turn)."""

    op: ClassVar[str] = "rewind"
    all: bool = False


@records.frozen
class Shutdown(Op):
    """End the session: cancel every turn; the front end then leaves ``open_runtime``."""

    op: ClassVar[str] = "shutdown"


OPS: dict[str, type[Op]] = {cls.op: cls for cls in (
    UserTurn, Interrupt, Approve, Answer, SetTrust, SetPlanMode, SetModel, SetThinking,
    RunCommand, MessageAgent, ResumeAgent, RunShell, Compact, Rewind, Shutdown)}


def read_op(data: Any) -> Op:
    """An op from its JSON value; ``OpError`` (one line naming the field) when it is not one."""
    if not isinstance(data, dict):
        raise OpError("an op must be a JSON object")
    kind = data.get("op")
    cls = OPS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise OpError(f"unknown op {kind!r}; expected one of {', '.join(OPS)}")
    return convert.structure(data, cls, f"{kind} op", OpError)


def write_op(op: Op) -> dict[str, Any]:
    return convert.unstructure(op)
