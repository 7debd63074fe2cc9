"""The provider-neutral conversation and stream vocabulary.

Every wire adapter (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages, Gemini,
Ollama) translates between these types and its own JSON. The agent loop, sessions and front
ends only ever see these, so adding a wire format never touches them.

Stream events are what ``Provider.stream`` yields, in order: any number of text, thinking and
tool-call events, then at most one ``Usage`` and exactly one ``Stop``. Retries happening inside
a provider surface as ``Retry`` events so the caller can show them.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any, Literal, Protocol, runtime_checkable

import attrs

from nyzhi import records

Role = Literal["system", "user", "assistant", "tool"]


@records.frozen
class ToolCall:
    """One call the model asked for. ``arguments`` is the raw JSON text the model produced."""

    id: str
    name: str
    arguments: str


@records.frozen
class ImagePart:
    """An image in a message: its bytes as read (PNG, JPEG, GIF or WebP) and their type.
    Each wire format encodes it its own way (``nyzhi.provider.images``), downscaled to its
    provider's limit; sessions store it once by ``sha256`` beside the log."""

    media_type: str
    data: bytes = attrs.field(repr=lambda d: f"<{len(d)} bytes>")

    @property
    def sha256(self) -> str:
        import hashlib

        return hashlib.sha256(self.data).hexdigest()


@records.frozen
class Message:
    """One message of a thread.

    ``thinking`` and ``thinking_signature`` carry an assistant's reasoning where the wire format
    must echo it back: the signature is opaque state of the format that produced it (Anthropic's
    signed thinking, Gemini's thought signature, the OpenAI Responses reasoning items as JSON).
    A ``tool`` message answers ``tool_call_id``.
    """

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None  # tool name on tool results (Gemini needs it)
    is_error: bool = False  # tool results only
    thinking: str | None = None
    thinking_signature: str | None = None
    # A user prompt's images (``-i``, ``@shot.png``), or what a tool read (``read`` of an image)
    images: tuple[ImagePart, ...] = ()


@records.frozen
class ToolSchema:
    name: str
    description: str
    parameters: dict[str, Any]


@records.frozen
class ThinkingConfig:
    """Thinking as one request asks for it, already fitted to the model
    (``nyzhi.provider.thinking.resolve_thinking``). Each wire format reads the parameter it
    has: a token budget (Anthropic ``enabled``, Gemini 2.5 ``thinkingBudget``) or an effort
    (OpenAI ``reasoning_effort``/``reasoning.effort``, Anthropic ``adaptive``, Gemini 3
    ``thinkingLevel``). ``mode`` is the model table's way of asking (None: the format's
    default); ``interleaved`` asks Anthropic to think between tool calls too."""

    enabled: bool = False
    budget_tokens: int | None = None  # Anthropic / Gemini budget
    effort: str | None = None  # OpenAI reasoning effort: low / medium / high
    mode: str | None = None  # "budget", "adaptive", "effort", "level", "toggle" or None
    interleaved: bool = False


@records.frozen
class ChatRequest:
    """Everything one model call needs. ``system`` is kept apart because wire formats differ
    on where it goes."""

    messages: tuple[Message, ...]
    system: str = ""
    tools: tuple[ToolSchema, ...] = ()
    model: str | None = None  # None: the provider's configured model
    max_tokens: int | None = None
    temperature: float | None = None
    thinking: ThinkingConfig | None = None
    tool_choice: str | None = None  # None / "auto" / "none" / "required" / a tool name
    # The final answer as JSON matching this schema (nyz run --output-schema), where the wire
    # format can constrain it (nyzhi.provider.output_schema)
    output_schema: dict[str, Any] | None = None


# ---- stream events -------------------------------------------------------------------


@records.frozen
class TextDelta:
    text: str


@records.frozen
class ThinkingDelta:
    text: str = ""
    signature: str | None = None


@records.frozen
class ToolCallStart:
    index: int
    id: str
    name: str


@records.frozen
class ToolCallDelta:
    index: int
    arguments_delta: str


@records.frozen
class ToolCallEnd:
    index: int
    id: str
    name: str
    arguments: str  # the complete raw JSON text


@records.frozen
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    # The part of ``output_tokens`` spent thinking, where the provider says (OpenAI's
    # reasoning_tokens, Gemini's thoughtsTokenCount); already counted in ``output_tokens``.
    thinking_tokens: int = 0


StopReasonName = Literal["end_turn", "tool_use", "max_tokens", "stop_sequence", "error", "other"]


@records.frozen
class Stop:
    reason: StopReasonName
    raw: str | None = None  # the provider's own word for it


@records.frozen
class Retry:
    """A retry the provider is about to make after ``delay`` seconds."""

    attempt: int
    max_attempts: int
    delay: float
    reason: str


StreamEvent = TextDelta | ThinkingDelta | ToolCallStart | ToolCallDelta | ToolCallEnd | Usage | Stop | Retry


@runtime_checkable
class Provider(Protocol):
    """A configured model service.

    ``stream`` is an async generator; callers iterate it inside ``contextlib.aclosing`` so
    that leaving early (or being cancelled) closes the HTTP stream at once.
    """

    name: str
    model: str

    def stream(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]: ...


@runtime_checkable
class KeySource(Protocol):
    """Where a provider gets its API key, call by call.

    ``nyzhi.auth`` implements this with several accounts per provider: after a 429 the provider
    reports the limited key, the source cools it down (honouring Retry-After) and hands out the
    next account. A plain string key is wrapped in a one-key source.
    """

    def current_key(self) -> str | None:
        """The key to use for the next request, or None when no key is needed/known."""
        ...

    def report_rate_limited(self, key: str, retry_after: float | None) -> bool:
        """Cool ``key`` down; return True when another key is usable right now."""
        ...

    # Optional, for sources of OAuth tokens (``nyzhi.auth`` pools): ``async ensure_fresh()``
    # is awaited before each request (renew a token about to expire) and
    # ``async refresh_unauthorized(key) -> bool`` after a 401 (True: a new key, ask again).
