"""The one typed event vocabulary every front end consumes.

The agent loop emits these; the console, ``nyz run`` (text, json, stream-json), the web
console, session logs and ``nyz replay`` all read them. Keeping one module (and one JSON codec)
means a live run and a replayed session go through the same code.

Conventions:

* every class has a class-level ``type`` equal to its stream-json name, and an ``agent`` field
  holding the emitting agent's path (``/agents/main``, ``/agents/main/sub-1``) so team and
  subagent output can be told apart in one stream;
* ``tool_start`` / ``tool_output_delta`` / ``tool_done`` of one call share its ``call_id``
  (the model's tool-call id), as do ``approval_request`` and the tool it asks about;
* class names are the CamelCase of ``type``. Some collide with provider stream types
  (``TextDelta``, ``Usage``, ``Retry``), so import the module: ``from nyzhi.core import events``.

``to_json`` gives a plain dict with ``type`` first, then ``agent``, then the fields in declaration
order; ``from_json`` inverts it. Both go through the one converter (``nyzhi.convert``), which is
imported at the first event serialised. Unknown types decode to ``GenericEvent`` (a newer log
read by an older nyz still replays); a known type with a missing or mistyped field raises
``EventDecodeError`` naming the type and the field.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from nyzhi import convert, records
from nyzhi.textcut import cut

if TYPE_CHECKING:
    from nyzhi.config.secrets import Redactor

MAIN_AGENT = "/agents/main"
# Teammates live at ``/team/<team>/<member>`` (their subagents below them), in both teammate
# modes: a process teammate's events are re-tagged to that path by the lead.
TEAM_ROOT = "/team"


def teammate_path(team: str, member: str) -> str:
    return f"{TEAM_ROOT}/{team}/{member}"


def root_of(path: str) -> str:
    """The root agent a path belongs to: the main agent or a teammate (``/team/t/m``)."""
    if path.startswith(TEAM_ROOT + "/"):
        return "/".join(path.split("/")[:4])
    return MAIN_AGENT



class AgentState(enum.StrEnum):
    """An agent's lifecycle status: the values of ``AgentStatus.status`` (and of the lifecycle
    hooks' ``status``, and the words a team member's status file shares with them). A
    ``StrEnum``, so events carry and serialise the plain words."""

    PENDING_INIT = "pending_init"
    RUNNING = "running"
    IDLE = "idle"
    COMPLETED = "completed"
    ERRORED = "errored"
    SHUTDOWN = "shutdown"


AGENT_STATUSES: tuple[str, ...] = tuple(s.value for s in AgentState)


class EventDecodeError(ValueError):
    """A JSON object could not be turned into an event (which type, which field, why)."""


@convert.wire(tag="type")
@records.frozen
class Event:
    """Base of all events. ``agent`` is keyword-only so subclasses keep positional fields."""

    type: ClassVar[str] = ""
    # Deltas are high-volume and fully reconstructable from the consolidated events that
    # follow them (tool_done, turn_complete); session logs skip them (see sessions.store).
    is_delta: ClassVar[bool] = False

    agent: str = attrs.field(default=MAIN_AGENT, kw_only=True)


def _session_prompt(value: Any) -> dict[str, Any]:
    """The ``prompt`` of a read ``session_start``: its environment snapshot as the object a
    live run carries (``nyzhi.core.prompt_env.Environment``), when it is one."""
    if not isinstance(value, dict):
        raise TypeError(f"must be an object, found {value!r:.80}")
    env = value.get("environment")
    if isinstance(env, dict) and env:
        from nyzhi.core.prompt_env import read_environment

        found = read_environment(env)
        if found is not None:
            return {**value, "environment": found}
    return value


@convert.wire(tag="type", read={"prompt": _session_prompt})
@records.frozen
class SessionStart(Event):
    type: ClassVar[str] = "session_start"
    session_id: str
    cwd: str = ""
    provider: str = ""
    model: str = ""
    # The system prompt's size (chars, estimated tokens), its sections and its environment
    # snapshot (an ``Environment``, reused on resume); see SessionPrompt.describe.
    prompt: dict[str, Any] = attrs.field(factory=dict)


@records.frozen
class TurnStart(Event):
    type: ClassVar[str] = "turn_start"
    turn_id: str
    prompt: str = ""


@records.frozen
class TextDelta(Event):
    type: ClassVar[str] = "text_delta"
    is_delta: ClassVar[bool] = True
    text: str


@records.frozen
class ThinkingDelta(Event):
    type: ClassVar[str] = "thinking_delta"
    is_delta: ClassVar[bool] = True
    text: str


@records.frozen
class ToolStart(Event):
    """A tool call begins. ``arguments`` is the raw JSON text the model produced."""

    type: ClassVar[str] = "tool_start"
    call_id: str
    name: str
    arguments: str = ""


@records.frozen
class ToolOutputDelta(Event):
    type: ClassVar[str] = "tool_output_delta"
    is_delta: ClassVar[bool] = True
    call_id: str
    text: str


@records.frozen
class ToolDone(Event):
    type: ClassVar[str] = "tool_done"
    call_id: str
    name: str
    output: str = ""
    is_error: bool = False
    duration_ms: float = 0.0
    metadata: dict[str, Any] = attrs.field(factory=dict)


@records.frozen
class ApprovalRequest(Event):
    """A person must allow ``call_id``; the front end answers with ``request_id``."""

    type: ClassVar[str] = "approval_request"
    request_id: str
    call_id: str
    tool: str
    summary: str = ""
    preview: str = ""


@records.frozen
class Retry(Event):
    type: ClassVar[str] = "retry"
    attempt: int
    max: int
    wait_ms: int
    reason: str = ""


@records.frozen
class Usage(Event):
    """Token use of one model call plus the running totals of the session."""

    type: ClassVar[str] = "usage"
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    total_input_tokens: int = 0
    total_output_tokens: int = 0
    total_cost_usd: float = 0.0
    # the model asked and the characters sent (system, tools, thread): a resumed session
    # calibrates its token estimate from them (nyzhi.core.loop.context_window.Calibration)
    model: str = ""
    request_chars: int = 0
    # Of output_tokens, those spent thinking (where the provider says); and the session's.
    thinking_tokens: int = 0
    total_thinking_tokens: int = 0


@records.frozen
class Compaction(Event):
    """Older history was summarised; the full history was saved to ``archived_path``.
    ``reason``: ``threshold`` (the estimate passed the compaction threshold), ``overflow``
    (the provider answered that the prompt is too long) or ``manual`` (``/compact``)."""

    type: ClassVar[str] = "compaction"
    before_tokens: int
    after_tokens: int
    summary: str = ""
    archived_path: str | None = None
    reason: str = "threshold"


def _check_status(_inst: Any, _attr: Any, value: str) -> None:
    if value not in AGENT_STATUSES:
        raise ValueError(f"agent status {value!r} is not one of {', '.join(AGENT_STATUSES)}")


@records.frozen
class AgentStatus(Event):
    """An agent's lifecycle status changed (``AgentState``). ``detail`` says why (an
    errored agent's reason, its role when it starts); ``step``, ``tokens`` and ``cost_usd`` are
    what the agent itself has used so far (a console builds its agent tree on these)."""

    type: ClassVar[str] = "agent_status"
    status: str = attrs.field(validator=_check_status)
    detail: str = ""
    step: int = 0
    tokens: int = 0
    cost_usd: float = 0.0


@records.frozen
class TurnComplete(Event):
    type: ClassVar[str] = "turn_complete"
    turn_id: str
    text: str = ""
    steps: int = 0
    stop_reason: str = "end_turn"


@records.frozen
class Error(Event):
    type: ClassVar[str] = "error"
    message: str
    kind: str = "error"
    retryable: bool = False


# ``Error.kind`` of the event reporting that a listener of the event bus raised (the session
# log on a full disk): a fault of the machine, which ``nyz run`` exits 1 for.
LISTENER_FAILED = "listener"


@records.frozen
class Notice(Event):
    """Something the person should know about the run that is not an error: ``kind``
    ``untrusted_project`` says the project's hooks (and other parts that run programs) were
    not used because nobody approved them; ``notice`` is any other start-up notice."""

    type: ClassVar[str] = "notice"
    message: str
    kind: str = "notice"


@records.frozen
class UserQuestion(Event):
    """The agent's ``ask_user`` tool waits for the front end's answer
    (``Runtime.answer_question(request_id, text)``)."""

    type: ClassVar[str] = "user_question"
    request_id: str
    call_id: str = ""
    question: str = ""
    options: tuple[dict[str, str], ...] = attrs.field(default=(), converter=records.as_tuple)
    allow_custom: bool = True


@records.frozen
class Result(Event):
    """The last line of ``nyz run --output-format json|stream-json``. ``usage`` and
    ``cost_usd`` are the whole agent tree's, ``usage_by_agent`` the same per agent path;
    ``subtype`` says how the run ended (``nyzhi.headless.run_result.ResultSubtype``: ``success``
    or why not) and ``error`` why, in words (empty on success). ``background`` lists the
    run's background processes (``id``, ``command``, ``state``): ``killed`` for those still
    running when the run ended, which killed them."""

    type: ClassVar[str] = "result"
    result: str
    session_id: str | None = None
    usage: dict[str, Any] = attrs.field(factory=dict)
    is_error: bool = False
    subtype: str = "success"
    error: str = ""
    cost_usd: float = 0.0
    usage_by_agent: dict[str, Any] = attrs.field(factory=dict)
    background: tuple[dict[str, str], ...] = attrs.field(default=(), converter=records.as_tuple)


@records.frozen
class IndexProgress(Event):
    """The semantic index service (``agent`` is its path, ``/services/index``) looked at
    ``files_done`` of ``files_total`` files, (re)embedding ``embedded`` of them (``chunks``
    chunks). ``done`` marks the last one of a build, with its ``summary``. Transient like a
    delta: session logs skip it."""

    type: ClassVar[str] = "index_progress"
    is_delta: ClassVar[bool] = True
    files_done: int
    files_total: int
    embedded: int = 0
    chunks: int = 0
    path: str = ""
    elapsed_s: float = 0.0
    done: bool = False
    summary: str = ""


@records.frozen
class TeamMessage(Event):
    """A message was delivered to a team member's inbox (``agent`` is the sender's path).
    ``kind`` is ``message`` or ``idle_notification`` (a teammate telling the lead it is idle);
    ``to`` is the recipient's member name, or ``all`` (one event for a broadcast)."""

    type: ClassVar[str] = "team_message"
    team: str
    sender: str
    to: str
    text: str = ""
    kind: str = "message"
    message_id: str = ""


