"""The ACP (protocol version 1) messages nyz reads and writes, as attrs records.

Every message in and out goes through the one converter (``nyzhi.convert``): parameters are
read with ``read_params`` (a wrong or missing field is one line naming it, which becomes a
JSON-RPC "invalid params" error), results and notifications are written with
``convert.unstructure``. The wire names are camelCase (``sessionId``); ``_acp`` declares that
once per class from the field names, so a record reads like Python and writes like the spec.
Fields the spec makes optional and we leave unset are ``None`` and omitted. Keys we do not
know (``_meta``, newer fields) are ignored on the way in, as the spec asks.

Only what nyz implements is modelled; ``tests/nyzhi/acp`` checks what we write against the
official SDK, whose client validates every message against the spec's JSON schema.
"""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar

import attrs

from nyzhi import convert, records

PROTOCOL_VERSION = 1

T = TypeVar("T")


class ParamsError(ValueError):
    """Parameters that do not fit their method: one line naming the method and the field."""


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _acp(tag: str | None = None) -> Any:
    """Declare a record's wire format: camelCase keys, ``None`` fields omitted, and for a
    session update its ``sessionUpdate`` tag (or a content block's ``type``) written first."""

    def apply(cls: type) -> type:
        fields = attrs.fields(cls)
        rename = {f.name: _camel(f.name) for f in fields if "_" in f.name}
        omit = tuple(f.name for f in fields if f.default is None)
        convert.wire(cls, rename=rename, omit_if_none=omit, tag=tag, null_is_missing=True)
        return cls

    return apply


def read_params(data: Any, cls: type[T], method: str) -> T:
    """``data`` (a request's ``params``) as a ``cls``; ``ParamsError`` naming the field."""
    return convert.structure({} if data is None else data, cls, f"{method} params", ParamsError)


def write(record: Any) -> Any:
    return convert.unstructure(record)


# ---- initialize -----------------------------------------------------------------------------


@_acp()
@records.frozen
class FsCapabilities:
    read_text_file: bool = False
    write_text_file: bool = False


@_acp()
@records.frozen
class ClientCapabilities:
    fs: FsCapabilities = attrs.field(factory=FsCapabilities)
    terminal: bool = False


@_acp()
@records.frozen
class Implementation:
    name: str
    version: str = ""
    title: str | None = None


@_acp()
@records.frozen
class InitializeParams:
    protocol_version: int
    client_capabilities: ClientCapabilities = attrs.field(factory=ClientCapabilities)
    client_info: Implementation | None = None


@_acp()
@records.frozen
class PromptCapabilities:
    image: bool = False
    audio: bool = False
    embedded_context: bool = False


@_acp()
@records.frozen
class McpCapabilities:
    http: bool = False
    sse: bool = False


@_acp()
@records.frozen
class Supported:
    """A capability advertised as ``{}`` (``sessionCapabilities.list``, ``resume``, ``close``)."""


@_acp()
@records.frozen
class SessionCapabilities:
    list: Supported | None = None
    resume: Supported | None = None
    close: Supported | None = None


@_acp()
@records.frozen
class AgentCapabilities:
    load_session: bool = False
    prompt_capabilities: PromptCapabilities = attrs.field(factory=PromptCapabilities)
    mcp_capabilities: McpCapabilities = attrs.field(factory=McpCapabilities)
    session_capabilities: SessionCapabilities = attrs.field(factory=SessionCapabilities)


@_acp()
@records.frozen
class AuthMethod:
    id: str
    name: str
    description: str | None = None


@_acp()
@records.frozen
class InitializeResult:
    protocol_version: int
    agent_capabilities: AgentCapabilities
    agent_info: Implementation
    auth_methods: tuple[AuthMethod, ...] = ()


@_acp()
@records.frozen
class AuthenticateParams:
    method_id: str


# ---- sessions -------------------------------------------------------------------------------


@_acp()
@records.frozen
class NameValue:
    """An MCP server's environment variable or HTTP header."""

    name: str
    value: str


@_acp()
@records.frozen
class McpServerParams:
    """One of the client's MCP servers: stdio (``command``), or ``type`` ``http`` (``url``)."""

    name: str
    type: str = "stdio"
    command: str | None = None
    args: tuple[str, ...] = ()
    env: tuple[NameValue, ...] = ()
    url: str | None = None
    headers: tuple[NameValue, ...] = ()


