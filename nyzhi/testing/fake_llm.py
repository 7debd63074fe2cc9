"""A scripted fake LLM server: real HTTP/1.1 on 127.0.0.1, under trio, in all five wire formats.

Tests and benchmarks talk to it with the real providers over real sockets::

    async with open_fake_llm(None, script=[reply("Hello!"), rate_limited(2), server_error()]) as srv:
        spec = ProviderSpec(name="t", api_style="anthropic", base_url=srv.url_for("anthropic"), model="m")
        ...
        assert srv.requests[0].json["system"][0]["cache_control"] == {"type": "ephemeral"}

Each request takes the next item of the script (a ``Reply`` or a ``Fault``) and renders it in
the wire format of the path it came in on. ``script`` may instead be a callable (dynamic
mode) receiving the ``FakeRequest`` and returning a ``Reply``/``Fault`` (or an awaitable of
one). An exhausted script answers 500 "fake LLM: script exhausted", which fails loudly.

Every model request is recorded (``server.requests``) with its path, lower-cased headers and
parsed JSON body; questions about models (every ``GET``, and Ollama's ``POST /api/show``) are
recorded apart, in ``server.info_requests``, so a client asking for a context window does not
shift the indexes of the model requests. What they answer: the model list (``models``, with
``model_fields[id]`` merged into each entry: ``context_length`` for OpenRouter,
``max_model_len`` for vLLM), llama.cpp's ``GET /props`` (``props``; 404 when None), Gemini's
``models.get``, LM Studio's ``GET /api/v0/models/ID`` and Ollama's ``/api/show`` (both from
``model_fields``). Each response is sent with ``Connection: close`` so the server can watch the
socket while it streams: a client that goes away mid-answer sets ``request.disconnected``.
Delays are ``trio.sleep`` calls, so they are virtual under a MockClock.

``POST /v1/embeddings`` (OpenAI's shape) answers without the script: each input becomes a
deterministic bag-of-words vector (``fake_embedding``), so texts sharing words are similar.
Set ``server.embeddings_gate`` to an async callable to hold each answer until it returns.

Depends only on trio, h11, the stdlib and attrs.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Literal

import attrs
import h11
import trio

from nyzhi import records
from nyzhi.testing.fake_llm_wire import (
    RENDERERS,
    WIRE_STYLES,
    error_body,
    overflow_body,
    stream_error_frame,
    transcript,
)

__all__ = [
    "FakeLLMServer", "FakeRequest", "FakeToolCall", "FakeUsage", "Fault", "PerAgent", "Reply",
    "WIRE_STYLES",
    "context_overflow", "garbage", "hang", "http_error", "open_fake_llm", "rate_limited", "reply",
    "server_error",
    "stream_error", "tool_call", "truncated",
]


@records.frozen
class FakeUsage:
    input_tokens: int = 12
    output_tokens: int = 7
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    thinking_tokens: int = 0  # part of output_tokens, reported where the format does


@records.frozen
class FakeToolCall:
    """``arguments``: a dict (sent as JSON), or a str sent verbatim (to script broken JSON)."""

    name: str
    arguments: dict[str, Any] | str = attrs.field(factory=dict)
    id: str | None = None


@records.frozen
class Reply:
    """One scripted model answer. ``chunk_size`` characters per text/thinking delta;
    ``delay`` seconds before every frame; ``stop`` overrides the stop reason (by default
    ``tool_use`` when there are tool calls, else ``end_turn``); ``unknown_events`` mixes
    event types and fields no client knows into the stream."""

    text: str = ""
    thinking: str = ""
    tool_calls: tuple[FakeToolCall, ...] = attrs.field(default=(), converter=records.as_tuple)
    usage: FakeUsage = attrs.field(factory=FakeUsage)
    chunk_size: int = 4
    delay: float = 0.0
    stop: Literal["end_turn", "tool_use", "max_tokens"] | None = None
    signature: str = "sig-fake-0"
    unknown_events: bool = False


FaultKind = Literal["status", "truncate", "garbage", "hang", "stream_error", "overflow"]


@records.frozen
class Fault:
    """A scripted failure.

    * ``status``: an HTTP error with the provider-shaped JSON error body (and Retry-After);
    * ``truncate``: the reply's first ``after_frames`` frames, then the socket is closed
      mid-body (the client sees an incomplete chunked message);
    * ``garbage``: a 200 stream whose body is ``data`` (bytes no parser can use);
    * ``hang``: nothing at all (or, with ``reply``, headers plus ``after_frames`` frames), then
      silence until the client goes away;
    * ``stream_error``: a 200 stream with ``after_frames`` frames of ``reply`` (if any), then
      the provider's in-stream error event (``error_type``, ``message``), then the end;
    * ``overflow``: HTTP 400 "prompt is too long" in the wire format's own shape, naming
      ``tokens`` and ``limit`` where that provider does.
    """

    kind: FaultKind
    status: int = 500
    message: str = ""
    error_type: str | None = None
    retry_after: str | None = None
    reply: Reply | None = None
    after_frames: int = 0
    data: bytes = b""
    tokens: int = 0
    limit: int = 0


@records.frozen
class JsonAnswer:
    """A whole JSON body answered as is (``status``): what a provider sends to a request that
    is not streamed, such as a server-side web search (``fake_llm_wire.search_answer``)."""

    body: dict[str, Any]
    status: int = 200


ScriptItem = Reply | Fault | JsonAnswer
DynamicScript = Callable[["FakeRequest"], "ScriptItem | Awaitable[ScriptItem]"]


class PerAgent:
    """A dynamic script for a run with several agents (subagents, teammates): one list of
    steps per agent, told apart by its thread's first user message (each agent's task)::

        script = PerAgent({"MAIN": [reply(tool_calls=[...]), reply("done")],
                           "EXPLORE-A": [reply("found it")]})

    The n-th request of the agent whose first user message contains the key gets the n-th
    step: a ``Reply``/``Fault``, or a function of the ``FakeRequest`` returning one (or an
    awaitable of one). ``seen[key]`` lists that agent's requests. An agent no key matches, or
    one past its last step, gets a reply saying so (the test's assertions then fail loudly).
    """

    def __init__(self, routes: dict[str, list[Any]]) -> None:
        self.routes = routes
        self.seen: dict[str, list[FakeRequest]] = {k: [] for k in routes}

    def __call__(self, request: FakeRequest) -> Any:
        first = request.first_user_text()
        key = next((k for k in self.routes if k in first), None)
        if key is None:
            return Reply(text=f"unscripted agent: {first[:60]}")
        self.seen[key].append(request)
        steps = self.routes[key]
        n = len(self.seen[key]) - 1
        if n >= len(steps):
            return Reply(text=f"{key} has nothing more to say")
        step = steps[n]
        return step(request) if callable(step) else step


def in_order(steps: Sequence[Any]) -> DynamicScript:
    """A dynamic script for one agent: its requests get ``steps`` in order, a step being a
    ``Reply``/``Fault`` or a function of the ``FakeRequest`` returning one (to answer with what
    the request carries); past the last step, a reply saying so."""
    it = iter(steps)

    def script(request: FakeRequest) -> Any:
        step = next(it, Reply(text="no more steps"))
        return step(request) if callable(step) else step

    return script


def reply(text: str = "", **kw: Any) -> Reply:
    return Reply(text=text, **kw)


def tool_call(name: str, arguments: dict[str, Any] | str | None = None, id: str | None = None) -> FakeToolCall:
    return FakeToolCall(name, {} if arguments is None else arguments, id)


def rate_limited(retry_after: float | str | None = 1, message: str = "rate limit exceeded, slow down") -> Fault:
    ra = None if retry_after is None else (retry_after if isinstance(retry_after, str) else f"{retry_after:g}")
    return Fault("status", status=429, message=message, retry_after=ra)


def server_error(status: int = 500, message: str = "internal server error") -> Fault:
    return Fault("status", status=status, message=message)


def http_error(status: int, message: str, error_type: str | None = None) -> Fault:
    return Fault("status", status=status, message=message, error_type=error_type)


def context_overflow(tokens: int = 210_000, limit: int = 200_000) -> Fault:
    return Fault("overflow", status=400, tokens=tokens, limit=limit)


def truncated(reply: Reply | None = None, after_frames: int = 2) -> Fault:
    return Fault("truncate", reply=reply or Reply(text="this answer will be cut short"), after_frames=after_frames)


def garbage(data: bytes = b"\x00\xff\xfe garbage {{{ not json\n\nnonsense: ???\n\n\x89PNG\r\n") -> Fault:
    return Fault("garbage", data=data)


def hang(reply: Reply | None = None, after_frames: int = 0) -> Fault:
    return Fault("hang", reply=reply, after_frames=after_frames)


def stream_error(message: str = "Overloaded", error_type: str = "overloaded_error",
                 reply: Reply | None = None, after_frames: int = 0) -> Fault:
    return Fault("stream_error", message=message, error_type=error_type, reply=reply, after_frames=after_frames)


@records.define(eq=False)
class FakeRequest:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes
    json: Any
    wire: str | None  # which wire format the path belongs to (None: model listing, unknown)
    model: str | None
    disconnected: trio.Event = attrs.field(factory=trio.Event)
    completed: bool = False  # the whole response was sent
    counted: bool = False  # counted in the server's ``active`` (until its last bytes go out)

    def transcript(self) -> list[tuple[str, str]]:
        """The conversation sent, flattened to (role, text) whatever the wire format, for
        dynamic scripts. Roles: system, user, assistant, tool (a result), tool_call (a name)."""
        return transcript(self.wire, self.json if isinstance(self.json, dict) else {})

    def first_user_text(self) -> str:
        """The thread's first user message: which agent is asking, in a dynamic script that
        serves several agents (each subagent's thread starts with its task)."""
        return next((text for role, text in self.transcript() if role == "user"), "")

    def system_text(self) -> str:
        return next((text for role, text in self.transcript() if role == "system"), "")

    def tool_names(self) -> list[str]:
        """The names of the tools offered with the request, whatever the wire format."""
        body = self.json if isinstance(self.json, dict) else {}
        names: list[str] = []
        for tool in body.get("tools") or ():
            if not isinstance(tool, dict):
                continue
            if isinstance(tool.get("function"), dict):
                names.append(str(tool["function"].get("name", "")))
            elif "functionDeclarations" in tool:
                names += [str(d.get("name", "")) for d in tool["functionDeclarations"]]
            elif "name" in tool:
                names.append(str(tool["name"]))
        return names

    def last_user_text(self) -> str:
        return next((text for role, text in reversed(self.transcript()) if role == "user"), "")

    def tool_results(self) -> list[str]:
        """Tool results after the last user text (what the model is answering now)."""
        out: list[str] = []
        for role, text in reversed(self.transcript()):
            if role == "user":
                break
            if role == "tool":
                out.append(text)
        return out[::-1]


_GEMINI_PATH = re.compile(r"^/v1beta/models/([^/:]+):(?:streamGenerateContent|generateContent)$")
_PATHS = {
    "/v1/chat/completions": "openai",
    "/v1/responses": "openai-responses",
    "/v1/messages": "anthropic",
    "/api/chat": "ollama",
}


EMBEDDING_DIM = 64
_EMBED_WORD = re.compile(r"[a-z0-9]+")


def fake_embedding(text: str, dim: int = EMBEDDING_DIM) -> list[float]:
    """A unit vector counting ``text``'s lower-cased words into ``dim`` hashed buckets
    (a stable hash, so vectors are the same in every process)."""
    import zlib

    vec = [0.0] * dim
    for word in _EMBED_WORD.findall(text.lower()):
        vec[zlib.crc32(word.encode()) % dim] += 1.0
    norm = sum(v * v for v in vec) ** 0.5 or 1.0
    return [v / norm for v in vec]


# A client that goes away mid-answer (killed, cancelled) is normal, never a server error.
_CLIENT_GONE = (trio.BrokenResourceError, trio.ClosedResourceError, h11.RemoteProtocolError)


class FakeLLMServer:
    def __init__(self, script: Sequence[ScriptItem] | DynamicScript, models: Sequence[str],
                 props: dict[str, Any] | None = None,
                 model_fields: dict[str, dict[str, Any]] | None = None) -> None:
        self._dynamic: DynamicScript | None = script if callable(script) else None
        self.script: list[ScriptItem] = [] if callable(script) else list(script)
        self.models = list(models)
        self.props = props
        self.model_fields = dict(model_fields or {})
        self.requests: list[FakeRequest] = []
        # Model requests being answered right now, and the most there ever were at once (a
        # client's concurrency limit is checked against ``max_active``).
        self.active = 0
        self.max_active = 0
        self.info_requests: list[FakeRequest] = []
        self.port = 0
        self._changed = trio.Event()
        self._cancel = trio.CancelScope()
        self.embeddings_gate: Callable[[FakeRequest], Awaitable[None]] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url_for(self, api_style: str) -> str:
        """The ``base_url`` a provider of ``api_style`` should use against this server."""
        if api_style in ("openai", "openai-responses", "anthropic", "llama-cpp"):
            return f"{self.base_url}/v1"
        if api_style == "gemini":
            return f"{self.base_url}/v1beta"
        if api_style == "ollama":
            return self.base_url
        raise ValueError(f"unknown api_style {api_style!r}")

    def push(self, *items: ScriptItem) -> None:
        self.script.extend(items)

    async def wait_until(self, predicate: Callable[[], bool]) -> None:
        """Until ``predicate()`` holds, checked whenever a request arrives or ends."""
        while not predicate():
            await self._changed.wait()

    async def wait_for_requests(self, n: int) -> FakeRequest:
        """Until at least ``n`` requests arrived; returns the n-th."""
        while len(self.requests) < n:
            await self._changed.wait()
        return self.requests[n - 1]

    def close(self) -> None:
        self._cancel.cancel()

    async def _serve(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        with self._cancel:
            listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
            self.port = listeners[0].socket.getsockname()[1]
            task_status.started()
            await trio.serve_listeners(self._connection, listeners)

    async def _connection(self, stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        try:
            request = await self._read_request(conn, stream)
            if request is None:
                return
            model_call = not (request.method == "GET" or request.path == "/api/show")
            if model_call:
                self.requests.append(request)
                self.active += 1
                self.max_active = max(self.max_active, self.active)
                request.counted = True
            else:
                self.info_requests.append(request)
            self._changed.set()
            self._changed = trio.Event()
            try:
                await self._respond(conn, stream, request)
            finally:
                self._ended(request)
        except _CLIENT_GONE:
            pass
        except BaseExceptionGroup as group:  # from the disconnect watcher's nursery
            _gone, rest = group.split(_CLIENT_GONE)
            if rest is not None:
                raise rest from None
        finally:
            await trio.aclose_forcefully(stream)

    async def _read_request(self, conn: h11.Connection, stream: trio.SocketStream) -> FakeRequest | None:
        head: h11.Request | None = None
        body = bytearray()
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await stream.receive_some(65536))
            elif isinstance(event, h11.Request):
                head = event
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                break
            else:  # ConnectionClosed before a full request
                return None
        assert head is not None
        target = head.target.decode()
        path, _, query = target.partition("?")
        headers = {k.decode().lower(): v.decode() for k, v in head.headers}
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        wire = _PATHS.get(path)
        model = parsed.get("model") if isinstance(parsed, dict) else None
        m = _GEMINI_PATH.match(path)
        if m:
            wire, model = "gemini", m.group(1)
        return FakeRequest(head.method.decode(), path, query, headers, bytes(body), parsed, wire, model)

    async def _next_item(self, request: FakeRequest) -> ScriptItem:
        if self._dynamic is not None:
            item = self._dynamic(request)
            return await item if inspect.isawaitable(item) else item  # type: ignore[return-value]
        if not self.script:
            return Fault("status", status=500, message="fake LLM: script exhausted")
        return self.script.pop(0)

    async def _respond(self, conn: h11.Connection, stream: trio.SocketStream, req: FakeRequest) -> None:
        if req.method == "GET" and req.path in ("/v1/models", "/api/tags", "/v1beta/models"):
            await self._send_json(conn, stream, req, 200, self._listing(req.path))
            return
        info = self._model_info(req)
        if info is not None:
            await self._send_json(conn, stream, req, 200, info)
            return
        if req.method == "POST" and req.path == "/v1/embeddings":
            await self._embeddings(conn, stream, req)
            return
        if req.wire is None or req.method != "POST":
            body = error_body(None, 404, f"fake LLM: no route for {req.method} {req.path}", "not_found")
            await self._send_json(conn, stream, req, 404, body)
            return
        item = await self._next_item(req)
        if isinstance(item, JsonAnswer):
            await self._send_json(conn, stream, req, item.status, item.body)
            return
        if isinstance(item, Fault) and item.kind == "overflow":
            body = overflow_body(req.wire, item.tokens, item.limit)
            await self._send_json(conn, stream, req, item.status, body)
            return
        if isinstance(item, Fault) and item.kind == "status":
            extra = [("retry-after", item.retry_after)] if item.retry_after is not None else []
            body = error_body(req.wire, item.status, item.message or f"HTTP {item.status}", item.error_type)
            await self._send_json(conn, stream, req, item.status, body, extra)
            return
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._watch_disconnect, stream, req, nursery.cancel_scope)
            await self._stream_item(conn, stream, req, item)
            nursery.cancel_scope.cancel()

    async def _stream_item(self, conn: h11.Connection, stream: trio.SocketStream, req: FakeRequest, item: ScriptItem) -> None:
        rep = item if isinstance(item, Reply) else item.reply
        frames: list[bytes] = []
        if rep is not None:
            frames = RENDERERS[req.wire](rep, req.model or "fake-model", req.json)  # type: ignore[index]
        delay = rep.delay if rep is not None else 0.0
        limit = len(frames)
        if isinstance(item, Fault):
            if item.kind == "hang" and item.reply is None:
                await trio.sleep_forever()
            limit = item.after_frames
        ctype = "application/x-ndjson" if req.wire == "ollama" else "text/event-stream"
        await self._send(conn, stream, h11.Response(status_code=200, headers=[
            ("content-type", ctype), ("connection", "close"), ("cache-control", "no-cache")]))
        if isinstance(item, Fault) and item.kind == "garbage":
            await self._send(conn, stream, h11.Data(data=item.data))
        elif not isinstance(item, Fault) and frames:
            # The last frame goes out in one write with the end of the body: a client that
            # has its answer may close at once, and the response is then complete already
            # (written apart, a quick client's close could land between them, and a finished
            # answer read as a disconnect).
            for frame in frames[:-1]:
                if delay:
                    await trio.sleep(delay)
                await self._send(conn, stream, h11.Data(data=frame))
            if delay:
                await trio.sleep(delay)
            data = conn.send(h11.Data(data=frames[-1])) + conn.send(h11.EndOfMessage())
            await stream.send_all(data)
            req.completed = True
            return
        else:
            for frame in frames[:limit]:
                if delay:
                    await trio.sleep(delay)
                await self._send(conn, stream, h11.Data(data=frame))
        if isinstance(item, Fault) and item.kind == "stream_error":
            frame = stream_error_frame(req.wire or "openai", item.message, item.error_type or "error",
                                       len(frames[:limit]))
            await self._send(conn, stream, h11.Data(data=frame))
        if isinstance(item, Fault) and item.kind == "hang":
            await trio.sleep_forever()
        if isinstance(item, Fault) and item.kind == "truncate":
            return  # closed without the final chunk: an incomplete body
        self._ended(req)
        await self._send(conn, stream, h11.EndOfMessage())
        req.completed = True

    async def _watch_disconnect(self, stream: trio.SocketStream, req: FakeRequest, scope: trio.CancelScope) -> None:
        try:
            while await stream.receive_some(4096):
                pass  # nothing more is expected from the client; EOF or reset means it left
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        if not req.completed:
            req.disconnected.set()
            scope.cancel()

    async def _send(self, conn: h11.Connection, stream: trio.SocketStream, event: Any) -> None:
        data = conn.send(event)
        if data:
            await stream.send_all(data)

    def _ended(self, req: FakeRequest) -> None:
        """``req`` no longer counts as active: called just before its last bytes are sent (a
        client that got them may send its next request at once, which must not overlap)."""
        if req.counted:
            req.counted = False
            self.active -= 1
            self._changed.set()
            self._changed = trio.Event()

    async def _send_json(self, conn: h11.Connection, stream: trio.SocketStream, req: FakeRequest,
                         status: int, body: bytes | Any, extra: list[tuple[str, str]] | None = None) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        headers = [("content-type", "application/json"), ("content-length", str(len(data))),
                   ("connection", "close"), *(extra or [])]
        await self._send(conn, stream, h11.Response(status_code=status, headers=headers))
        self._ended(req)
        await self._send(conn, stream, h11.Data(data=data))
        await self._send(conn, stream, h11.EndOfMessage())
        req.completed = True

    async def _embeddings(self, conn: h11.Connection, stream: trio.SocketStream,
                          req: FakeRequest) -> None:
        body = req.json if isinstance(req.json, dict) else {}
        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list) or not all(isinstance(t, str) for t in inputs):
            error = error_body("openai", 400, "input must be a string or a list of strings",
                               "invalid_request_error")
            await self._send_json(conn, stream, req, 400, error)
            return
        if self.embeddings_gate is not None:
            await self.embeddings_gate(req)
        data = [{"object": "embedding", "index": i, "embedding": fake_embedding(t)}
                for i, t in enumerate(inputs)]
        await self._send_json(conn, stream, req, 200, {
            "object": "list", "data": data, "model": body.get("model", "fake-embed"),
            "usage": {"prompt_tokens": 0, "total_tokens": 0}})

    def _listing(self, path: str) -> Any:
        if path == "/api/tags":
            return {"models": [{"name": m, "model": m, "size": 0, "details": {"family": "fake"}} for m in self.models]}
        if path.startswith("/v1beta/models"):
            return {"models": [self._gemini_entry(m) for m in self.models]}
        return {"object": "list", "data": [{"id": m, "object": "model", "created": 0, "owned_by": "fake",
                                            **self.model_fields.get(m, {})} for m in self.models]}

    def _gemini_entry(self, model: str) -> dict[str, Any]:
        return {"name": f"models/{model}", "inputTokenLimit": 32768, "outputTokenLimit": 4096,
                **self.model_fields.get(model, {})}

    def _model_info(self, req: FakeRequest) -> Any:
        """The answer to a question about one model, or None (not such a question, or a 404)."""
        if req.method == "GET" and req.path == "/props" and self.props is not None:
            return self.props
        if req.method == "GET" and req.path.startswith("/v1beta/models/") and ":" not in req.path:
            model = req.path.rsplit("/", 1)[1]
            return self._gemini_entry(model) if model in self.models else None
        if req.method == "GET" and req.path.startswith("/api/v0/models/"):
            model = req.path.rsplit("/", 1)[1]
            fields = self.model_fields.get(model)
            return {"id": model, "object": "model", "type": "llm", **fields} if fields else None
        if req.method == "POST" and req.path == "/api/show":
            model = req.json.get("model") if isinstance(req.json, dict) else None
            fields = self.model_fields.get(model or "", {})
            info = {f"fake.{k}": v for k, v in fields.items() if k == "context_length"}
            num_ctx = fields.get("num_ctx")
            return {"model_info": info, "details": {"family": "fake"},
                    "parameters": f"num_ctx {num_ctx}" if num_ctx else ""}
        return None


@asynccontextmanager
async def open_fake_llm(
    nursery: trio.Nursery | None = None,
    *,
    script: Sequence[ScriptItem] | DynamicScript = (),
    models: Sequence[str] = ("fake-model-1", "fake-model-2"),
    props: dict[str, Any] | None = None,
    model_fields: dict[str, dict[str, Any]] | None = None,
) -> AsyncIterator[FakeLLMServer]:
    """Start a server on a free loopback port; stopped (connections cut) on exit. Pass a
    nursery to run it there, or None to get a private one."""
    server = FakeLLMServer(script, models, props, model_fields)
    if nursery is not None:
        await nursery.start(server._serve)
        try:
            yield server
        finally:
            server.close()
        return
    async with trio.open_nursery() as own:
        await own.start(server._serve)
        try:
            yield server
        finally:
            server.close()
