"""How the fake LLM server renders one scripted reply in each wire format.

Each ``render_*`` returns the reply as a list of byte frames (one SSE event or one NDJSON line
each), so the server can delay between frames, cut the stream after N frames, and the
benchmark can build a recorded stream of any length. The shapes follow the providers' public
streaming docs closely enough that the real adapters cannot tell the difference.

Depends only on the stdlib, attrs (the server module defines the script types) and the API
style vocabulary (``nyzhi.config.modes``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from nyzhi.config.modes import ApiStyle

if TYPE_CHECKING:
    from nyzhi.testing.fake_llm import Reply

# Every API style but llama-cpp, which is the OpenAI format on the wire.
WIRE_STYLES = tuple(s.value for s in ApiStyle if s is not ApiStyle.LLAMA_CPP)


def _chunks(text: str, size: int) -> list[str]:
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def _args_text(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def _call_id(reply: Reply, i: int, prefix: str) -> str:
    return reply.tool_calls[i].id or f"{prefix}_{i}"


def _stop_word(reply: Reply, words: dict[str, str]) -> str:
    stop = reply.stop or ("tool_use" if reply.tool_calls else "end_turn")
    return words.get(stop, words["end_turn"])


def _interleaved(pieces: list[list[str]]) -> list[tuple[int, str]]:
    """Round-robin the argument pieces of parallel calls, as a fast server may send them."""
    out: list[tuple[int, str]] = []
    longest = max((len(p) for p in pieces), default=0)
    for j in range(longest):
        for i, p in enumerate(pieces):
            if j < len(p):
                out.append((i, p[j]))
    return out


def render_openai(reply: Reply, model: str, request: Any) -> list[bytes]:
    base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _sse({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    frames = [chunk({"role": "assistant", "content": ""})]
    if reply.unknown_events:
        frames += [b": keep-alive\n\n", _sse({"mystery": 1}, "mystery"), chunk({"mystery_field": "x"})]
    frames += [chunk({"reasoning_content": p}) for p in _chunks(reply.thinking, reply.chunk_size)]
    frames += [chunk({"content": p}) for p in _chunks(reply.text, reply.chunk_size)]
    for i, call in enumerate(reply.tool_calls):
        head = {"index": i, "id": _call_id(reply, i, "call"), "type": "function"}
        frames.append(chunk({"tool_calls": [{**head, "function": {"name": call.name, "arguments": ""}}]}))
    pieces = [_chunks(_args_text(c.arguments), reply.chunk_size * 2) for c in reply.tool_calls]
    for i, piece in _interleaved(pieces):
        frames.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
    words = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length"}
    frames.append(chunk({}, _stop_word(reply, words)))
    if ((request or {}).get("stream_options") or {}).get("include_usage"):
        u = reply.usage
        usage = {
            "prompt_tokens": u.input_tokens + u.cache_read_tokens,
            "completion_tokens": u.output_tokens,
            "total_tokens": u.input_tokens + u.cache_read_tokens + u.output_tokens,
            "prompt_tokens_details": {"cached_tokens": u.cache_read_tokens},
            "completion_tokens_details": {"reasoning_tokens": u.thinking_tokens},
        }
        frames.append(_sse({**base, "choices": [], "usage": usage}))
    frames.append(b"data: [DONE]\n\n")
    return frames


# When the fake "created" every response: a fixed time, so recorded streams stay the same.
_CREATED_AT = 1_767_225_600


def _response(model: str, status: str, output: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """A Responses API ``response`` object with the fields the API always sends."""
    return {"id": "resp_fake", "object": "response", "created_at": _CREATED_AT, "status": status,
            "model": model, "output": output, "parallel_tool_calls": True, "tool_choice": "auto",
            "tools": [], "error": None, "incomplete_details": None, "instructions": None,
            "metadata": {}, "usage": None, **extra}


def render_responses(reply: Reply, model: str, request: Any) -> list[bytes]:
    """The Responses API stream as documented: every event numbered (``sequence_number``),
    each output item added, filled (content parts, text, summary parts, arguments) and done,
    and the final response carrying every item."""
    frames: list[bytes] = []

    def ev(kind: str, **fields: Any) -> None:
        frames.append(_sse({"type": kind, "sequence_number": len(frames), **fields}, kind))

    output: list[dict[str, Any]] = []
    ev("response.created", response=_response(model, "in_progress", []))
    ev("response.in_progress", response=_response(model, "in_progress", []))
    if reply.unknown_events:
        ev("response.mystery.event", detail="skip me")
    if reply.thinking:
        output.append(_responses_reasoning(ev, reply, request, len(output)))
    if reply.text:
        output.append(_responses_message(ev, reply, len(output)))
    output.extend(_responses_calls(ev, reply, len(output)))
    usage = _responses_usage(reply.usage)
    if reply.stop == "max_tokens":
        ev("response.incomplete", response=_response(
            model, "incomplete", output, usage=usage,
            incomplete_details={"reason": "max_output_tokens"}))
    else:
        ev("response.completed", response=_response(model, "completed", output, usage=usage))
    return frames


def _responses_reasoning(ev: Callable[..., None], reply: Reply, request: Any,
                         out: int) -> dict[str, Any]:
    """The reasoning item's events (its summary streamed); returns the finished item, with
    the encrypted content when the request includes it."""
    at = {"item_id": "rs_0", "output_index": out}
    ev("response.output_item.added", output_index=out,
       item={"type": "reasoning", "id": "rs_0", "summary": []})
    ev("response.reasoning_summary_part.added", **at, summary_index=0,
       part={"type": "summary_text", "text": ""})
    for p in _chunks(reply.thinking, reply.chunk_size):
        ev("response.reasoning_summary_text.delta", **at, summary_index=0, delta=p)
    part = {"type": "summary_text", "text": reply.thinking}
    ev("response.reasoning_summary_text.done", **at, summary_index=0, text=reply.thinking)
    ev("response.reasoning_summary_part.done", **at, summary_index=0, part=part)
    item: dict[str, Any] = {"type": "reasoning", "id": "rs_0", "summary": [part]}
    if "reasoning.encrypted_content" in ((request or {}).get("include") or ()):
        item["encrypted_content"] = f"enc:{reply.signature}"
    ev("response.output_item.done", output_index=out, item=item)
    return item


def _responses_message(ev: Callable[..., None], reply: Reply, out: int) -> dict[str, Any]:
    """The assistant message item's events (its text streamed); returns the finished item."""
    at = {"item_id": "msg_0", "output_index": out, "content_index": 0}
    message = {"type": "message", "id": "msg_0", "role": "assistant"}
    ev("response.output_item.added", output_index=out,
       item={**message, "status": "in_progress", "content": []})
    ev("response.content_part.added", **at,
       part={"type": "output_text", "text": "", "annotations": []})
    for p in _chunks(reply.text, reply.chunk_size):
        ev("response.output_text.delta", **at, delta=p, logprobs=[])
    part = {"type": "output_text", "text": reply.text, "annotations": []}
    ev("response.output_text.done", **at, text=reply.text, logprobs=[])
    ev("response.content_part.done", **at, part=part)
    item = {**message, "status": "completed", "content": [part]}
    ev("response.output_item.done", output_index=out, item=item)
    return item