@_acp()
@records.frozen
class NewSessionParams:
    cwd: str
    mcp_servers: tuple[McpServerParams, ...] = ()


@_acp()
@records.frozen
class LoadSessionParams:
    session_id: str
    cwd: str
    mcp_servers: tuple[McpServerParams, ...] = ()


@_acp()
@records.frozen
class SessionMode:
    id: str
    name: str
    description: str | None = None


@_acp()
@records.frozen
class SessionModeState:
    current_mode_id: str
    available_modes: tuple[SessionMode, ...]


@_acp()
@records.frozen
class NewSessionResult:
    session_id: str
    modes: SessionModeState | None = None


@_acp()
@records.frozen
class LoadSessionResult:
    modes: SessionModeState | None = None


@_acp()
@records.frozen
class ResumeSessionParams:
    session_id: str
    cwd: str
    mcp_servers: tuple[McpServerParams, ...] = ()


@_acp()
@records.frozen
class ListSessionsParams:
    cwd: str | None = None
    cursor: str | None = None


@_acp()
@records.frozen
class SessionInfo:
    session_id: str
    cwd: str
    title: str | None = None
    updated_at: str | None = None


@_acp()
@records.frozen
class ListSessionsResult:
    sessions: tuple[SessionInfo, ...]
    next_cursor: str | None = None


@_acp()
@records.frozen
class SessionIdParams:
    """``session/cancel``: only the session."""

    session_id: str


@_acp()
@records.frozen
class SetModeParams:
    session_id: str
    mode_id: str


# ---- prompts --------------------------------------------------------------------------------


@_acp()
@records.frozen
class EmbeddedResource:
    uri: str
    text: str | None = None
    blob: str | None = None
    mime_type: str | None = None


@_acp()
@records.frozen
class ContentBlock:
    """A prompt's content block: ``text``, ``resource_link`` (``uri``) or ``resource`` (embedded
    context); image and audio are refused with a message (we advertise neither)."""

    type: str
    text: str | None = None
    uri: str | None = None
    name: str | None = None
    resource: EmbeddedResource | None = None
    mime_type: str | None = None
    data: str | None = None


@_acp()
@records.frozen
class PromptParams:
    session_id: str
    prompt: tuple[ContentBlock, ...]


@_acp()
@records.frozen
class PromptResult:
    stop_reason: str


# ---- session/update -------------------------------------------------------------------------


@_acp()
@records.frozen
class TextContent:
    text: str
    type: str = "text"


class Update:
    """Base of the ``update`` of a ``session/update`` notification (tagged ``sessionUpdate``)."""

    sessionUpdate: ClassVar[str] = ""  # noqa: N815 - the wire tag


@_acp(tag="sessionUpdate")
@records.frozen
class UserMessageChunk(Update):
    sessionUpdate: ClassVar[str] = "user_message_chunk"  # noqa: N815 - the wire tag
    content: TextContent


@_acp(tag="sessionUpdate")
@records.frozen
class AgentMessageChunk(Update):
    sessionUpdate: ClassVar[str] = "agent_message_chunk"  # noqa: N815 - the wire tag
    content: TextContent


@_acp(tag="sessionUpdate")
@records.frozen
class AgentThoughtChunk(Update):
    sessionUpdate: ClassVar[str] = "agent_thought_chunk"  # noqa: N815 - the wire tag
    content: TextContent


@_acp()
@records.frozen
class ToolCallContent:
    """``content`` (text), ``diff`` (``path``, ``old_text``, ``new_text``) or ``terminal``
    (``terminal_id``: a client terminal the editor shows live)."""

    type: str = "content"
    content: TextContent | None = None
    path: str | None = None
    old_text: str | None = None
    new_text: str | None = None
    terminal_id: str | None = None


@_acp()
@records.frozen
class ToolCallLocation:
    path: str
    line: int | None = None


@_acp(tag="sessionUpdate")
@records.frozen
class ToolCall(Update):
    sessionUpdate: ClassVar[str] = "tool_call"  # noqa: N815 - the wire tag
    tool_call_id: str
    title: str
    kind: str = "other"
    status: str = "pending"
    content: tuple[ToolCallContent, ...] = ()
    locations: tuple[ToolCallLocation, ...] = ()
    raw_input: dict[str, Any] | None = None


