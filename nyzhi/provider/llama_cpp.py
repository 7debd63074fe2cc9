"""llama.cpp's OpenAI-compatible server: the OpenAI chat format, minus one server limitation,
plus two guards a small local model needs.

* **Complete answers when tools are offered.** With ``--chat_format chatml-function-calling``
  the server cannot stream an answer when tools are offered with an automatic tool choice (it
  fails inside a 200 response and the client sees an empty body). So when a request carries
  tools and no named choice, this adapter asks for a complete (non-streamed) answer and turns
  it into the same stream events; everything else streams as usual. Both bodies are read line
  by line: SSE lines start with ``data:``, a complete answer is one JSON line.
* **The offline model's prompt.** For nyz's own offline server (``OFFLINE_MODEL``) only
  ``OFFLINE_TOOLS`` are offered and the temperature defaults low; see the constants. A
  request with tools becomes a grammar-constrained decision in the model's own tool-call
  format, then the answer if it made no call (``nyzhi.provider.offline_calls``).
* **An output cap.** Without ``max_tokens`` llama.cpp generates until the context is full,
  which for the offline default (SmolLM2-135M on two cores) took minutes. Unless the request
  or the provider config sets one, ``DEFAULT_MAX_TOKENS`` is sent.
* **Repeated output.** Tiny models fall into loops: the same sentence or line over and over.
  ``RepetitionGuard`` notices when the end of the answer is one chunk repeated many times; a
  streamed answer then ends there (``Stop("other", "repeated output")``, and the provider
  hangs up, which stops the server generating), and a complete answer is cut after the first
  copy. The thresholds are high enough that real text (a table rule, a list of zeros) passes.
* **HTML entities.** llama-cpp-python renders its ``chatml-function-calling`` prompt with
  Jinja autoescaping on, so the model reads ``it&#39;s`` for every quote in the conversation
  and writes entities back. The decoder unescapes the text and the tool arguments it yields
  (``EntityDecoder`` holds back an entity split across streamed deltas).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Sequence
from typing import Any

import attrs

from nyzhi import jsonbound
from nyzhi.provider.offline_calls import decode_decision, offline_calls
from nyzhi.provider.offline_model import (
    OFFLINE_MODEL,  # noqa: F401 (re-exported: the adapter's callers and tests name it here)
    OFFLINE_TEMPERATURE,
    OFFLINE_TOOLS,
    is_offline_model,
)
from nyzhi.provider.openai_chat import OpenAIChatAdapter, OpenAIChatDecoder
from nyzhi.provider.spec import ProviderSpec
from nyzhi.provider.types import ChatRequest, StreamEvent, TextDelta
from nyzhi.provider.wire import HttpCall, effective

#: Output cap when neither the request nor ``[provider.llama-cpp] max_tokens`` sets one.
DEFAULT_MAX_TOKENS = 512

#: The ``Stop.raw`` of an answer ended by the repetition guard.
REPEATED_OUTPUT = "repeated output"


def _needs_complete_answer(request: ChatRequest) -> bool:
    return bool(request.tools) and request.tool_choice in (None, "auto")


class RepetitionGuard:
    """Notices a text whose end is one chunk repeated: at least ``min_copies`` copies of a
    chunk of at most ``max_period`` characters, covering at least ``min_span`` characters.

    The check compares the text's tail with itself shifted by each candidate period (one
    slice comparison per period), so it is cheap enough to run on every streamed delta."""

    def __init__(self, *, min_copies: int = 4, min_span: int = 300, max_period: int = 300) -> None:
        self.min_copies = min_copies
        self.min_span = min_span
        self.max_period = max_period
        #: The longest tail ``period`` ever looks at (a stream keeps only this much).
        self.window = max(min_copies * max_period, min_span)

    def period(self, text: Sequence[Any]) -> int | None:
        """The shortest repeating period at the end of ``text``, or None. Any sequence with
        slicing and ``==`` works: the llama.cpp server bootstrap passes token ids."""
        n = len(text)
        for p in range(1, self.max_period + 1):
            need = max(self.min_copies * p, self.min_span)
            if need > n:
                break
            window = text[n - need :]
            if window[p:] == window[:-p]:
                return p
        return None

    def first_copy_end(self, text: str, period: int) -> int:
        """Where the first copy of the repeated tail ends: ``text[:result]`` keeps the text
        before the loop and one copy of it. The copy is counted from where the repeating
        starts, which can be a little before the loop visibly does (``". "`` ends both the
        lead-in and each copy), so the cut moves on to the next space: a copy keeps its
        closing punctuation."""
        start = len(text) - max(self.min_copies * period, self.min_span)
        while start > 0 and text[start - 1] == text[start - 1 + period]:
            start -= 1
        end = start + period
        while end < min(len(text), start + 2 * period) and not text[end].isspace():
            end += 1
        return end

    def trim(self, text: str, *, step: int = 16) -> str | None:
        """``text`` cut after the first copy of a loop in it (anywhere, not only at the
        end: the answer may have left the loop before it ended), or None if there is none.
        Checks every ``step`` characters, as a stream would."""
        for end in [*range(self.min_span, len(text), step), len(text)]:
            found = self.period(text[:end])
            if found is not None:
                return text[: self.first_copy_end(text[:end], found)]
        return None


#: An unfinished entity at the end of a streamed delta (``&``, ``&#3``, ``&amp``).
_PARTIAL_ENTITY = re.compile(r"&(#x?[0-9a-fA-F]{0,6}|[A-Za-z]{0,8})$")


class EntityDecoder:
    """HTML entities unescaped across streamed deltas: a delta ending in what may be the
    start of an entity keeps that part back until the next delta (or ``flush``)."""

    def __init__(self) -> None:
        self._pending = ""

    def feed(self, text: str) -> str:
        text = self._pending + text
        match = _PARTIAL_ENTITY.search(text)
        cut = match.start() if match else len(text)
        self._pending = text[cut:]
        return html.unescape(text[:cut])

    def flush(self) -> str:
        text, self._pending = self._pending, ""
        return html.unescape(text)


def unescape_arguments(arguments: str) -> str:
    """A tool call's JSON arguments with entities unescaped inside its strings (unescaping
    the JSON text itself could turn ``&quot;`` into a quote that breaks it)."""
    if "&" not in arguments:
        return arguments
    try:
        value = jsonbound.loads(arguments)
    except ValueError:
        return arguments

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            return html.unescape(item)
        if isinstance(item, list):
            return [walk(v) for v in item]
        if isinstance(item, dict):
            return {k: walk(v) for k, v in item.items()}
        return item

    return json.dumps(walk(value), ensure_ascii=False)


class LlamaCppAdapter(OpenAIChatAdapter):
    framing = "ndjson"

    def build(self, spec: ProviderSpec, request: ChatRequest, key: str | None) -> HttpCall:
        offline = is_offline_model(request.model or spec.model)
        if offline:
            request = _offline_tools(request)
        call = super().build(spec, request, key)
        body = dict(call.json)
        _, max_tokens, temperature, _ = effective(spec, request)
        if max_tokens is None:
            body["max_tokens"] = DEFAULT_MAX_TOKENS
        if offline and temperature is None:
            body["temperature"] = OFFLINE_TEMPERATURE
        headers = call.headers
        if offline and body.get("tools") and _needs_complete_answer(request):
            # The decision, then the answer if it made no call (nyzhi.provider.offline_calls).
            first, answer = offline_calls(body)
            then = HttpCall(call.method, call.url, headers, answer) if answer else None
            if then is None:
                return HttpCall(call.method, call.url, headers, first)
            return HttpCall(call.method, call.url, {**headers, "accept": "application/json"},
                            first, then)
        if _needs_complete_answer(request):
            body["stream"] = False
            body.pop("stream_options", None)
            headers = {**headers, "accept": "application/json"}
        return HttpCall(call.method, call.url, headers, body)

    def decoder(self) -> LlamaCppDecoder:
        return LlamaCppDecoder()


def _offline_tools(request: ChatRequest) -> ChatRequest:
    """The request with only ``OFFLINE_TOOLS`` (and a tool it names) offered, when it offers
    any of them; a caller with tools of its own keeps them."""
    keep = {*OFFLINE_TOOLS, request.tool_choice}
    offered = tuple(t for t in request.tools if t.name in keep)
    if not offered:
        return request
    # in OFFLINE_TOOLS' order: the tools a newcomer asks for first (list_dir, read) lead
    order = {name: i for i, name in enumerate(OFFLINE_TOOLS)}
    offered = tuple(sorted(offered, key=lambda t: order.get(t.name, len(order))))
    if offered == request.tools:
        return request
    return attrs.evolve(request, tools=offered)


class LlamaCppDecoder(OpenAIChatDecoder):
    def __init__(self, guard: RepetitionGuard | None = None) -> None:
        super().__init__()
        self.guard = guard or RepetitionGuard()
        #: The offline model decided to make no call: its answer is a second request.
        self.follow_up = False
        self._tail = ""
        self._entities = EntityDecoder()

    def feed(self, event: str, data: str) -> list[StreamEvent]:
        if self.done:
            return []
        line = data.strip()
        if line.startswith("data:"):
            payload = line[5:].strip()
            if payload == "[DONE]" and not self.finished:
                # llama_cpp.server ends an interrupted stream with [DONE] and no finish
                # reason: a cut answer, not a whole one (issue 54).
                raise self.ended_early()
            return self._guarded(super().feed(event, payload))
        if not line.startswith("{"):
            return []  # SSE comments, event names, keep-alives
        answer = self.load(line)
        trimmed = self._trim_complete(answer)
        if _decode_offline(answer):
            self.follow_up = True
            return []
        _unescape_complete(answer)
        events = super().feed(event, json.dumps(_as_chunk(answer)))
        if trimmed:
            self.set_stop("other", REPEATED_OUTPUT)
        return events

    def finish(self) -> list[StreamEvent]:
        rest = self._entities.flush()
        return ([TextDelta(rest)] if rest and not self.done else []) + super().finish()

    def _guarded(self, events: list[StreamEvent]) -> list[StreamEvent]:
        """Pass streamed events on until the text starts repeating; then end the answer."""
        out: list[StreamEvent] = []
        for event in events:
            if not isinstance(event, TextDelta):
                rest = self._entities.flush()
                if rest:
                    out.append(TextDelta(rest))
                out.append(event)
                continue
            text = self._entities.feed(event.text)
            if not text:
                continue
            event = TextDelta(text)
            out.append(event)
            self._tail = (self._tail + event.text)[-self.guard.window :]
            if self.guard.period(self._tail) is not None:
                self.set_stop("other", REPEATED_OUTPUT)
                return out + self.trailer()
        return out

    def _trim_complete(self, answer: Any) -> bool:
        """Cut a looping message in a complete answer after its first copy (in place)."""
        trimmed = False
        for choice in (answer.get("choices") or ()) if isinstance(answer, dict) else ():
            message = choice.get("message") if isinstance(choice, dict) else None
            content = message.get("content") if isinstance(message, dict) else None
            if isinstance(content, str):
                cut = self.guard.trim(content)
                if cut is not None:
                    message["content"] = cut
                    trimmed = True
        return trimmed


def _decode_offline(answer: Any) -> bool:
    """The offline model's decision back into a message with its call (``offline_calls``);
    True when it decided to make none (its answer is asked for next)."""
    if not isinstance(answer, dict) or not is_offline_model(answer.get("model")):
        return False
    no_call = False
    for choice in answer.get("choices") or ():
        message = choice.get("message") if isinstance(choice, dict) else None
        if isinstance(message, dict) and not message.get("tool_calls"):
            no_call = decode_decision(message) or no_call
            if message.get("tool_calls") and choice.get("finish_reason") == "stop":
                choice["finish_reason"] = "tool_calls"
    return no_call


def _unescape_complete(answer: Any) -> None:
    """A complete answer's message text and tool arguments unescaped (in place)."""
    for choice in (answer.get("choices") or ()) if isinstance(answer, dict) else ():
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            continue
        if isinstance(message.get("content"), str):
            message["content"] = html.unescape(message["content"])
        for call in message.get("tool_calls") or ():
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict) and isinstance(fn.get("arguments"), str):
                fn["arguments"] = unescape_arguments(fn["arguments"])


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
