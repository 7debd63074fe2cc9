"""Anthropic Messages (``POST /messages``) over SSE.

Request: ``x-api-key`` and ``anthropic-version`` headers; ``max_tokens`` is mandatory (4096
by default, and above the thinking budget when thinking). Prompt caching: ``cache_control:
ephemeral`` on the system block, the last tool and the last block of the last user turn, so
the stable prefix (system + tools) and the conversation so far are both reused (3 of the 4
breakpoints allowed). Images are base64 ``image`` blocks: before a prompt's text, and inside a
tool's ``tool_result`` after its text. Consecutive tool results are merged into one user turn, as the API
requires after a multi-call assistant turn. Signed thinking is echoed back as a ``thinking``
block at the start of the assistant turn: the API rejects thinking + tool use without it.
Thinking is ``{type: enabled, budget_tokens}`` (with the interleaved-thinking beta when tools
are offered to a Claude 4 model), or ``{type: adaptive}`` with ``output_config.effort`` for the
models that take adaptive thinking (Claude 4.6 and later).

Stream: ``message_start`` (input and cache usage), ``content_block_start`` (tool_use opens a
call), ``content_block_delta`` (``text_delta``, ``thinking_delta``, ``signature_delta``,
``input_json_delta``), ``content_block_stop`` (closes a call), ``message_delta`` (stop
reason, output tokens), ``message_stop``; ``ping`` and unknown events are skipped; an
``error`` event raises (retryable when overloaded).
"""

from __future__ import annotations

from typing import Any

from nyzhi.provider.arguments import parse_tool_arguments
from nyzhi.provider.errors import ProviderStreamError
from nyzhi.provider.images import encoded
from nyzhi.provider.spec import ProviderSpec
from nyzhi.provider.types import (
    ChatRequest,
    ImagePart,
    Message,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
)
from nyzhi.provider.wire import DecoderBase, HttpCall, effective, own_signature

API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
DEFAULT_THINKING_BUDGET = 10_000
# Thinking between tool calls for Claude 4 models on manual budgets (adaptive thinking
# interleaves by itself).
INTERLEAVED_BETA = "interleaved-thinking-2025-05-14"
EPHEMERAL = {"type": "ephemeral"}
STOP = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
}
_RETRYABLE = {"overloaded_error", "api_error", "rate_limit_error"}


def _assistant_blocks(m: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    signature = own_signature(m.thinking_signature)
    if m.thinking is not None and signature:
        blocks.append({"type": "thinking", "thinking": m.thinking, "signature": signature})
    if m.content:
        blocks.append({"type": "text", "text": m.content})
    for c in m.tool_calls:
        args = parse_tool_arguments(c.arguments)
        blocks.append(
            {"type": "tool_use", "id": c.id, "name": c.name, "input": args if isinstance(args, dict) else {}}
        )
    return blocks


def _image_block(image: ImagePart) -> dict[str, Any]:
    media_type, data = encoded(image, "anthropic")
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


def encode_messages(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "assistant":
            blocks = _assistant_blocks(m) or [{"type": "text", "text": ""}]
            out.append({"role": "assistant", "content": blocks})
            continue
        pictures = [_image_block(i) for i in m.images]
        if m.role == "tool":
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": m.tool_call_id or "",
                # an image a tool returned goes inside its result, after the text
                "content": [{"type": "text", "text": m.content}, *pictures] if pictures
                else m.content,
            }
            if m.is_error:
                block["is_error"] = True
            blocks = [block]
        else:  # user (and a stray system message, which Anthropic only accepts as user text)
            blocks = [*pictures, {"type": "text", "text": m.content}]  # images first, as advised
        if out and out[-1]["role"] == "user":
            out[-1]["content"].extend(blocks)  # merge: tool results then text in one user turn
        else:
            out.append({"role": "user", "content": blocks})
    for msg in reversed(out):
        if msg["role"] == "user":
            msg["content"][-1] = {**msg["content"][-1], "cache_control": EPHEMERAL}
            break
    return out


class AnthropicAdapter:
    framing = "sse"

    def build(self, spec: ProviderSpec, request: ChatRequest, key: str | None) -> HttpCall:
        model, max_tokens, temperature, thinking = effective(spec, request)
        body: dict[str, Any] = {"model": model, "messages": encode_messages(request.messages), "stream": True}
        if request.system:
            body["system"] = [{"type": "text", "text": request.system, "cache_control": EPHEMERAL}]
        if request.tools:
            tools = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in request.tools
            ]
            tools[-1]["cache_control"] = EPHEMERAL
            body["tools"] = tools
        choice = request.tool_choice
        if choice in ("auto", "none"):
            body["tool_choice"] = {"type": choice}
        elif choice == "required":
            body["tool_choice"] = {"type": "any"}
        elif choice:
            body["tool_choice"] = {"type": "tool", "name": choice}
        beta: list[str] = []
        if thinking is not None and thinking.mode == "adaptive":
            body["thinking"] = {"type": "adaptive"}
            body["output_config"] = {"effort": thinking.effort or "high"}
            room = DEFAULT_THINKING_BUDGET + DEFAULT_MAX_TOKENS
            body["max_tokens"] = max(max_tokens or 0, room)
        elif thinking is not None:
            budget = thinking.budget_tokens or DEFAULT_THINKING_BUDGET
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
            body["max_tokens"] = max(max_tokens or 0, budget + DEFAULT_MAX_TOKENS)
            if thinking.interleaved and request.tools:
                beta.append(INTERLEAVED_BETA)
        else:
            body["max_tokens"] = max_tokens or DEFAULT_MAX_TOKENS
            if temperature is not None:
                body["temperature"] = temperature
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream",
            "anthropic-version": API_VERSION,
            **spec.headers,
        }
        if beta:
            given = [b.strip() for b in headers.get("anthropic-beta", "").split(",") if b.strip()]
            headers["anthropic-beta"] = ",".join(dict.fromkeys([*given, *beta]))
        if key:
            headers["x-api-key"] = key
        return HttpCall("POST", f"{spec.base_url}/messages", headers, body)

    def decoder(self) -> AnthropicDecoder:
        return AnthropicDecoder()


