"""OpenAI Responses API (``POST /responses``) over SSE.

Request: ``input`` items (messages, ``function_call`` and ``function_call_output`` items;
images as ``input_image`` parts with data URLs, those a tool returned in a user message after
its output),
``instructions`` for the system prompt, ``store: false`` (we keep the history ourselves),
``reasoning: {effort, summary: "auto"}`` when thinking (summaries are what the API streams,
shown as thinking), with ``include: ["reasoning.encrypted_content"]``: nothing is stored on
the server, so each finished reasoning item (``response.output_item.done``) is kept as the
step's thinking signature and sent back, id, summary and encrypted content, before the
assistant output it led to.

Stream (typed by the ``type`` field, which the SSE ``event:`` line repeats):
``response.output_text.delta`` → text; ``response.reasoning_summary_text.delta`` and
``response.reasoning_text.delta`` → thinking; ``response.output_item.added`` with a
``function_call`` item → tool start (keyed by item id), ``response.function_call_arguments.delta``
→ argument delta, ``response.output_item.done`` → tool end with the final arguments;
``response.completed`` / ``response.incomplete`` → usage and stop; ``response.failed`` and
``error`` → an error. Anything else is skipped.
"""

from __future__ import annotations

import json
from typing import Any

from nyzhi.config.modes import ApiStyle
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
from nyzhi.provider.wire import RESPONSES_SIGNATURE, DecoderBase, HttpCall, effective

_RETRYABLE_CODES = {"server_error", "rate_limit_exceeded", "overloaded", "internal_error"}


def reasoning_items(signature: str | None) -> list[dict[str, Any]]:
    """The reasoning items a step produced, from the signature ``ResponsesDecoder`` gave them
    (JSON ``{"reasoning": [items]}``); none for any other format's signature."""
    if not signature or not signature.startswith(RESPONSES_SIGNATURE):
        return []
    try:
        items = json.loads(signature).get("reasoning")
    except (ValueError, AttributeError):
        return []
    return [i for i in items if isinstance(i, dict) and i.get("type") == "reasoning"] if isinstance(items, list) else []


def _image_part(image: ImagePart) -> dict[str, Any]:
    return {"type": "input_image", "image_url": data_url(image, ApiStyle.OPENAI_RESPONSES)}


