"""Faults over real HTTP: retries (on virtual time), key rotation, clear errors, cancellation."""

from __future__ import annotations

import contextlib
import socket

import pytest
import trio
from provider_helpers import collect, make_spec, retries, simple_request, text_of

from nyzhi.provider import (
    AuthenticationError,
    BadRequestError,
    NotFoundError,
    PermissionDeniedError,
    ProviderConnectionError,
    RateLimitError,
    RetryPolicy,
    ServerError,
    StreamEndedEarly,
    StreamInterrupted,
    build_provider,
)
from nyzhi.provider.types import TextDelta
from nyzhi.testing.fake_llm import (
    garbage,
    hang,
    http_error,
    open_fake_llm,
    rate_limited,
    reply,
    server_error,
    truncated,
)
from nyzhi.testing.fake_llm_wire import RENDERERS


class TwoKeys:
    """A fake two-account KeySource: a 429 cools the key down and moves to the other."""

    def __init__(self) -> None:
        self.keys = ["key-one", "key-two"]
        self.cooling: set[str] = set()
        self.reports: list[tuple[str, float | None]] = []

    def current_key(self) -> str | None:
        return next((k for k in self.keys if k not in self.cooling), self.keys[0])

    def report_rate_limited(self, key: str, retry_after: float | None) -> bool:
        self.reports.append((key, retry_after))
        self.cooling.add(key)
        return any(k not in self.cooling for k in self.keys)


def _auth(req: object, style: str) -> str:
    headers = req.headers  # type: ignore[attr-defined]
    return headers.get("authorization", "").removeprefix("Bearer ") or headers.get("x-api-key") \
        or headers.get("x-goog-api-key", "")


async def test_429_honours_retry_after_on_virtual_time(style: str, autojump_clock: object) -> None:
    start = trio.current_time()
    async with open_fake_llm(None, script=[rate_limited(7), reply("after the wait")]) as server:
        events = await collect(make_spec(server, style))
        assert len(server.requests) == 2
    (retry,) = retries(events)
    assert (retry.attempt, retry.max_attempts, retry.delay) == (2, 4, 7.0)
    assert "rate limit exceeded, slow down" in retry.reason
    assert text_of(events) == "after the wait"
    assert trio.current_time() - start >= 7.0
    assert isinstance(events[0], type(retry))  # the retry is announced before any output


async def test_429_rotates_to_the_next_key_at_once(style: str, autojump_clock: object) -> None:
    keys = TwoKeys()
    start = trio.current_time()
    async with open_fake_llm(None, script=[rate_limited(30), reply("from key two")]) as server:
        events = await collect(make_spec(server, style, key=keys))
        used = [_auth(r, style) for r in server.requests]
    assert used == ["key-one", "key-two"]
    assert keys.reports == [("key-one", 30.0)]
    (retry,) = retries(events)
    assert retry.delay == 0.0 and "next API key" in retry.reason
    assert trio.current_time() - start < 1.0
    assert text_of(events) == "from key two"


async def test_both_keys_limited_waits_retry_after(autojump_clock: object) -> None:
    keys = TwoKeys()
    script = [rate_limited(5), rate_limited(9), reply("finally")]
    async with open_fake_llm(None, script=script) as server:
        events = await collect(make_spec(server, "anthropic", key=keys))
    assert [r.delay for r in retries(events)] == [0.0, 9.0]
    assert keys.reports == [("key-one", 5.0), ("key-two", 9.0)]
    assert text_of(events) == "finally"


async def test_429_without_retry_after_uses_backoff_then_gives_up(autojump_clock: object) -> None:
    async with open_fake_llm(None, script=[rate_limited(None)] * 4) as server:
        spec = make_spec(server, "openai")
        with pytest.raises(RateLimitError) as info:
            await collect(spec)
        assert len(server.requests) == 4
    err = info.value
    assert err.status == 429 and "gave up after 4 attempts" in str(err)
    assert "rate limit exceeded" in str(err) and "fake-openai" in str(err)