@records.frozen
class TaskUpdate(Event):
    """A task on a team's board was created or changed (``agent`` is who changed it).
    ``unblocked`` lists the ids this change unblocked (a completed dependency)."""

    type: ClassVar[str] = "task_update"
    team: str
    task_id: str
    subject: str = ""
    status: str = "pending"
    owner: str | None = None
    unblocked: tuple[str, ...] = attrs.field(default=(), converter=records.as_tuple)


@records.frozen
class ProcessStart(Event):
    """A background process started (``bash`` with ``run_in_background``; ``agent`` is the
    agent that started it). ``shell_id`` is what the model names it by (``bg_1``); ``pid``
    the process nyz started (bwrap, when sandboxed)."""

    type: ClassVar[str] = "process_start"
    shell_id: str
    command: str = ""
    pid: int = 0
    tty: bool = False
    sandboxed: bool = False

    def summary(self, width: int = 100) -> str:
        """One line for a front end: ``bg_1 started: python3 -m http.server``."""
        return f"{self.shell_id} started: {cut(self.command, width)}"


@records.frozen
class ProcessOutputDelta(Event):
    """What a background process printed lately, for front ends that follow it: at most a
    few a second, each at most its last 4 KiB (``skipped`` characters before it were not
    sent; the whole output is in the shell's log file). Redacted; a delta: session logs skip
    it."""

    type: ClassVar[str] = "process_output_delta"
    is_delta: ClassVar[bool] = True
    shell_id: str
    text: str
    skipped: int = 0