def _responses_calls(ev: Callable[..., None], reply: Reply, out: int) -> list[dict[str, Any]]:
    """The function-call items' events, every call added first and their arguments
    interleaved (as the API streams parallel calls); returns the finished items."""
    items = []
    for i, call in enumerate(reply.tool_calls):
        item = {"type": "function_call", "id": f"fc_{i}", "call_id": _call_id(reply, i, "call"), "name": call.name}
        items.append(item)
        ev("response.output_item.added", output_index=out + i,
           item={**item, "arguments": "", "status": "in_progress"})
    pieces = [_chunks(_args_text(c.arguments), reply.chunk_size * 2) for c in reply.tool_calls]
    for i, piece in _interleaved(pieces):
        ev("response.function_call_arguments.delta", item_id=f"fc_{i}", output_index=out + i, delta=piece)
    done = []
    for i, call in enumerate(reply.tool_calls):
        args = _args_text(call.arguments)
        ev("response.function_call_arguments.done", item_id=f"fc_{i}", output_index=out + i, arguments=args)
        item = {**items[i], "arguments": args, "status": "completed"}
        ev("response.output_item.done", output_index=out + i, item=item)
        done.append(item)
    return done


def _responses_usage(u: Any) -> dict[str, Any]:
    """The final response's usage (input counts the cache reads; output the reasoning)."""
    return {
        "input_tokens": u.input_tokens + u.cache_read_tokens,
        "input_tokens_details": {"cached_tokens": u.cache_read_tokens,
                                 "cache_write_tokens": u.cache_write_tokens},
        "output_tokens": u.output_tokens,
        "output_tokens_details": {"reasoning_tokens": u.thinking_tokens},
        "total_tokens": u.input_tokens + u.cache_read_tokens + u.output_tokens,
    }