async def test_retry_after_longer_than_cap_fails_at_once(autojump_clock: object) -> None:
    async with open_fake_llm(None, script=[rate_limited(3600)]) as server:
        with pytest.raises(RateLimitError, match="3600 s") as info:
            await collect(make_spec(server, "openai"))
    assert info.value.retry_after == 3600.0


async def test_500_then_success_with_exponential_backoff(style: str, autojump_clock: object) -> None:
    script = [server_error(500), server_error(503, "overloaded"), reply("recovered")]
    async with open_fake_llm(None, script=script) as server:
        events = await collect(make_spec(server, style))
    assert [(r.attempt, r.delay) for r in retries(events)] == [(2, 1.0), (3, 2.0)]
    assert text_of(events) == "recovered"


async def test_backoff_is_capped_and_jittered_within_bounds() -> None:
    policy = RetryPolicy(initial_backoff_ms=1000, max_backoff_ms=3000, jitter=0.5)
    assert policy.backoff(1, 0.0) == 1.0
    assert policy.backoff(5, 0.0) == 3.0  # capped
    assert policy.backoff(5, 0.999) == pytest.approx(1.5015)  # shortened by at most half
    assert all(1.5 <= policy.backoff(9, r / 10) <= 3.0 for r in range(10))


async def test_5xx_exhausted_raises_server_error(autojump_clock: object) -> None:
    async with open_fake_llm(None, script=[server_error(502, "bad gateway")] * 2) as server:
        spec = make_spec(server, "gemini", retry=RetryPolicy(max_retries=1, jitter=0))
        with pytest.raises(ServerError, match="bad gateway") as info:
            await collect(spec)
    assert info.value.status == 502


async def test_truncated_stream_before_output_is_retried(style: str, autojump_clock: object) -> None:
    script = [truncated(after_frames=0), reply("second try")]
    async with open_fake_llm(None, script=script) as server:
        events = await collect(make_spec(server, style))
        assert len(server.requests) == 2
    (retry,) = retries(events)
    assert "connection" in retry.reason or "ended" in retry.reason
    assert text_of(events) == "second try"