def encode_input(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    shown: list[dict[str, Any]] = []  # images tools returned, sent after the tool outputs
    for n, m in enumerate(messages):
        if m.role == "tool":
            out.append({"type": "function_call_output", "call_id": m.tool_call_id or "", "output": m.content})
            shown += [_image_part(i) for i in m.images]
            following = messages[n + 1] if n + 1 < len(messages) else None
            if shown and (following is None or following.role != "tool"):
                text = {"type": "input_text", "text": "(the images the tool results above refer to)"}
                out.append({"role": "user", "content": [text, *shown]})
                shown = []
        elif m.role == "user" and m.images:
            parts = [{"type": "input_text", "text": m.content}, *(_image_part(i) for i in m.images)]
            out.append({"role": "user", "content": parts})
        elif m.role == "assistant":
            out.extend(reasoning_items(m.thinking_signature))  # before what they led to
            if m.content:
                out.append({"role": "assistant", "content": m.content})
            for c in m.tool_calls:
                out.append(
                    {"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments or "{}"}
                )
        else:
            out.append({"role": m.role, "content": m.content})
    return out


class OpenAIResponsesAdapter:
    framing = "sse"

    def build(self, spec: ProviderSpec, request: ChatRequest, key: str | None) -> HttpCall:
        model, max_tokens, temperature, thinking = effective(spec, request)
        body: dict[str, Any] = {
            "model": model,
            "input": encode_input(request.messages),
            "stream": True,
            "store": False,
        }
        if request.system:
            body["instructions"] = request.system
        if request.tools:
            body["tools"] = [
                {"type": "function", "name": t.name, "description": t.description, "parameters": t.parameters}
                for t in request.tools
            ]
        if request.tool_choice in ("auto", "none", "required"):
            body["tool_choice"] = request.tool_choice
        elif request.tool_choice:
            body["tool_choice"] = {"type": "function", "name": request.tool_choice}
        if request.output_schema is not None:
            body["text"] = {"format": {"type": "json_schema", "name": SCHEMA_NAME,
                                       "schema": request.output_schema, "strict": False}}
        if max_tokens is not None:
            body["max_output_tokens"] = max_tokens
        if thinking is not None:
            body["reasoning"] = {"effort": thinking.effort or "high", "summary": "auto"}
            # store=false: the reasoning comes back encrypted, to be sent with the next step
            body["include"] = ["reasoning.encrypted_content"]
        elif temperature is not None:
            body["temperature"] = temperature
        headers = {"content-type": "application/json", "accept": "text/event-stream", **spec.headers}
        if key:
            headers["authorization"] = f"Bearer {key}"
        return HttpCall("POST", f"{spec.base_url}/responses", headers, body)

    def decoder(self) -> ResponsesDecoder:
        return ResponsesDecoder()


class ResponsesDecoder(DecoderBase):
    def __init__(self) -> None:
        super().__init__()
        self.reasoning: list[dict[str, Any]] = []

    def feed(self, event: str, data: str) -> list[StreamEvent]:
        ev = self.load(data)
        if not isinstance(ev, dict) or self.done:
            return []
        kind = ev.get("type") or event
        if kind == "response.output_text.delta":
            text = ev.get("delta")
            return [TextDelta(text)] if isinstance(text, str) and text else []
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            text = ev.get("delta")
            return [ThinkingDelta(text)] if isinstance(text, str) and text else []
        if kind == "response.output_item.added":
            item = ev.get("item") or {}
            if item.get("type") == "function_call":
                key = item.get("id") or ev.get("output_index")
                call_id = item.get("call_id") or item.get("id") or f"call_{self.tools.count}"
                return [self.tools.start(key, call_id, item.get("name") or "")]
            return []
        if kind == "response.function_call_arguments.delta":
            key = ev.get("item_id", ev.get("output_index"))
            delta = self.tools.delta(key, ev.get("delta") or "")
            return [delta] if delta is not None else []
        if kind == "response.output_item.done":
            item = ev.get("item") or {}
            if item.get("type") == "function_call":
                key = item.get("id") or ev.get("output_index")
                end = self.tools.end(key, item.get("arguments"))
                return [end] if end is not None else []
            if item.get("type") == "reasoning":
                return self._reasoning(item)
            return []
        if kind in ("response.completed", "response.incomplete", "response.done"):
            return self._complete(ev.get("response") or {})
        if kind == "response.failed":
            err = (ev.get("response") or {}).get("error") or {}
            raise self._error(err)
        if kind == "error":
            raise self._error(ev.get("error") if isinstance(ev.get("error"), dict) else ev)
        return []

    def _reasoning(self, item: dict[str, Any]) -> list[StreamEvent]:
        """A finished reasoning item: kept (id, summary, encrypted content) as the step's
        signature, so the next request can send it back."""
        kept: dict[str, Any] = {"type": "reasoning", "id": item.get("id"),
                                "summary": item.get("summary") or []}
        if item.get("encrypted_content"):
            kept["encrypted_content"] = item["encrypted_content"]
        self.reasoning.append(kept)
        return [ThinkingDelta("", signature=json.dumps({"reasoning": self.reasoning}))]

    def _complete(self, response: dict[str, Any]) -> list[StreamEvent]:
        usage = response.get("usage")
        if isinstance(usage, dict):
            cached = (usage.get("input_tokens_details") or {}).get("cached_tokens") or 0
            self.input_tokens = (usage.get("input_tokens") or 0) - cached
            self.cache_read = cached
            self.output_tokens = usage.get("output_tokens") or 0
            details = usage.get("output_tokens_details") or {}
            self.thinking_tokens = details.get("reasoning_tokens") or 0
            self.saw_usage = True
        status = response.get("status")
        if status == "incomplete":
            reason = (response.get("incomplete_details") or {}).get("reason")
            self.set_stop("max_tokens" if reason == "max_output_tokens" else "other", reason)
        else:
            self.set_stop("end_turn", status)
        return self.trailer()

    def _error(self, err: dict[str, Any]) -> ProviderStreamError:
        code = str(err.get("code") or err.get("type") or "")
        message = err.get("message") or "the response failed"
        return ProviderStreamError(
            f"error in stream: {code + ': ' if code else ''}{message}",
            retryable=code in _RETRYABLE_CODES,
        )

    def finish(self) -> list[StreamEvent]:
        if self.done:
            return []
        raise self.ended_early()