@records.frozen
class ProcessExit(Event):
    """A background process ended: ``state`` is ``exited`` (on its own) or ``killed`` (by
    ``kill_shell``, its agent's end or the session's); ``exit_code`` negative for a signal."""

    type: ClassVar[str] = "process_exit"
    shell_id: str
    command: str = ""
    state: str = "exited"
    exit_code: int | None = None
    last_lines: tuple[str, ...] = attrs.field(default=(), converter=records.as_tuple)

    def summary(self, width: int = 100) -> str:
        """One line for a front end: ``bg_1 exited with code 0: make watch``."""
        how = "killed" if self.state == "killed" else f"exited with code {self.exit_code}"
        return f"{self.shell_id} {how}: {cut(self.command, width)}"


@records.frozen
class AutopilotPhase(Event):
    """An autopilot (``/autopilot``, ``nyz run --autopilot``; ``nyzhi.core.runtime.autopilot``)
    entered ``phase``: ``expand``, ``plan``, ``execute``, ``qa``, ``validate``, or the end,
    ``done`` or ``failed`` (``detail`` is then the report). ``loop`` counts the returns to
    ``execute`` after a failed QA or validation; ``detail`` says why a phase began (resumed,
    the failure handed back)."""

    type: ClassVar[str] = "autopilot_phase"
    phase: str
    goal: str = ""
    loop: int = 0
    detail: str = ""

    def summary(self, width: int = 160) -> str:
        """One line for a front end: ``autopilot execute (loop 1): why``."""
        loop = f" (loop {self.loop})" if self.loop else ""
        detail = cut(self.detail, width)
        return f"autopilot {self.phase}{loop}" + (f": {detail}" if detail else "")


