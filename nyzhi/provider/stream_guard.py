"""Between a wire decoder and the agent: a hostile stream ends as one provider error.

The decoders read what a server sends, and a server (a proxy, a local model server, someone's
endpoint) can send anything. Two things must never reach the user or the session:

* an internal exception: a ``choices`` field of the wrong type ended a turn with
  ``AttributeError: 'str' object has no attribute 'get'``. Any exception a decoder raises
  that is not a ``ProviderError`` becomes a ``ProviderStreamError`` saying the provider sent
  a record of the wrong shape (the type of error, never its internal text);
* an answer without end: text, thinking and tool arguments are counted against the
  ``StreamLimits`` of the spec, per tool call and per answer, and the first one past its bound
  stops the answer with an error naming the bound and the key that sets it. The framing bounds
  each record the same way (``RecordTooLarge``).

Both are not retried: the same request would most likely get the same answer.
"""

from __future__ import annotations

from nyzhi.jsonbound import JsonTooDeep
from nyzhi.provider.errors import ProviderError, ProviderStreamError
from nyzhi.provider.framing import RecordTooLarge
from nyzhi.provider.spec import StreamLimits
from nyzhi.provider.types import (
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallEnd,
)
from nyzhi.provider.wire import Decoder, WrongShape

KEYS = {
    "max_answer_chars": "[agent.stream] max_answer_chars",
    "max_tool_argument_chars": "[agent.stream] max_tool_argument_chars",
    "max_step_tool_argument_chars": "[agent.stream] max_step_tool_argument_chars",
}


def too_large(what: str, limit: int, key: str) -> ProviderStreamError:
    return ProviderStreamError(f"{what} exceeded {limit:,} characters; stopped (the bound is "
                               f"{KEYS[key]})", retryable=False)


def record_too_large(exc: RecordTooLarge) -> ProviderStreamError:
    return ProviderStreamError(f"{exc}; stopped (the bound follows {KEYS['max_answer_chars']} "
                               f"and {KEYS['max_tool_argument_chars']})", retryable=False)


class StreamGuard:
    """``feed``/``finish`` of ``decoder``, with the errors and bounds above."""

    def __init__(self, decoder: Decoder, limits: StreamLimits) -> None:
        self.decoder = decoder
        self.limits = limits
        self.answer = 0
        self.arguments = 0
        self.per_call: dict[int, int] = {}

    def feed(self, name: str, data: str) -> list[StreamEvent]:
        try:
            events = self.decoder.feed(name, data)
        except ProviderError:
            raise
        except Exception as exc:  # noqa: BLE001 - whatever the record did to the decoder
            raise malformed(exc, name) from exc
        for event in events:
            self._count(event)
        return events

    def finish(self) -> list[StreamEvent]:
        try:
            return self.decoder.finish()
        except ProviderError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise malformed(exc, "") from exc

    def _count(self, event: StreamEvent) -> None:
        limits = self.limits
        if isinstance(event, TextDelta | ThinkingDelta):
            self.answer += len(event.text)
            if self.answer > limits.max_answer_chars:
                raise too_large("the answer", limits.max_answer_chars, "max_answer_chars")
        elif isinstance(event, ToolCallDelta):
            size = len(event.arguments_delta)
            call = self.per_call.get(event.index, 0) + size
            self.per_call[event.index] = call
            self.arguments += size
            if call > limits.max_tool_argument_chars:
                raise too_large(f"the arguments of tool call {event.index + 1}",
                                limits.max_tool_argument_chars, "max_tool_argument_chars")
            if self.arguments > limits.max_step_tool_argument_chars:
                raise too_large("the tool arguments of the answer",
                                limits.max_step_tool_argument_chars,
                                "max_step_tool_argument_chars")
        elif isinstance(event, ToolCallEnd) and len(event.arguments) > limits.max_tool_argument_chars:
            # a call whose whole arguments came with its end (no deltas counted)
            raise too_large(f"the arguments of tool call {event.index + 1}",
                            limits.max_tool_argument_chars, "max_tool_argument_chars")


def malformed(exc: BaseException, name: str) -> ProviderStreamError:
    """The one line for a record a decoder could not read: what kind of failure, not its
    internal text (which names nyz's code, not the provider's mistake)."""
    if isinstance(exc, JsonTooDeep | WrongShape):
        kind = str(exc)
    elif isinstance(exc, RecursionError):
        kind = "nested too deeply"
    elif isinstance(exc, AttributeError | TypeError | KeyError | IndexError):
        kind = "a field missing or of the wrong type"
    else:
        kind = "unreadable"
    where = f" (event {name!r})" if name else ""
    return ProviderStreamError(
        f"the provider sent a stream record of the wrong shape{where}: {kind}; stopped",
        retryable=False)