@_acp()
@records.frozen
class ToolCallFields:
    """What a ``tool_call_update`` (and a permission request's ``toolCall``) says."""

    tool_call_id: str
    title: str | None = None
    kind: str | None = None
    status: str | None = None
    content: tuple[ToolCallContent, ...] | None = None
    locations: tuple[ToolCallLocation, ...] | None = None


@_acp(tag="sessionUpdate")
@records.frozen
class ToolCallUpdate(ToolCallFields, Update):
    sessionUpdate: ClassVar[str] = "tool_call_update"  # noqa: N815 - the wire tag


@_acp()
@records.frozen
class PlanEntry:
    content: str
    priority: str = "medium"
    status: str = "pending"


@_acp(tag="sessionUpdate")
@records.frozen
class Plan(Update):
    sessionUpdate: ClassVar[str] = "plan"  # noqa: N815 - the wire tag
    entries: tuple[PlanEntry, ...]


@_acp()
@records.frozen
class CommandInput:
    hint: str


@_acp()
@records.frozen
class AvailableCommand:
    name: str
    description: str
    input: CommandInput | None = None


@_acp(tag="sessionUpdate")
@records.frozen
class AvailableCommandsUpdate(Update):
    sessionUpdate: ClassVar[str] = "available_commands_update"  # noqa: N815 - the wire tag
    available_commands: tuple[AvailableCommand, ...]


@_acp(tag="sessionUpdate")
@records.frozen
class CurrentModeUpdate(Update):
    sessionUpdate: ClassVar[str] = "current_mode_update"  # noqa: N815 - the wire tag
    current_mode_id: str


def _update_out(update: Update) -> Any:
    return convert.unstructure(update)  # by its own class, not the field's declared base


@records.frozen
class SessionNotification:
    session_id: str
    update: Any


convert.wire(SessionNotification, rename={"session_id": "sessionId"}, write={"update": _update_out})


def prepare_updates() -> None:
    """Generate the converter's functions for every update (and a permission request) now:
    called when a session opens, so a prompt's first streamed chunk does not pay for it."""
    classes: list[type] = []
    pending = list(Update.__subclasses__())
    while pending:
        cls = pending.pop()
        classes.append(cls)
        pending.extend(cls.__subclasses__())
    convert.prepare(SessionNotification, *classes, RequestPermissionParams)


# ---- requests to the client -----------------------------------------------------------------


@_acp()
@records.frozen
class PermissionOption:
    option_id: str
    name: str
    kind: str


@_acp()
@records.frozen
class RequestPermissionParams:
    session_id: str
    tool_call: ToolCallFields
    options: tuple[PermissionOption, ...]


@_acp()
@records.frozen
class PermissionOutcome:
    outcome: str
    option_id: str | None = None


@_acp()
@records.frozen
class RequestPermissionResult:
    outcome: PermissionOutcome


@_acp()
@records.frozen
class ReadTextFileParams:
    session_id: str
    path: str
    line: int | None = None
    limit: int | None = None


@_acp()
@records.frozen
class ReadTextFileResult:
    content: str


@_acp()
@records.frozen
class WriteTextFileParams:
    session_id: str
    path: str
    content: str


@_acp()
@records.frozen
class CreateTerminalParams:
    session_id: str
    command: str
    args: tuple[str, ...] = ()
    env: tuple[NameValue, ...] = ()
    cwd: str | None = None
    output_byte_limit: int | None = None


@_acp()
@records.frozen
class CreateTerminalResult:
    terminal_id: str


@_acp()
@records.frozen
class TerminalParams:
    """``terminal/output``, ``terminal/wait_for_exit``, ``terminal/kill``, ``terminal/release``."""

    session_id: str
    terminal_id: str


@_acp()
@records.frozen
class TerminalExitStatus:
    """How a client terminal's command ended (also ``terminal/wait_for_exit``'s result)."""

    exit_code: int | None = None
    signal: str | None = None


@_acp()
@records.frozen
class TerminalOutputResult:
    output: str = ""
    truncated: bool = False
    exit_status: TerminalExitStatus | None = None