def _generic_to_json(event: GenericEvent) -> dict[str, Any]:
    out: dict[str, Any] = {"type": event.type, "agent": event.agent}
    out.update((k, v) for k, v in event.data.items() if k not in out)
    return out


@convert.wire(unstructure=_generic_to_json)
@records.frozen
class GenericEvent:
    """An event of a type this version does not know; kept verbatim so replay still works."""

    type: str
    agent: str = MAIN_AGENT
    data: dict[str, Any] = attrs.field(factory=dict)
    is_delta: ClassVar[bool] = False


EVENT_CLASSES: tuple[type[Event], ...] = (
    SessionStart,
    TurnStart,
    TextDelta,
    ThinkingDelta,
    ToolStart,
    ToolOutputDelta,
    ToolDone,
    ApprovalRequest,
    UserQuestion,
    Retry,
    Usage,
    Compaction,
    AgentStatus,
    TurnComplete,
    Error,
    Notice,
    Result,
    IndexProgress,
    TeamMessage,
    TaskUpdate,
    AutopilotPhase,
    ProcessStart,
    ProcessOutputDelta,
    ProcessExit,
)

EVENT_TYPES: dict[str, type[Event]] = {cls.type: cls for cls in EVENT_CLASSES}
_SOURCES = {name: f"{name} event" for name in EVENT_TYPES}  # how a decode error names it

AnyEvent = Event | GenericEvent


def redact_event(redactor: Redactor, event: Event) -> Event:
    """``event`` with known secrets replaced in its string, list and dict fields (the same
    object when there is nothing to replace): what the bus publishes, and what a front end
    shows of events that did not come through it (a team's logs read from disk)."""
    changes = {}
    for field in attrs.fields(type(event)):
        value = getattr(event, field.name)
        redacted = redactor.redact_value(value)
        if redacted is not value:
            changes[field.name.lstrip("_")] = redacted
    return attrs.evolve(event, **changes) if changes else event


def to_json(event: AnyEvent) -> dict[str, Any]:
    """A JSON-ready dict: ``type`` first, then ``agent``, then the fields in declaration order."""
    return convert.unstructure(event)


def from_json(data: dict[str, Any]) -> AnyEvent:
    """Decode ``to_json`` output. Unknown ``type`` → ``GenericEvent``; extra keys are ignored.

    Raises:
        EventDecodeError: not an object, no ``type``, a required field missing, or a field
            value of the wrong type or one the class rejects (one line naming the field).
    """
    if not isinstance(data, dict):
        raise EventDecodeError(f"an event must be a JSON object, got {type(data).__name__}")
    type_name = data.get("type")
    if not isinstance(type_name, str) or not type_name:
        raise EventDecodeError(f"event has no 'type' string: {_short(data)}")
    cls = EVENT_TYPES.get(type_name)
    if cls is None:
        rest = {k: v for k, v in data.items() if k not in ("type", "agent")}
        return GenericEvent(type_name, str(data.get("agent", MAIN_AGENT)), rest)
    return convert.structure(data, cls, _SOURCES[type_name], EventDecodeError)


def _short(data: Any, limit: int = 120) -> str:
    text = repr(data)
    return text if len(text) <= limit else text[: limit - 3] + "..."