def render_anthropic(reply: Reply, model: str, request: Any) -> list[bytes]:
    frames: list[bytes] = []

    def ev(kind: str, **fields: Any) -> None:
        frames.append(_sse({"type": kind, **fields}, kind))

    u = reply.usage
    ev("message_start", message={
        "id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": u.input_tokens, "cache_read_input_tokens": u.cache_read_tokens,
                  "cache_creation_input_tokens": u.cache_write_tokens, "output_tokens": 1},
    })
    ev("ping")
    if reply.unknown_events:
        ev("mystery_event", detail="skip me")
    index = 0
    if reply.thinking:
        ev("content_block_start", index=index,
           content_block={"type": "thinking", "thinking": "", "signature": ""})
        for p in _chunks(reply.thinking, reply.chunk_size):
            ev("content_block_delta", index=index, delta={"type": "thinking_delta", "thinking": p})
        ev("content_block_delta", index=index, delta={"type": "signature_delta", "signature": reply.signature})
        ev("content_block_stop", index=index)
        index += 1
    if reply.text:
        ev("content_block_start", index=index, content_block={"type": "text", "text": ""})
        if reply.unknown_events:
            ev("content_block_delta", index=index, delta={"type": "mystery_delta", "x": 1})
        for p in _chunks(reply.text, reply.chunk_size):
            ev("content_block_delta", index=index, delta={"type": "text_delta", "text": p})
        ev("content_block_stop", index=index)
        index += 1
    for i, call in enumerate(reply.tool_calls):
        block = {"type": "tool_use", "id": _call_id(reply, i, "toolu"), "name": call.name, "input": {}}
        ev("content_block_start", index=index, content_block=block)
        for p in _chunks(_args_text(call.arguments), reply.chunk_size * 2):
            ev("content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": p})
        ev("content_block_stop", index=index)
        index += 1
    stop = _stop_word(reply, {"end_turn": "end_turn", "tool_use": "tool_use", "max_tokens": "max_tokens"})
    ev("message_delta", delta={"stop_reason": stop, "stop_sequence": None}, usage={"output_tokens": u.output_tokens})
    ev("message_stop")
    return frames


