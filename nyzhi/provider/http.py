"""The one streaming loop every wire format shares: HTTP, retries, errors, cancellation.

Retry rules (bounded by ``spec.retry``):

* retried: 429, 408, 5xx, connection errors and timeouts, ``error`` events the adapter marks
  retryable (overloaded), and streams that end before the model's stop;
* on 429 the key is reported to the ``KeySource``; when it has another usable key the retry
  happens at once with it, otherwise we wait Retry-After (seconds or an HTTP date) or the
  exponential backoff;
* every retry is first yielded as a ``Retry`` event, then slept with ``trio.sleep`` (so tests
  on a MockClock are instant);
* **only while nothing has been yielded for the attempt.** Once a delta reached the caller,
  restarting would duplicate text and tool calls on the screen and in the history, so a
  failure after that raises ``StreamInterrupted`` instead and the caller decides (the agent
  loop can drop the partial turn and ask again). The exception: a connection lost after the
  model's own stop (only OpenAI's ``[DONE]`` missing) completes normally.

Cancellation: the HTTP response is opened with ``async with client.stream(...)`` inside the
generator, so a cancel, or the caller leaving its ``aclosing`` block, closes the connection
at once (httpx cannot reuse a half-read connection and drops it).
"""

from __future__ import annotations

import contextlib
import random
import sys
import time
from collections.abc import AsyncGenerator, Iterable, Iterator

import httpx
import trio

from nyzhi.provider.errors import (
    AuthenticationError,
    ContextOverflowError,
    ProviderConnectionError,
    ProviderError,
    ProviderStreamError,
    RateLimitError,
    StreamInterrupted,
    http_error,
    overflow_from_stream,
)
from nyzhi.provider.framing import LineParser, RecordTooLarge, SSEEvent, SSEParser
from nyzhi.provider.spec import ProviderSpec
from nyzhi.provider.stream_guard import StreamGuard, record_too_large
from nyzhi.provider.types import ChatRequest, Retry, StreamEvent, Usage
from nyzhi.provider.wire import Decoder, HttpCall, WireAdapter

MAX_ERROR_BODY = 64 * 1024


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header: delta-seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    import email.utils  # an HTTP date here is rare; the import costs ~2 ms of every start-up

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _finished_tail(decoder: Decoder | None) -> list[StreamEvent] | None:
    if decoder is None or decoder.done or not getattr(decoder, "finished", False):
        return None
    try:
        return decoder.finish()
    except ProviderError:
        return None


class _Attempt:
    """What one attempt got to: whether output reached the caller (then a failure is not
    retried) and its decoder (whose state says whether the model had already stopped)."""

    def __init__(self) -> None:
        self.produced = False
        self.decoder: Decoder | None = None

    def guarded(self, records: Iterable[SSEEvent],
                guard: StreamGuard) -> Iterator[StreamEvent]:
        """The events of ``records`` through the guard; any but usage counts as output."""
        for name, data in records:
            for event in guard.feed(name, data):
                if not isinstance(event, Usage):
                    self.produced = True
                yield event


def make_client(spec: ProviderSpec) -> httpx.AsyncClient:
    timeout = httpx.Timeout(
        connect=spec.connect_timeout_s, read=spec.read_timeout_s, write=60.0, pool=60.0
    )
    _import_httpcore()
    from nyzhi.provider import tls

    context = tls.default_context()  # prewarmed by the front end, or None: httpx builds one
    return httpx.AsyncClient(
        timeout=timeout, follow_redirects=False, verify=context if context is not None else True
    )


