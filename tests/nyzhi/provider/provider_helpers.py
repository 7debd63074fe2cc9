"""Helpers for provider tests: specs pointed at the fake server, and stream collection."""

from __future__ import annotations

import contextlib
import random
from typing import Any

from nyzhi.provider import ProviderSpec, RetryPolicy, build_provider
from nyzhi.provider.types import (
    ChatRequest,
    Message,
    Retry,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallEnd,
    ToolSchema,
)

STYLES = ("openai", "openai-responses", "anthropic", "gemini", "ollama")

READ_TOOL = ToolSchema(
    "read_file",
    "Read a file",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)


def make_spec(server: Any, style: str, *, key: Any = "test-key", **kw: Any) -> ProviderSpec:
    # No client timeouts: under a MockClock a pending read deadline would be jumped to at once.
    kw.setdefault("retry", RetryPolicy(max_retries=3, initial_backoff_ms=1000, max_backoff_ms=8000, jitter=0))
    return ProviderSpec(
        name=f"fake-{style}",
        api_style=style,
        base_url=server.url_for(style),
        model="fake-model-1",
        key=key,
        connect_timeout_s=None,
        read_timeout_s=None,
        **kw,
    )


def simple_request(**kw: Any) -> ChatRequest:
    kw.setdefault("messages", (Message("user", "hello"),))
    return ChatRequest(**kw)


async def collect(spec: ProviderSpec, request: ChatRequest | None = None) -> list[StreamEvent]:
    provider = build_provider(spec)
    provider._rng = random.Random(0)
    events: list[StreamEvent] = []
    async with provider:
        async with contextlib.aclosing(provider.stream(request or simple_request())) as stream:
            async for event in stream:
                events.append(event)
    return events


def text_of(events: list[StreamEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def thinking_of(events: list[StreamEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, ThinkingDelta))


def ends(events: list[StreamEvent]) -> list[ToolCallEnd]:
    return [e for e in events if isinstance(e, ToolCallEnd)]


def retries(events: list[StreamEvent]) -> list[Retry]:
    return [e for e in events if isinstance(e, Retry)]
