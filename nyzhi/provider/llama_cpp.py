"""llama.cpp's OpenAI-compatible server: the OpenAI chat format, minus one server limitation.

With ``--chat_format chatml-function-calling`` the server cannot stream an answer when tools
are offered with an automatic tool choice (it fails inside a 200 response and the client sees
an empty body). So when a request carries tools and no named choice, this adapter asks for a
complete (non-streamed) answer and turns it into the same stream events; everything else
streams as usual. Both bodies are read line by line: SSE lines start with ``data:``, a
complete answer is one JSON line.
"""

from __future__ import annotations

import json
from typing import Any

from nyzhi.provider.openai_chat import OpenAIChatAdapter, OpenAIChatDecoder
from nyzhi.provider.spec import ProviderSpec
from nyzhi.provider.types import ChatRequest, StreamEvent
from nyzhi.provider.wire import HttpCall


def _needs_complete_answer(request: ChatRequest) -> bool:
    return bool(request.tools) and request.tool_choice in (None, "auto")


class LlamaCppAdapter(OpenAIChatAdapter):
    framing = "ndjson"

    def build(self, spec: ProviderSpec, request: ChatRequest, key: str | None) -> HttpCall:
        call = super().build(spec, request, key)
        if not _needs_complete_answer(request):
            return call
        body = dict(call.json)
        body["stream"] = False
        body.pop("stream_options", None)
        headers = {**call.headers, "accept": "application/json"}
        return HttpCall(call.method, call.url, headers, body)

    def decoder(self) -> LlamaCppDecoder:
        return LlamaCppDecoder()


class LlamaCppDecoder(OpenAIChatDecoder):
    def feed(self, event: str, data: str) -> list[StreamEvent]:
        line = data.strip()
        if line.startswith("data:"):
            return super().feed(event, line[5:].strip())
        if not line.startswith("{"):
            return []  # SSE comments, event names, keep-alives
        return super().feed(event, json.dumps(_as_chunk(self.load(line))))


def _as_chunk(answer: Any) -> Any:
    """A complete chat completion rewritten as one streaming chunk (message -> delta)."""
    if not isinstance(answer, dict) or "choices" not in answer:
        return answer
    choices = []
    for choice in answer.get("choices") or ():
        if not isinstance(choice, dict):
            continue
        message = dict(choice.get("message") or {})
        calls = []
        for i, call in enumerate(message.get("tool_calls") or ()):
            if isinstance(call, dict):
                calls.append({**call, "index": i})
        if calls:
            message["tool_calls"] = calls
        choices.append({**choice, "delta": message})
    return {**answer, "choices": choices}