def render_gemini(reply: Reply, model: str, request: Any) -> list[bytes]:
    def chunk(parts: list[dict[str, Any]], **extra: Any) -> bytes:
        cand = {"content": {"parts": parts, "role": "model"}, "index": 0, **extra}
        return _sse({"candidates": [cand], "modelVersion": model})

    frames = [chunk([{"text": p, "thought": True}]) for p in _chunks(reply.thinking, reply.chunk_size)]
    if reply.unknown_events:
        frames.append(_sse({"promptFeedback": {"blockReason": None}}))
        frames.append(chunk([{"executableCode": {"code": "print(1)"}}]))
    frames += [chunk([{"text": p}]) for p in _chunks(reply.text, reply.chunk_size)]
    if reply.thinking and reply.text and not reply.tool_calls:  # an answer's signature
        frames.append(chunk([{"text": "", "thoughtSignature": reply.signature}]))
    if reply.tool_calls:
        parts = []
        for i, call in enumerate(reply.tool_calls):
            fc: dict[str, Any] = {"name": call.name, "args": call.arguments}
            if call.id:
                fc["id"] = call.id
            part: dict[str, Any] = {"functionCall": fc}
            if i == 0 and reply.thinking:
                part["thoughtSignature"] = reply.signature
            parts.append(part)
        frames.append(chunk(parts))
    u = reply.usage
    usage = {
        "promptTokenCount": u.input_tokens + u.cache_read_tokens,
        "candidatesTokenCount": u.output_tokens - u.thinking_tokens,
        "cachedContentTokenCount": u.cache_read_tokens,
        "thoughtsTokenCount": u.thinking_tokens,
        "totalTokenCount": u.input_tokens + u.cache_read_tokens + u.output_tokens,
    }
    stop = "MAX_TOKENS" if reply.stop == "max_tokens" else "STOP"
    frames.append(_sse({
        "candidates": [{"content": {"parts": [{"text": ""}], "role": "model"}, "finishReason": stop, "index": 0}],
        "usageMetadata": usage,
        "modelVersion": model,
    }))
    return frames


def render_ollama(reply: Reply, model: str, request: Any) -> list[bytes]:
    def line(message: dict[str, Any], **extra: Any) -> bytes:
        obj = {"model": model, "created_at": "2026-01-01T00:00:00Z",
               "message": {"role": "assistant", "content": "", **message}, "done": False, **extra}
        return json.dumps(obj, separators=(",", ":")).encode() + b"\n"

    frames = [line({"thinking": p}) for p in _chunks(reply.thinking, reply.chunk_size)]
    if reply.unknown_events:
        frames.append(b'{"mystery": 1}\n')
    frames += [line({"content": p}) for p in _chunks(reply.text, reply.chunk_size)]
    if reply.tool_calls:
        calls = [{**({"id": c.id} if c.id else {}), "function": {"index": i, "name": c.name, "arguments": c.arguments}}
                 for i, c in enumerate(reply.tool_calls)]
        frames.append(line({"tool_calls": calls}))
    reason = "length" if reply.stop == "max_tokens" else "stop"
    frames.append(line({}, done=True, done_reason=reason, total_duration=1000,
                       prompt_eval_count=reply.usage.input_tokens, eval_count=reply.usage.output_tokens))
    return frames


RENDERERS = {
    "openai": render_openai,
    "openai-responses": render_responses,
    "anthropic": render_anthropic,
    "gemini": render_gemini,
    "ollama": render_ollama,
}

_GEMINI_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
                  404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}


def error_body(wire: str | None, status: int, message: str, error_type: str | None) -> bytes:
    """An error body shaped like the provider's own (each extracts its message differently)."""
    kind = error_type or ("rate_limit_error" if status == 429 else
                          "api_error" if status >= 500 else "invalid_request_error")
    if wire == "anthropic":
        body: Any = {"type": "error", "error": {"type": kind, "message": message}}
    elif wire == "gemini":
        body = {"error": {"code": status, "message": message, "status": _GEMINI_STATUS.get(status, "UNKNOWN")}}
    elif wire == "ollama":
        body = {"error": message}
    else:
        body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return json.dumps(body).encode()


