"""The way out to the model: every request is redacted before the provider sends it.

Tool results are redacted where tools finish (``nyzhi.tools.execution``), but a request carries
more than tool results: the system prompt (rules files, skills, memory, role prompts), user
messages (a pasted key, an ``@file`` mention, a custom command's template, team messages) and
whatever a hook added. ``RedactingProvider`` wraps the runtime's provider, so every agent,
subagent and compaction request passes one choke point, whatever built its parts.

A thread is sent again on every step, so each message is redacted once and remembered (by
identity, for as long as the message lives); the system prompt and the tool schemas likewise.
An assistant's ``thinking`` is left as it is: providers sign it, and it came from the model.
"""

from __future__ import annotations

import weakref
from collections.abc import AsyncGenerator
from typing import Any

import attrs

from nyzhi.config.secrets import Redactor
from nyzhi.provider import types as pt


class RedactingProvider:
    """``provider`` with known secrets replaced in every request it is given; everything else
    (name, model, other attributes) is the wrapped provider's."""

    def __init__(self, provider: pt.Provider, redactor: Redactor) -> None:
        self._provider = provider
        self._redactor = redactor
        self._messages: dict[int, tuple[weakref.ref[pt.Message], pt.Message]] = {}
        self._last: dict[str, tuple[Any, Any]] = {}  # "system" / "tools" -> (given, redacted)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._provider, name)

    @property
    def wrapped(self) -> pt.Provider:
        return self._provider

    def stream(self, request: pt.ChatRequest) -> AsyncGenerator[pt.StreamEvent, None]:
        return self._provider.stream(self.redact(request))

    def redact(self, request: pt.ChatRequest) -> pt.ChatRequest:
        """``request`` as it may leave: the same object when nothing in it is secret."""
        if not self._redactor:
            return request
        messages = tuple(self._message(m) for m in request.messages)
        system = self._once("system", request.system, self._redactor.redact)
        tools = self._once("tools", request.tools, self._tools)
        if (system is request.system and tools is request.tools
                and all(a is b for a, b in zip(messages, request.messages, strict=True))):
            return request
        return attrs.evolve(request, messages=messages, system=system, tools=tools)

    def _once(self, slot: str, given: Any, redact: Any) -> Any:
        last = self._last.get(slot)
        if last is not None and last[0] is given:
            return last[1]
        out = redact(given)
        self._last[slot] = (given, given if out == given else out)
        return self._last[slot][1]

    def _tools(self, tools: tuple[pt.ToolSchema, ...]) -> tuple[pt.ToolSchema, ...]:
        out = tuple(
            t if (d := self._redactor.redact(t.description)) == t.description
            else attrs.evolve(t, description=d)
            for t in tools)
        return tools if all(a is b for a, b in zip(out, tools, strict=True)) else out

    def _message(self, message: pt.Message) -> pt.Message:
        key = id(message)
        known = self._messages.get(key)
        if known is not None and known[0]() is message:
            return known[1]
        redacted = self._redact_message(message)
        self._messages[key] = (weakref.ref(message, lambda _r, k=key: self._forget(k)), redacted)
        return redacted

    def _forget(self, key: int) -> None:
        self._messages.pop(key, None)

    def _redact_message(self, message: pt.Message) -> pt.Message:
        redact = self._redactor.redact
        changes: dict[str, Any] = {}
        content = redact(message.content)
        if content != message.content:
            changes["content"] = content
        if message.tool_calls:
            calls = tuple(
                c if (a := redact(c.arguments)) == c.arguments else attrs.evolve(c, arguments=a)
                for c in message.tool_calls)
            if any(a is not b for a, b in zip(calls, message.tool_calls, strict=True)):
                changes["tool_calls"] = calls
        return attrs.evolve(message, **changes) if changes else message
