"""Google Gemini ``models/{model}:streamGenerateContent?alt=sse``.

Request: ``contents`` with roles ``user``/``model``; tool calls as ``functionCall`` parts,
results as ``functionResponse`` parts (by tool name, which is why ``Message.name`` exists);
images as ``inlineData`` parts (a tool's after its ``functionResponse``, in the same turn);
``systemInstruction``; ``tools: [{functionDeclarations}]``; ``generationConfig`` with
``thinkingConfig {thinkingBudget, includeThoughts}`` (``thinkingLevel`` instead of the budget
for the models that take levels, Gemini 3). A step's thought signature goes back on the part
it came with: the first function call, or the text of an answer without calls. The key goes in the ``x-goog-api-key``
header, never in the URL (URLs end up in logs). JSON-schema keys Gemini refuses
(``$schema``, ``additionalProperties``) are dropped from tool parameters.

Stream: each SSE ``data`` is a whole ``GenerateContentResponse``. Parts with ``thought: true``
are thinking; ``functionCall`` parts arrive complete (one start, delta, end each, with a
synthetic id when the API gives none); ``thoughtSignature`` is surfaced as a thinking
signature so it can be echoed back; ``usageMetadata`` is cumulative, the last one wins;
``finishReason`` marks the end (there is no separate end event).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from nyzhi import jsonbound
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
from nyzhi.provider.wire import DecoderBase, HttpCall, effective, own_signature, whole_call

_loads = jsonbound.loads
FINISH = {"STOP": "end_turn", "MAX_TOKENS": "max_tokens"}
DEFAULT_THINKING_BUDGET = 8192
_DROP_KEYS = {"$schema", "additionalProperties"}


def clean_schema(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: clean_schema(v) for k, v in schema.items() if k not in _DROP_KEYS}
    if isinstance(schema, list):
        return [clean_schema(v) for v in schema]
    return schema


def _inline(image: ImagePart) -> dict[str, Any]:
    media_type, data = encoded(image, "gemini")
    return {"inlineData": {"mimeType": media_type, "data": data}}


def encode_contents(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "assistant":
            parts: list[dict[str, Any]] = []
            signature = own_signature(m.thinking_signature)
            if m.content:
                parts.append({"text": m.content})
                if not m.tool_calls and signature:
                    parts[-1]["thoughtSignature"] = signature  # where it came
            for i, c in enumerate(m.tool_calls):
                args = parse_tool_arguments(c.arguments)
                part: dict[str, Any] = {"functionCall": {"name": c.name, "args": args if isinstance(args, dict) else {}}}
                if i == 0 and signature:
                    part["thoughtSignature"] = signature
                parts.append(part)
            out.append({"role": "model", "parts": parts or [{"text": ""}]})
            continue
        pictures = [_inline(i) for i in m.images]
        if m.role == "tool":
            key = "error" if m.is_error else "result"
            given = [{"functionResponse": {"name": m.name or "", "response": {key: m.content}}},
                     *pictures]  # what the tool returned, then its images, in one user turn
        else:
            given = [*pictures, {"text": m.content}]
        if out and out[-1]["role"] == "user":
            out[-1]["parts"].extend(given)
        else:
            out.append({"role": "user", "parts": given})
    return out


class GeminiAdapter:
    framing = "sse"

    def build(self, spec: ProviderSpec, request: ChatRequest, key: str | None) -> HttpCall:
        model, max_tokens, temperature, thinking = effective(spec, request)
        body: dict[str, Any] = {"contents": encode_contents(request.messages)}
        if request.system:
            body["systemInstruction"] = {"parts": [{"text": request.system}]}
        if request.tools:
            body["tools"] = [
                {
                    "functionDeclarations": [
                        {"name": t.name, "description": t.description, "parameters": clean_schema(t.parameters)}
                        for t in request.tools
                    ]
                }
            ]
        choice = request.tool_choice
        if choice:
            mode = {"auto": "AUTO", "none": "NONE", "required": "ANY"}.get(choice)
            fcc: dict[str, Any] = {"mode": mode or "ANY"}
            if mode is None:
                fcc["allowedFunctionNames"] = [choice]
            body["toolConfig"] = {"functionCallingConfig": fcc}
        config: dict[str, Any] = {}
        if max_tokens is not None:
            config["maxOutputTokens"] = max_tokens
        if temperature is not None:
            config["temperature"] = temperature
        if thinking is not None and thinking.mode == "level":
            config["thinkingConfig"] = {"thinkingLevel": thinking.effort or "high",
                                        "includeThoughts": True}
        elif thinking is not None:
            config["thinkingConfig"] = {
                "thinkingBudget": thinking.budget_tokens or DEFAULT_THINKING_BUDGET,
                "includeThoughts": True,
            }
        if request.output_schema is not None:
            config["responseMimeType"] = "application/json"
            config["responseSchema"] = clean_schema(request.output_schema)
        if config:
            body["generationConfig"] = config
        headers = {"content-type": "application/json", "accept": "text/event-stream", **spec.headers}
        if key:
            headers["x-goog-api-key"] = key
        name = model if model.startswith(("models/", "tunedModels/")) else f"models/{model}"
        url = f"{spec.base_url}/{name}:streamGenerateContent?alt=sse"
        return HttpCall("POST", url, headers, body)

    def decoder(self) -> GeminiDecoder:
        return GeminiDecoder()


class GeminiDecoder(DecoderBase):
    """Hot path: nearly every record is one candidate with one plain text part, so that case
    is decoded inline (no per-part call, no intermediate lists); everything else goes
    through ``_part``. This keeps decoding within ~1.3x of a bare ``json.loads`` per record."""

    def __init__(self) -> None:
        super().__init__()
        self.finished = False

    def feed(self, event: str, data: str) -> list[StreamEvent]:
        try:
            chunk = _loads(data)
        except jsonbound.JsonTooDeep:
            raise
        except ValueError:
            self.skipped += 1
            return []
        if isinstance(chunk, list):  # non-SSE JSON-array framing: take what is there
            out: list[StreamEvent] = []
            for item in chunk:
                out.extend(self._chunk(item))
            return out
        return self._chunk(chunk)

    def _chunk(self, chunk: Any) -> list[StreamEvent]:
        if not isinstance(chunk, dict) or self.done:
            return []
        if "error" in chunk:
            err = chunk["error"] or {}
            status = err.get("status") or err.get("code") or "error"
            raise ProviderStreamError(
                f"error in stream: {status}: {err.get('message') or 'no message'}",
                retryable=status in ("UNAVAILABLE", "INTERNAL", "RESOURCE_EXHAUSTED", 503, 500),
            )
        usage = chunk.get("usageMetadata")
        if usage is not None and isinstance(usage, dict):
            cached = usage.get("cachedContentTokenCount") or 0
            self.input_tokens = (usage.get("promptTokenCount") or 0) - cached
            self.cache_read = cached
            self.thinking_tokens = usage.get("thoughtsTokenCount") or 0
            self.output_tokens = (usage.get("candidatesTokenCount") or 0) + self.thinking_tokens
            self.saw_usage = True
        out: list[StreamEvent] = []
        for cand in chunk.get("candidates") or ():
            if not isinstance(cand, dict):
                continue
            content = cand.get("content")
            for part in (content.get("parts") if isinstance(content, dict) else None) or ():
                if isinstance(part, dict) and len(part) == 1:
                    text = part.get("text")
                    if isinstance(text, str):  # a plain text part: the common case
                        if text:
                            out.append(TextDelta(text))
                        continue
                out.extend(self._part(part))
            reason = cand.get("finishReason")
            if reason:
                self.set_stop(FINISH.get(reason, "other"), reason)  # type: ignore[arg-type]
                self.finished = True
            break
        return out

    def _part(self, part: Any) -> list[StreamEvent]:
        if not isinstance(part, dict):
            return []
        out: list[StreamEvent] = []
        fc = part.get("functionCall")
        if isinstance(fc, dict):
            call_id = fc.get("id") or f"call_{uuid.uuid4().hex[:12]}"
            args = fc.get("args")
            raw = args if isinstance(args, str) else json.dumps(args if args is not None else {})
            out.extend(whole_call(self.tools, ("fc", self.tools.count), call_id, fc.get("name") or "", raw))
        text = part.get("text")
        if isinstance(text, str) and text:
            out.append(ThinkingDelta(text) if part.get("thought") else TextDelta(text))
        sig = part.get("thoughtSignature")
        if isinstance(sig, str) and sig:
            out.append(ThinkingDelta("", signature=sig))
        return out

    def finish(self) -> list[StreamEvent]:
        if self.done:
            return []
        if self.finished:
            return self.trailer()
        raise self.ended_early()