def overflow_body(wire: str | None, tokens: int, limit: int) -> bytes:
    """HTTP 400 "prompt is too long" as each provider sends it (figures where it gives any)."""
    if wire == "anthropic":
        body: Any = {"type": "error", "error": {
            "type": "invalid_request_error",
            "message": f"prompt is too long: {tokens} tokens > {limit} maximum"}}
    elif wire == "gemini":
        body = {"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": (
            f"The input token count ({tokens}) exceeds the maximum number of tokens allowed "
            f"({limit}).")}}
    elif wire == "ollama":
        body = {"error": "the input length exceeds the context length"}
    elif wire == "openai-responses":
        body = {"error": {"type": "invalid_request_error", "param": "input",
                          "code": "context_length_exceeded", "message": (
                              "Your input exceeds the context window of this model. Please "
                              "adjust your input and try again.")}}
    else:
        body = {"error": {"type": "invalid_request_error", "param": "messages",
                          "code": "context_length_exceeded", "message": (
                              f"This model's maximum context length is {limit} tokens. However, "
                              f"your messages resulted in {tokens} tokens. Please reduce the "
                              "length of the messages.")}}
    return json.dumps(body).encode()


def stream_error_frame(wire: str, message: str, error_type: str, sequence: int = 0) -> bytes:
    """An error reported inside a 200 stream, the way each provider does it (``sequence``: the
    Responses API's ``sequence_number``, the count of frames sent before it)."""
    if wire == "anthropic":
        return _sse({"type": "error", "error": {"type": error_type, "message": message}}, "error")
    if wire == "openai-responses":
        return _sse({"type": "error", "code": error_type, "message": message, "param": None,
                     "sequence_number": sequence}, "error")
    if wire == "gemini":
        return _sse({"error": {"code": 503, "message": message, "status": error_type}})
    if wire == "ollama":
        return json.dumps({"error": message}).encode() + b"\n"
    return _sse({"error": {"message": message, "type": error_type, "code": error_type}})


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return "" if content is None else json.dumps(content)


def transcript(wire: str | None, body: dict[str, Any]) -> list[tuple[str, str]]:
    """A request body of any wire format flattened to (role, text) pairs (see FakeRequest)."""
    out: list[tuple[str, str]] = []
    if wire == "anthropic":
        system = body.get("system")
        if system:
            out.append(("system", _text(system)))
        for msg in body.get("messages") or ():
            blocks = msg.get("content")
            for b in blocks if isinstance(blocks, list) else [{"type": "text", "text": blocks}]:
                kind = b.get("type")
                if kind == "text":
                    out.append((msg.get("role", "user"), b.get("text", "")))
                elif kind == "tool_result":
                    out.append(("tool", _text(b.get("content"))))
                elif kind == "tool_use":
                    out.append(("tool_call", b.get("name", "")))
    elif wire == "gemini":
        system = (body.get("systemInstruction") or {}).get("parts")
        if system:
            out.append(("system", _text(system)))
        for content in body.get("contents") or ():
            role = "assistant" if content.get("role") == "model" else "user"
            for part in content.get("parts") or ():
                if "text" in part:
                    out.append((role, part["text"]))
                elif "functionResponse" in part:
                    resp = part["functionResponse"].get("response") or {}
                    out.append(("tool", _text(resp.get("result", resp.get("error", resp)))))
                elif "functionCall" in part:
                    out.append(("tool_call", part["functionCall"].get("name", "")))
    elif wire == "openai-responses":
        if body.get("instructions"):
            out.append(("system", body["instructions"]))
        for item in body.get("input") or ():
            kind = item.get("type")
            if kind == "function_call_output":
                out.append(("tool", _text(item.get("output"))))
            elif kind == "function_call":
                out.append(("tool_call", item.get("name", "")))
            elif "role" in item:
                out.append((item["role"], _text(item.get("content"))))
    else:  # openai chat and ollama
        for msg in body.get("messages") or ():
            role = msg.get("role", "user")
            if msg.get("content"):
                out.append((role, _text(msg["content"])))
            elif role == "tool":
                out.append(("tool", ""))
            for call in msg.get("tool_calls") or ():
                out.append(("tool_call", (call.get("function") or {}).get("name", "")))
    return out


