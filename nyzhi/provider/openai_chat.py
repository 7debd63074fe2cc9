"""OpenAI Chat Completions (and every compatible server: OpenRouter, Groq, Together, DeepSeek,
llama.cpp's server) over SSE.

Request: ``stream: true`` with ``stream_options.include_usage`` so the last chunk carries
usage; tools as ``{"type": "function", "function": {...}}``; assistant tool calls as
``tool_calls`` and results as ``role: "tool"`` messages (strict servers need exactly this).
Images are ``image_url`` parts with data URLs; a tool message takes text only, so images a
tool returned follow its results as a user message.
Thinking maps to ``reasoning_effort`` and drops ``temperature`` (reasoning models reject it).
Nothing of a step's reasoning goes back in the next request: Chat Completions has no field
for it (the reasoning stays on the server), so only the answer and its tool calls are sent.
``max_completion_tokens`` is sent to api.openai.com (its reasoning models refuse
``max_tokens``), ``max_tokens`` to everyone else (many compatible servers only know that).

Stream: ``delta.content`` is text, ``delta.reasoning_content`` (DeepSeek, llama.cpp) or
``delta.reasoning`` (OpenRouter) is thinking, ``delta.tool_calls[i]`` are parallel calls
told apart by ``index``. Calls end at ``finish_reason``; usage and Stop follow at ``[DONE]``.
"""

from __future__ import annotations

from typing import Any

from nyzhi.provider.errors import ProviderStreamError
from nyzhi.provider.images import data_url
from nyzhi.provider.output_schema import SCHEMA_NAME
from nyzhi.provider.spec import ProviderSpec
from nyzhi.provider.types import (
    ChatRequest,
    ImagePart,
    Message,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
)
from nyzhi.provider.wire import DecoderBase, HttpCall, WrongShape, effective, expect_list

FINISH = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "other",
}


def _image_part(image: ImagePart, style: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": data_url(image, style)}}


def encode_messages(system: str, messages: tuple[Message, ...],
                    style: str = "openai") -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    shown: list[dict[str, Any]] = []  # images tools returned, sent after the tool results
    for n, m in enumerate(messages):
        if m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_call_id or "", "content": m.content})
            shown += [_image_part(i, style) for i in m.images]
            following = messages[n + 1] if n + 1 < len(messages) else None
            if shown and (following is None or following.role != "tool"):
                # a tool message holds text only: the images follow as the user's
                text = {"type": "text", "text": "(the images the tool results above refer to)"}
                out.append({"role": "user", "content": [text, *shown]})
                shown = []
        elif m.role == "user" and m.images:
            parts = [{"type": "text", "text": m.content}]
            out.append({"role": "user", "content": parts + [_image_part(i, style) for i in m.images]})
        elif m.role == "assistant":
            msg: dict[str, Any] = {"role": "assistant", "content": m.content or None}
            if m.tool_calls:
                msg["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments or "{}"},
                    }
                    for c in m.tool_calls
                ]
            out.append(msg)
        else:
            out.append({"role": m.role, "content": m.content})
    return out


def encode_tool_choice(choice: str | None) -> Any:
    if choice is None or choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "function": {"name": choice}}


class OpenAIChatAdapter:
    framing = "sse"

    def build(self, spec: ProviderSpec, request: ChatRequest, key: str | None) -> HttpCall:
        model, max_tokens, temperature, thinking = effective(spec, request)
        body: dict[str, Any] = {
            "model": model,
            "messages": encode_messages(request.system, request.messages, spec.api_style),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                }
                for t in request.tools
            ]
        if request.output_schema is not None:
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": SCHEMA_NAME, "schema": request.output_schema, "strict": False}}
        choice = encode_tool_choice(request.tool_choice)
        if choice is not None:
            body["tool_choice"] = choice
        if max_tokens is not None:
            official = "api.openai.com" in spec.base_url
            body["max_completion_tokens" if official else "max_tokens"] = max_tokens
        if thinking is not None:
            body["reasoning_effort"] = thinking.effort or "high"
        elif temperature is not None:
            body["temperature"] = temperature
        headers = {"content-type": "application/json", "accept": "text/event-stream", **spec.headers}
        if key:
            headers["authorization"] = f"Bearer {key}"
        return HttpCall("POST", f"{spec.base_url}/chat/completions", headers, body)

    def decoder(self) -> OpenAIChatDecoder:
        return OpenAIChatDecoder()


class OpenAIChatDecoder(DecoderBase):
    def __init__(self) -> None:
        super().__init__()
        self.finished = False

    def feed(self, event: str, data: str) -> list[StreamEvent]:
        if data == "[DONE]":
            return self.trailer() if not self.done else []
        chunk = self.load(data)
        if not isinstance(chunk, dict) or self.done:
            return []
        if "error" in chunk and not chunk.get("choices"):
            err = chunk["error"]
            msg = err.get("message", str(err)) if isinstance(err, dict) else str(err)
            raise ProviderStreamError(f"error in stream: {msg}", retryable=False)
        out: list[StreamEvent] = []
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
            self.input_tokens = (usage.get("prompt_tokens") or 0) - cached
            self.output_tokens = usage.get("completion_tokens") or 0
            self.cache_read = cached
            details = usage.get("completion_tokens_details") or {}
            self.thinking_tokens = details.get("reasoning_tokens") or 0
            self.saw_usage = True
        for choice in expect_list(chunk, "choices"):
            if not isinstance(choice, dict):
                raise WrongShape(f"an element of 'choices' is {type(choice).__name__}, "
                                 "not an object")
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            thinking = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(thinking, str) and thinking:
                out.append(ThinkingDelta(thinking))
            text = delta.get("content")
            if isinstance(text, str) and text:
                out.append(TextDelta(text))
            for pos, call in enumerate(expect_list(delta, "tool_calls")):
                out.extend(self._tool(pos, call))
            reason = choice.get("finish_reason")
            if reason:
                self.set_stop(FINISH.get(reason, "other"), reason)  # type: ignore[arg-type]
                self.finished = True
                out.extend(self.tools.end_all())
        return out

    def _tool(self, pos: int, call: Any) -> list[StreamEvent]:
        if not isinstance(call, dict):
            return []
        key = call.get("index", pos)
        fn = call.get("function") or {}
        out: list[StreamEvent] = []
        if not self.tools.is_open(key):
            call_id = call.get("id") or f"call_{self.tools.count}"
            out.append(self.tools.start(key, call_id, fn.get("name") or ""))
        delta = self.tools.delta(key, fn.get("arguments") or "")
        if delta is not None:
            out.append(delta)
        return out

    def finish(self) -> list[StreamEvent]:
        if self.done:
            return []
        if self.finished:  # some servers omit [DONE]; finish_reason is enough
            return self.trailer()
        raise self.ended_early()
