"""Ollama's native ``POST /api/chat`` with newline-delimited JSON.

Request: ``messages`` (assistant ``tool_calls`` carry arguments as objects; results are
``role: "tool"`` with ``tool_name``; images are a message's base64 ``images``, those a tool
returned on a user message after its results), ``tools`` in the OpenAI function shape, ``options``
(``num_predict``, ``temperature``), ``think`` when thinking is on (true, or the effort for
models that take levels). An assistant's ``thinking`` is sent back on its message.

Stream: one JSON object per line. ``message.content`` is text, ``message.thinking`` is
thinking, ``message.tool_calls`` arrive whole with object arguments (serialised to JSON text
here so every format hands the agent the same raw string); the last line has
``done: true``, ``done_reason`` and the token counts ``prompt_eval_count`` / ``eval_count``.
A line ``{"error": ...}`` raises.
"""

from __future__ import annotations

import json
from typing import Any

from nyzhi.provider.arguments import parse_tool_arguments
from nyzhi.provider.errors import ProviderStreamError
from nyzhi.provider.images import encoded
from nyzhi.provider.spec import ProviderSpec
from nyzhi.provider.types import ChatRequest, Message, StreamEvent, TextDelta, ThinkingDelta
from nyzhi.provider.wire import DecoderBase, HttpCall, effective, whole_call

DONE = {"stop": "end_turn", "length": "max_tokens"}


def encode_messages(system: str, messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    shown: list[str] = []  # images tools returned, sent after the tool results
    for n, m in enumerate(messages):
        msg: dict[str, Any] = {"role": m.role, "content": m.content}
        if m.role == "user" and m.images:
            msg["images"] = [encoded(i, "ollama")[1] for i in m.images]
        elif m.role == "tool":
            shown += [encoded(i, "ollama")[1] for i in m.images]
        if m.role == "assistant" and m.thinking:
            msg["thinking"] = m.thinking  # what the model thought goes back with its calls
        if m.role == "assistant" and m.tool_calls:
            calls = []
            for c in m.tool_calls:
                args = parse_tool_arguments(c.arguments)
                calls.append({"function": {"name": c.name, "arguments": args if isinstance(args, dict) else {}}})
            msg["tool_calls"] = calls
        if m.role == "tool" and m.name:
            msg["tool_name"] = m.name
        out.append(msg)
        following = messages[n + 1] if n + 1 < len(messages) else None
        if shown and (following is None or following.role != "tool"):
            out.append({"role": "user", "content": "(the images the tool results above refer to)",
                        "images": shown})
            shown = []
    return out


class OllamaAdapter:
    framing = "ndjson"

    def build(self, spec: ProviderSpec, request: ChatRequest, key: str | None) -> HttpCall:
        model, max_tokens, temperature, thinking = effective(spec, request)
        body: dict[str, Any] = {
            "model": model,
            "messages": encode_messages(request.system, request.messages),
            "stream": True,
        }
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                }
                for t in request.tools
            ]
        options: dict[str, Any] = {}
        if max_tokens is not None:
            options["num_predict"] = max_tokens
        if temperature is not None:
            options["temperature"] = temperature
        if options:
            body["options"] = options
        if request.output_schema is not None:
            body["format"] = request.output_schema  # Ollama's structured outputs
        if thinking is not None:
            # gpt-oss style models take a level; the rest switch thinking on
            body["think"] = thinking.effort if thinking.mode == "effort" else True
        headers = {"content-type": "application/json", **spec.headers}
        if key:
            headers["authorization"] = f"Bearer {key}"
        return HttpCall("POST", f"{spec.base_url}/api/chat", headers, body)

    def decoder(self) -> OllamaDecoder:
        return OllamaDecoder()


class OllamaDecoder(DecoderBase):
    def feed(self, event: str, data: str) -> list[StreamEvent]:
        line = self.load(data)
        if not isinstance(line, dict) or self.done:
            return []
        if "error" in line:
            raise ProviderStreamError(f"error in stream: {line['error']}", retryable=False)
        out: list[StreamEvent] = []
        msg = line.get("message") or {}
        thinking = msg.get("thinking")
        if isinstance(thinking, str) and thinking:
            out.append(ThinkingDelta(thinking))
        text = msg.get("content")
        if isinstance(text, str) and text:
            out.append(TextDelta(text))
        for call in msg.get("tool_calls") or ():
            fn = (call or {}).get("function") or {}
            args = fn.get("arguments")
            raw = args if isinstance(args, str) else json.dumps(args if args is not None else {})
            call_id = (call or {}).get("id") or f"call_{self.tools.count}"
            out.extend(whole_call(self.tools, ("call", self.tools.count), call_id, fn.get("name") or "", raw))
        if line.get("done"):
            self.input_tokens = line.get("prompt_eval_count") or 0
            self.output_tokens = line.get("eval_count") or 0
            self.saw_usage = True
            reason = line.get("done_reason") or "stop"
            self.set_stop(DONE.get(reason, "other"), reason)  # type: ignore[arg-type]
            out.extend(self.trailer())
        return out

    def finish(self) -> list[StreamEvent]:
        if self.done:
            return []
        raise self.ended_early()
