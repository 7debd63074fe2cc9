"""Model calls of a member on another host, made by its lead (``[team] proxy_model_calls``).

By default a member on a node uses the node's own credentials. With ``proxy_model_calls`` the
lead starts it with ``--proxy-model-calls MODEL`` and the member's provider is a
``ProxyProvider``: each ``stream`` is a ``model_call`` line on the member's stdout (the
``ChatRequest``), and the lead runs it on its own provider (its keys, its retries, its rate
limits) and sends each stream event back down the member's stdin as a ``model_event`` line,
then ``model_end``, or ``model_error`` with the provider error's class and words. Leaving a
stream early (a cancelled turn) sends ``model_cancel``. No key crosses the pipe: only the
requests and the answers, which the member has anyway.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

import trio

from nyzhi import convert
from nyzhi.provider import errors as pe
from nyzhi.provider import types as pt

EVENTS: dict[str, type] = {cls.__name__: cls for cls in (
    pt.TextDelta, pt.ThinkingDelta, pt.ToolCallStart, pt.ToolCallDelta, pt.ToolCallEnd,
    pt.Usage, pt.Stop, pt.Retry)}
NOT_PROXIED = ("the lead does not make model calls for its members ([team] proxy_model_calls "
               "is off): give this node its own credentials (nyz login there)")


class ProxyProvider:
    """The member's side: a ``Provider`` whose calls its lead makes. ``pipe`` is the
    member's ``LeadPipe`` (lines out, ``model_*`` lines in)."""

    def __init__(self, pipe: Any, model: str, name: str = "lead") -> None:
        self.pipe = pipe
        self.model = model
        self.name = name

    async def stream(self, request: pt.ChatRequest) -> AsyncGenerator[pt.StreamEvent, None]:
        call_id, events = self.pipe.open_model_call()
        ended = False
        try:
            self.pipe.write({"type": "model_call", "id": call_id,
                             "request": convert.unstructure(request)})
            async for op in events:
                kind = op.get("op")
                if kind == "model_event":
                    cls = EVENTS.get(str(op.get("kind")))
                    if cls is not None:
                        yield convert.structure(op.get("event"), cls, "model_event",
                                                pe.ProviderStreamError)
                elif kind == "model_end":
                    ended = True
                    return
                elif kind == "model_error":
                    ended = True
                    raise provider_error(op, self.name, request.model or self.model)
            ended = True
            raise pe.ProviderConnectionError("the lead has gone in the middle of a model call",
                                             provider=self.name, model=self.model)
        finally:
            self.pipe.close_model_call(call_id)
            if not ended and not self.pipe.closed:
                self.pipe.write({"type": "model_cancel", "id": call_id})


def provider_error(op: dict[str, Any], provider: str, model: str) -> pe.ProviderError:
    """The lead's provider error, as the same class on this side (retry and compaction
    decisions depend on it)."""
    cls = getattr(pe, str(op.get("kind")), None)
    if not (isinstance(cls, type) and issubclass(cls, pe.ProviderError)):
        cls = pe.ProviderError
    message = str(op.get("message") or "model call failed at the lead")
    status = op.get("status") if isinstance(op.get("status"), int) else None
    kw: dict[str, Any] = {"provider": provider, "model": model, "status": status}
    if cls is pe.ContextOverflowError:
        return pe.ContextOverflowError(message, tokens=op.get("tokens"), limit=op.get("limit"),
                                       **kw)
    try:
        return cls(message, **kw)
    except TypeError:  # a class with its own signature
        return pe.ProviderError(message, **kw)


async def serve_model_call(provider: Any, call_id: int, request: Any,
                           send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
    """The lead's side: run the member's request on ``provider``, sending what it streams."""
    try:
        req = convert.structure(request, pt.ChatRequest, "model_call", pe.ProviderError)
        async with contextlib.aclosing(provider.stream(req)) as events:
            async for event in events:
                await send({"op": "model_event", "id": call_id, "kind": type(event).__name__,
                            "event": convert.unstructure(event)})
    except pe.ProviderError as exc:
        await send({"op": "model_error", "id": call_id, "kind": type(exc).__name__,
                    "message": exc.detail, "status": exc.status,
                    "tokens": getattr(exc, "tokens", None), "limit": getattr(exc, "limit", None)})
        return
    await send({"op": "model_end", "id": call_id})


class ModelCalls:
    """The lead's running proxied calls of one member, by id (so ``model_cancel`` finds one)."""

    def __init__(self) -> None:
        self.scopes: dict[int, trio.CancelScope] = {}

    async def run(self, provider: Any, call_id: int, request: Any,
                  send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        with trio.CancelScope() as scope:
            self.scopes[call_id] = scope
            try:
                await serve_model_call(provider, call_id, request, send)
            finally:
                self.scopes.pop(call_id, None)

    def cancel(self, call_id: Any) -> None:
        scope = self.scopes.get(call_id) if isinstance(call_id, int) else None
        if scope is not None:
            scope.cancel()