async def test_truncated_stream_after_output_raises_stream_interrupted(style: str) -> None:
    long = reply("x" * 400, chunk_size=10)
    frames = RENDERERS[style](long, "m", {"stream_options": {"include_usage": True}})
    async with open_fake_llm(None, script=[truncated(long, after_frames=len(frames) // 2)]) as server:
        with pytest.raises(StreamInterrupted, match="avoid duplicate output"):
            await collect(make_spec(server, style))
        assert len(server.requests) == 1  # never retried


async def test_garbage_is_retried_then_gives_a_clear_error(style: str, autojump_clock: object) -> None:
    async with open_fake_llm(None, script=[garbage(), reply("clean")]) as server:
        events = await collect(make_spec(server, style))
    assert text_of(events) == "clean" and len(retries(events)) == 1
    async with open_fake_llm(None, script=[garbage()] * 2) as server:
        spec = make_spec(server, style, retry=RetryPolicy(max_retries=1, jitter=0))
        with pytest.raises(StreamEndedEarly, match="ended before the model finished.*gave up after 2"):
            await collect(spec)


@pytest.mark.parametrize(
    ("status", "cls", "hint"),
    [
        (400, BadRequestError, "rejected the request"),
        (401, AuthenticationError, "nyz login"),
        (403, PermissionDeniedError, "not allowed"),
        (404, NotFoundError, "check base_url"),
    ],
)
async def test_non_retryable_errors_name_everything(style: str, status: int, cls: type, hint: str) -> None:
    message = f"the provider says no ({status})"
    async with open_fake_llm(None, script=[http_error(status, message), reply("never")]) as server:
        with pytest.raises(cls) as info:
            await collect(make_spec(server, style))
        assert len(server.requests) == 1
    text = str(info.value)
    assert message in text and hint in text
    assert f"HTTP {status}" in text and f"fake-{style}" in text and "fake-model-1" in text
    assert info.value.status == status and not info.value.retryable


async def test_connection_refused_is_retried_then_reported(autojump_clock: object) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    class Dead:
        def url_for(self, style: str) -> str:
            return f"http://127.0.0.1:{port}/v1"

    spec = make_spec(Dead(), "openai", retry=RetryPolicy(max_retries=2, jitter=0))
    events: list[object] = []
    with pytest.raises(ProviderConnectionError, match="ConnectError") as info:
        provider = build_provider(spec)
        async with provider, contextlib.aclosing(provider.stream(simple_request())) as stream:
            async for event in stream:
                events.append(event)
    assert len(retries(events)) == 2  # type: ignore[arg-type]
    assert info.value.__cause__ is not None


async def _consume(provider: object, *, stop_after_first_text: bool = False) -> None:
    async with contextlib.aclosing(provider.stream(simple_request())) as stream:  # type: ignore[attr-defined]
        async for event in stream:
            if stop_after_first_text and isinstance(event, TextDelta):
                return


async def test_cancel_while_waiting_for_headers_closes_the_connection(style: str) -> None:
    async with open_fake_llm(None, script=[hang()]) as server:
        async with build_provider(make_spec(server, style)) as provider:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_consume, provider)
                req = await server.wait_for_requests(1)
                nursery.cancel_scope.cancel()
            with trio.fail_after(10):
                await req.disconnected.wait()
    assert not req.completed


async def test_leaving_mid_stream_closes_the_connection(style: str) -> None:
    script = [hang(reply("partial answer that never ends", chunk_size=3), after_frames=6)]
    async with open_fake_llm(None, script=script) as server:
        async with build_provider(make_spec(server, style)) as provider:
            with trio.fail_after(10):
                await _consume(provider, stop_after_first_text=True)
                await server.requests[0].disconnected.wait()


async def test_cancel_during_backoff_sleep_is_prompt(autojump_clock: object) -> None:
    async with open_fake_llm(None, script=[rate_limited(60), reply("late")]) as server:
        async with build_provider(make_spec(server, "openai")) as provider:
            with trio.move_on_after(5) as scope:
                await _consume(provider)
        assert scope.cancelled_caught and len(server.requests) == 1


async def test_in_stream_error_events(style: str, autojump_clock: object) -> None:
    from nyzhi.provider import ProviderStreamError
    from nyzhi.testing.fake_llm import stream_error

    retryable_type = {"anthropic": "overloaded_error", "gemini": "UNAVAILABLE",
                      "openai-responses": "server_error"}.get(style)
    if retryable_type is not None:  # an overloaded event before any output is retried
        script = [stream_error("Overloaded", retryable_type), reply("ok now")]
        async with open_fake_llm(None, script=script) as server:
            events = await collect(make_spec(server, style))
        assert text_of(events) == "ok now" and len(retries(events)) == 1
    script = [stream_error("your prompt is bad", "invalid_request_error"), reply("never")]
    async with open_fake_llm(None, script=script) as server:
        with pytest.raises(ProviderStreamError, match="your prompt is bad") as info:
            await collect(make_spec(server, style))
        assert len(server.requests) == 1
    assert "fake-model-1" in str(info.value)


async def test_connection_lost_after_the_model_stopped_is_not_an_error() -> None:
    """OpenAI: finish_reason and usage arrived, only [DONE] was lost: the answer stands."""
    rep = reply("complete answer")
    frames = RENDERERS["openai"](rep, "m", {"stream_options": {"include_usage": True}})
    async with open_fake_llm(None, script=[truncated(rep, after_frames=len(frames) - 1)]) as server:
        events = await collect(make_spec(server, "openai"))
        assert len(server.requests) == 1
    assert text_of(events) == "complete answer" and events[-1].reason == "end_turn"
    assert events[-2].output_tokens == 7  # type: ignore[attr-defined]