def search_answer(wire: str, hits: list[tuple[str, str, str]], text: str = "",
                  *, error_code: str | None = None) -> dict[str, Any]:
    """A provider's whole answer to a server-side web search, in its documented shape:
    ``hits`` are (title, url, cited text). Anthropic: ``server_tool_use``, a
    ``web_search_tool_result`` (or its error, with ``error_code``), then ``text`` blocks with
    ``web_search_result_location`` citations; OpenAI Responses: a ``web_search_call`` item, then
    a ``message`` whose ``output_text`` has ``url_citation`` annotations; Gemini: a candidate
    with ``groundingMetadata`` (chunks and supports)."""
    if wire == "anthropic":
        return _anthropic_search(hits, text, error_code)
    if wire == "openai-responses":
        return _responses_search(hits, text)
    if wire == "gemini":
        return _gemini_search(hits, text)
    raise ValueError(f"{wire} has no server-side search")


def _anthropic_search(hits: list[tuple[str, str, str]], text: str,
                      error_code: str | None) -> dict[str, Any]:
    """Anthropic's message: the search, its results (or error), then each hit cited."""
    result: Any = ({"type": "web_search_tool_result_error", "error_code": error_code}
                   if error_code else
                   [{"type": "web_search_result", "url": u, "title": t,
                     "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5", "page_age": None}
                    for t, u, _ in hits])
    blocks: list[dict[str, Any]] = [
        {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search",
         "input": {"query": "q"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01", "content": result},
    ]
    for t, u, cited in hits:
        blocks.append({"type": "text", "text": f"{t}. ", "citations": [
            {"type": "web_search_result_location", "url": u, "title": t,
             "encrypted_index": "Eo8BCioIAhgBIiQyYjQ0", "cited_text": cited}]})
    if text:
        blocks.append({"type": "text", "text": text})
    return {"id": "msg_search", "type": "message", "role": "assistant",
            "model": "fake-model-1", "content": blocks, "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 20,
                      "server_tool_use": {"web_search_requests": 1}}}


def _responses_search(hits: list[tuple[str, str, str]], text: str) -> dict[str, Any]:
    """The Responses API's response: the search call, then a message annotated with each
    hit's span."""
    body = text or " ".join(cited for _, _, cited in hits)
    annotations, at = [], 0
    full = ""
    for t, u, cited in hits:
        full += cited + " "
        annotations.append({"type": "url_citation", "start_index": at,
                            "end_index": at + len(cited), "url": u, "title": t})
        at = len(full)
    full += text
    return {"id": "resp_search", "object": "response", "created_at": 1700000000,
            "status": "completed", "model": "fake-model-1", "output": [
                {"type": "web_search_call", "id": "ws_1", "status": "completed",
                 "action": {"type": "search", "query": "q"}},
                {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                 "content": [{"type": "output_text", "text": full or body,
                              "annotations": annotations}]}],
            "usage": {"input_tokens": 10, "output_tokens": 20, "total_tokens": 30}}


def _gemini_search(hits: list[tuple[str, str, str]], text: str) -> dict[str, Any]:
    """Gemini's candidate, grounded: each hit a chunk, each cited text a support."""
    chunks = [{"web": {"uri": u, "title": t}} for t, u, _ in hits]
    supports = [{"segment": {"startIndex": 0, "endIndex": len(c), "text": c},
                 "groundingChunkIndices": [i]} for i, (_, _, c) in enumerate(hits) if c]
    return {"candidates": [{
        "content": {"role": "model", "parts": [{"text": text or "results"}]},
        "finishReason": "STOP",
        "groundingMetadata": {"webSearchQueries": ["q"], "groundingChunks": chunks,
                              "groundingSupports": supports,
                              "searchEntryPoint": {"renderedContent": "<div></div>"}}}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 20,
                          "totalTokenCount": 30},
        "modelVersion": "fake-model-1"}