def _import_httpcore() -> None:
    """httpcore without its HTTP/2 connections (h2, hpack, hyperframe: ~10 ms of start-up).

    httpx imports httpcore with its first client, and httpcore imports h2 whenever it is
    installed (it is, for hypercorn), falling back to a stub when it is not. No client of ours
    asks for HTTP/2 (TLS offers only http/1.1), so h2 is hidden for that one import; whatever
    imports it later (hypercorn, for ``nyz mcp serve --http``) gets it as usual. Only in
    ``nyz`` itself (``nyzhi.process``): in an embedding program httpcore would keep its
    HTTP/2 stub, and the program's own ``http2=True`` clients would fail."""
    from nyzhi import process

    if not process.claimed() or "httpcore" in sys.modules or "h2" in sys.modules:
        return
    sys.modules["h2"] = None  # type: ignore[assignment]  # ``import h2.x`` fails: the stub
    try:
        import httpcore  # noqa: F401
    finally:
        if "h2" in sys.modules and sys.modules["h2"] is None:
            del sys.modules["h2"]


class HttpProvider:
    """A ``Provider`` speaking one wire format over HTTP. Use as ``async with`` or ``aclose()``
    it when it owns its client (``build_provider`` without ``client=``)."""

    def __init__(
        self,
        spec: ProviderSpec,
        adapter: WireAdapter,
        client: httpx.AsyncClient | None = None,
        *,
        rng: random.Random | None = None,
    ) -> None:
        self.spec = spec
        self.name = spec.name
        self.model = spec.model
        self.adapter = adapter
        self._owns_client = client is None
        self._client = client if client is not None else make_client(spec)
        self._rng = rng or random.Random()

    @property
    def client(self) -> httpx.AsyncClient:
        """The connection pool requests go through; others asking the same server (the
        context-window resolver) share it rather than build a second TLS context."""
        return self._client

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> HttpProvider:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"<HttpProvider {self.name} {self.spec.api_style} model={self.model!r}>"

    async def stream(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        model = request.model or self.model
        max_attempts = self.spec.retry.max_retries + 1
        attempt = 1
        renewed = False  # a refused OAuth token is renewed once per request
        while True:
            fresh = getattr(self.spec.key, "ensure_fresh", None)  # OAuth: renew before expiry
            if fresh is not None:
                await fresh()
            key = self.spec.key.current_key()
            call = self.adapter.build(self.spec, request, key)
            state = _Attempt()
            try:
                # aclosing: a caller leaving mid-stream closes the attempt's connection at once
                async with contextlib.aclosing(self._exchange(call, model, state)) as events:
                    async for event in events:
                        yield event
                return
            except httpx.TransportError as exc:
                tail = _finished_tail(state.decoder)
                if tail is not None:
                    # The model had already stopped (OpenAI finish_reason, Gemini finishReason);
                    # only the trailer ([DONE]) was lost. The answer is complete: do not fail it.
                    for event in tail:
                        yield event
                    return
                failure: ProviderError = ProviderConnectionError(
                    f"connection to {self.spec.base_url} failed ({type(exc).__name__}: {exc})",
                    provider=self.name,
                    model=model,
                )
                failure.__cause__ = exc
            except ProviderError as exc:
                failure = self._named(exc, model, state.produced)
            if isinstance(failure, ContextOverflowError):
                raise failure
            if isinstance(failure, AuthenticationError) and not renewed and key is not None:
                renew = getattr(self.spec.key, "refresh_unauthorized", None)
                if renew is not None and await renew(key):  # a new token: ask again at once
                    renewed = True
                    continue
            delay, reason = self._retry_or_raise(failure, key, attempt, max_attempts, model,
                                                 state.produced)
            attempt += 1
            yield Retry(attempt=attempt, max_attempts=max_attempts, delay=delay, reason=reason)
            await trio.sleep(delay)

    async def _exchange(self, call: HttpCall, model: str,
                        state: _Attempt) -> AsyncGenerator[StreamEvent, None]:
        """One attempt: the request (and its follow-up, for a wire that asks for the answer in
        a second request) streamed into events; what it got to is kept on ``state``."""
        sending: HttpCall | None = call
        while sending is not None:
            async with self._client.stream(
                sending.method, sending.url, headers=sending.headers, json=sending.json
            ) as response:
                if response.status_code >= 400:
                    raise await self._http_error(response, model)
                state.decoder = decoder = self.adapter.decoder()
                guard = StreamGuard(decoder, self.spec.limits)
                bound = self.spec.limits.max_record_chars
                parser = (SSEParser(bound) if self.adapter.framing == "sse"
                          else LineParser(bound))
                try:
                    async with contextlib.aclosing(response.aiter_bytes()) as chunks:
                        async for chunk in chunks:
                            for event in state.guarded(parser.feed(chunk), guard):
                                yield event
                            if decoder.done:
                                # The answer ended (a decoder may end it early, e.g. llama.cpp's
                                # repetition guard): hang up, which stops the server generating.
                                return
                    for event in state.guarded(parser.close(), guard):
                        yield event
                except RecordTooLarge as exc:
                    raise record_too_large(exc) from None
                if sending.then is not None and getattr(decoder, "follow_up", False):
                    sending = sending.then  # the answer is asked for in a second request
                    continue
                for event in guard.finish():
                    yield event
                return

    def _named(self, exc: ProviderError, model: str, produced: bool) -> ProviderError:
        """``exc`` naming this provider and model; an error event saying the prompt is too
        long, before any output, becomes the overflow the caller compacts on."""
        exc.provider = exc.provider or self.name
        exc.model = exc.model or model
        exc.args = (exc._render(),)
        if isinstance(exc, ProviderStreamError) and not produced:
            return overflow_from_stream(exc) or exc
        return exc

    def _retry_or_raise(self, failure: ProviderError, key: str | None, attempt: int,
                        max_attempts: int, model: str, produced: bool) -> tuple[float, str]:
        """The delay and reason of the next attempt, or ``failure`` raised: it is not
        retryable, output already reached the caller (a retry would show it twice), or the
        attempts are used up."""
        if not failure.retryable:
            raise failure
        if produced:
            raise StreamInterrupted(
                f"the stream broke after output was shown ({failure.detail}); not retried "
                "to avoid duplicate output",
                provider=self.name,
                model=model,
                status=failure.status,
                provider_message=failure.provider_message,
            ) from failure
        delay, reason = self._plan_retry(failure, key, attempt)
        if attempt >= max_attempts:
            failure.detail = f"{failure.detail} (gave up after {attempt} attempts)"
            failure.args = (failure._render(),)
            raise failure
        return delay, reason

    def _plan_retry(self, failure: ProviderError, key: str | None, attempt: int) -> tuple[float, str]:
        """Delay and a human reason for the next attempt; raises when waiting is pointless."""
        policy = self.spec.retry
        reason = str(failure)
        if isinstance(failure, RateLimitError):
            if key is not None and self.spec.key.report_rate_limited(key, failure.retry_after):
                return 0.0, f"{reason}; switching to the next API key"
            if failure.retry_after is not None:
                if failure.retry_after > policy.max_retry_after_s:
                    failure.detail = (
                        f"rate limited; the provider asks to wait {failure.retry_after:.0f} s, "
                        f"longer than the {policy.max_retry_after_s:.0f} s we are allowed to wait"
                    )
                    failure.args = (failure._render(),)
                    raise failure
                return failure.retry_after, reason
        return policy.backoff(attempt, self._rng.random()), reason

    async def _http_error(self, response: httpx.Response, model: str) -> ProviderError:
        body = b""
        try:
            async with contextlib.aclosing(response.aiter_bytes()) as chunks:
                async for chunk in chunks:
                    body += chunk
                    if len(body) >= MAX_ERROR_BODY:
                        break
        except httpx.TransportError:
            pass  # the status is what matters; a half-read body still names the problem
        return http_error(
            response.status_code,
            body,
            provider=self.name,
            model=model,
            retry_after=parse_retry_after(response.headers.get("retry-after")),
        )