class AnthropicDecoder(DecoderBase):
    def feed(self, event: str, data: str) -> list[StreamEvent]:
        ev = self.load(data)
        if not isinstance(ev, dict) or self.done:
            return []
        kind = ev.get("type") or event
        if kind == "content_block_delta":
            return self._delta(ev.get("index"), ev.get("delta") or {})
        if kind == "content_block_start":
            block = ev.get("content_block") or {}
            if block.get("type") in ("tool_use", "server_tool_use"):
                call_id = block.get("id") or f"toolu_{self.tools.count}"
                return [self.tools.start(ev.get("index"), call_id, block.get("name") or "")]
            return []
        if kind == "content_block_stop":
            end = self.tools.end(ev.get("index"))
            return [end] if end is not None else []
        if kind == "message_start":
            self._usage((ev.get("message") or {}).get("usage"))
            return []
        if kind == "message_delta":
            self._usage(ev.get("usage"))
            reason = (ev.get("delta") or {}).get("stop_reason")
            if reason:
                self.set_stop(STOP.get(reason, "other"), reason)  # type: ignore[arg-type]
            return []
        if kind == "message_stop":
            return self.trailer()
        if kind == "error":
            err = ev.get("error") or {}
            etype = err.get("type") or "error"
            raise ProviderStreamError(
                f"error in stream: {etype}: {err.get('message') or 'no message'}",
                retryable=etype in _RETRYABLE,
            )
        return []  # ping and anything new

    def _delta(self, index: Any, delta: dict[str, Any]) -> list[StreamEvent]:
        dtype = delta.get("type")
        if dtype == "text_delta":
            text = delta.get("text")
            return [TextDelta(text)] if text else []
        if dtype == "thinking_delta":
            text = delta.get("thinking")
            return [ThinkingDelta(text)] if text else []
        if dtype == "signature_delta":
            return [ThinkingDelta("", signature=delta.get("signature") or "")]
        if dtype == "input_json_delta":
            d = self.tools.delta(index, delta.get("partial_json") or "")
            return [d] if d is not None else []
        return []

    def _usage(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        self.saw_usage = True
        if "input_tokens" in usage:
            self.input_tokens = usage.get("input_tokens") or 0
        if "cache_read_input_tokens" in usage:
            self.cache_read = usage.get("cache_read_input_tokens") or 0
        if "cache_creation_input_tokens" in usage:
            self.cache_write = usage.get("cache_creation_input_tokens") or 0
        if "output_tokens" in usage:
            self.output_tokens = usage.get("output_tokens") or 0

    def finish(self) -> list[StreamEvent]:
        if self.done:
            return []
        raise self.ended_early()
