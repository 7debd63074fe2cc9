"""What every wire adapter provides, and the bookkeeping they share.

An adapter is two pure translations with no I/O:

* ``build(spec, request, key) -> HttpCall``: a ``ChatRequest`` into method, URL, headers, JSON;
* ``decoder()``: a fresh ``Decoder`` that turns framed records (SSE events or NDJSON lines)
  into stream events. ``feed(event, data)`` returns the events for one record; ``finish()`` is
  called at end of stream and returns the trailing ``Usage`` and ``Stop`` or raises
  ``StreamEndedEarly`` when the model's stop never arrived.

Keeping them pure lets ``HttpProvider`` own retries, errors and cancellation once for all
formats, and lets the benchmark drive a decoder from memory.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from nyzhi import jsonbound, records
from nyzhi.provider.errors import StreamEndedEarly
from nyzhi.provider.spec import ProviderSpec
from nyzhi.provider.types import (
    ChatRequest,
    Stop,
    StopReasonName,
    StreamEvent,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)


@records.frozen
class HttpCall:
    method: str
    url: str
    headers: dict[str, str]
    json: Any
    #: A second request to send instead of ending the answer, when the first one's decoder
    #: says ``follow_up`` (the offline model's answer after it decided to make no call).
    then: HttpCall | None = None


class Decoder(Protocol):
    done: bool

    def feed(self, event: str, data: str) -> list[StreamEvent]: ...

    def finish(self) -> list[StreamEvent]: ...


class WireAdapter(Protocol):
    framing: Literal["sse", "ndjson"]

    def build(self, spec: ProviderSpec, request: ChatRequest, key: str | None) -> HttpCall: ...

    def decoder(self) -> Decoder: ...


class WrongShape(ValueError):
    """A record whose field has a type the format never sends (``choices`` a string): the
    stream cannot be read on. The message names the field, for the user's one line."""


def expect_list(record: dict[str, Any], field: str) -> list[Any]:
    """``record[field]`` when it is a list; ``[]`` when absent or null; ``WrongShape`` else."""
    value = record.get(field)
    if value is None:
        return []
    if not isinstance(value, list):
        raise WrongShape(f"{field!r} is {type(value).__name__}, not a list")
    return value


class DecoderBase:
    """Shared state: usage counters, stop reason, open tool calls, skipped records.

    Usage is accumulated and emitted once, right before ``Stop``, because several formats
    report it in pieces (Anthropic: input at the start, output at the end).
    ``input_tokens`` is the uncached part of the prompt; the whole prompt is
    ``input_tokens + cache_read_tokens + cache_write_tokens``.
    """

    def __init__(self) -> None:
        self.done = False
        self.skipped = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.cache_read = 0
        self.cache_write = 0
        self.thinking_tokens = 0
        self.saw_usage = False
        self.stop_reason: StopReasonName | None = None
        self.stop_raw: str | None = None
        self.tools = ToolCalls()

    def load(self, data: str) -> Any:
        """JSON of one record, or None (counted in ``skipped``) when it is not JSON. A record
        nested past ``jsonbound.MAX_DEPTH`` raises ``JsonTooDeep``: no provider sends one, and
        skipping it would quietly lose what it carried."""
        try:
            return jsonbound.loads(data)
        except jsonbound.JsonTooDeep:
            raise
        except ValueError:
            self.skipped += 1
            return None

    def set_stop(self, reason: StopReasonName, raw: str | None) -> None:
        self.stop_reason = reason
        self.stop_raw = raw

    def trailer(self) -> list[StreamEvent]:
        out: list[StreamEvent] = list(self.tools.end_all())
        if self.saw_usage:
            out.append(Usage(self.input_tokens, self.output_tokens, self.cache_read,
                             self.cache_write, self.thinking_tokens))
        reason = self.stop_reason or "end_turn"
        if reason == "end_turn" and self.tools.count:
            reason = "tool_use"
        out.append(Stop(reason, self.stop_raw))
        self.done = True
        return out

    def ended_early(self) -> StreamEndedEarly:
        extra = f" ({self.skipped} unreadable records skipped)" if self.skipped else ""
        return StreamEndedEarly(f"the stream ended before the model finished{extra}")


class ToolCalls:
    """Open tool calls keyed by whatever the wire uses (index, item id), numbered 0, 1, ..."""

    def __init__(self) -> None:
        self._open: dict[Any, list[Any]] = {}  # key -> [index, id, name, [chunks]]
        self.count = 0

    def start(self, key: Any, call_id: str, name: str) -> ToolCallStart:
        index = self.count
        self.count += 1
        self._open[key] = [index, call_id, name, []]
        return ToolCallStart(index, call_id, name)

    def is_open(self, key: Any) -> bool:
        return key in self._open

    def delta(self, key: Any, text: str) -> ToolCallDelta | None:
        slot = self._open.get(key)
        if slot is None or not text:
            return None
        slot[3].append(text)
        return ToolCallDelta(slot[0], text)

    def end(self, key: Any, final_arguments: str | None = None) -> ToolCallEnd | None:
        slot = self._open.pop(key, None)
        if slot is None:
            return None
        raw = final_arguments if final_arguments is not None else "".join(slot[3])
        return ToolCallEnd(slot[0], slot[1], slot[2], raw if raw.strip() else "{}")

    def end_all(self) -> list[ToolCallEnd]:
        return [e for e in (self.end(k) for k in list(self._open)) if e is not None]


def whole_call(tools: ToolCalls, key: Any, call_id: str, name: str, arguments: str) -> list[StreamEvent]:
    """A call that arrives complete (Gemini, Ollama) as start, one delta, end."""
    out: list[StreamEvent] = [tools.start(key, call_id, name)]
    delta = tools.delta(key, arguments)
    if delta is not None:
        out.append(delta)
    end = tools.end(key, arguments)
    if end is not None:
        out.append(end)
    return out


# The OpenAI Responses adapter keeps a step's reasoning items as its thinking signature, as JSON
# starting so. Another format must not send it on as its own signature (a session resumed on
# another provider): Anthropic and Gemini would refuse the request.
RESPONSES_SIGNATURE = '{"reasoning"'


def own_signature(signature: str | None) -> str | None:
    """``signature`` when it can be another format's (Anthropic's, Gemini's), else None."""
    if signature and not signature.startswith(RESPONSES_SIGNATURE):
        return signature
    return None


def effective(spec: ProviderSpec, request: ChatRequest) -> tuple[str, int | None, float | None, Any]:
    """Model, max_tokens, temperature and thinking after request overrides."""
    thinking = request.thinking if request.thinking is not None else spec.thinking
    if thinking is not None and not thinking.enabled:
        thinking = None
    return (
        request.model or spec.model,
        request.max_tokens if request.max_tokens is not None else spec.max_tokens,
        request.temperature if request.temperature is not None else spec.temperature,
        thinking,
    )
