"""A provider that answers with a session's recorded model output (``nyz replay --rerun``).

Plugged into the agent loop in place of the real provider, it replays the recorded assistant
turns in order as ordinary provider stream events, so the loop re-executes the tools for real
against the same model decisions. That reproduces a session's side effects (or a bug in tool
handling) without a model, offline and deterministically.

Each ``stream`` call consumes the next recorded assistant message: thinking (with its
signature), text, then each tool call as start / arguments delta / end, then the recorded
usage of that call when there is one, then ``Stop`` (``tool_use`` when the turn called tools,
else ``end_turn``). When the recording runs out the call raises ``RecordingExhausted``: the
rerun asked the model for more than the original session did, i.e. it diverged.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence

from nyzhi.core import events as ev
from nyzhi.core.runtime.sessions.store import Session
from nyzhi.provider.types import (
    ChatRequest,
    Message,
    Stop,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)


class RecordingExhausted(RuntimeError):
    """The rerun asked for more model turns than the session recorded."""


class RecordedProvider:
    """Replays recorded assistant messages as a ``nyzhi.provider.types.Provider``.

    Args:
        turns: the assistant messages to answer with, in order.
        usages: the recorded usage per model call (same order); shorter or empty is fine.
        name, model: what the provider reports (the session's provider and model).
        chunk_size: text is split into deltas of this many characters (0: one delta),
            so front ends see streaming like the original.
    """

    def __init__(
        self,
        turns: Sequence[Message],
        usages: Sequence[Usage] = (),
        *,
        name: str = "recorded",
        model: str = "recorded",
        chunk_size: int = 0,
    ) -> None:
        self.name = name
        self.model = model
        self._turns = [m for m in turns if m.role == "assistant"]
        self._usages = list(usages)
        self._chunk = chunk_size
        self._next = 0
        self.requests: list[ChatRequest] = []  # every request received, for inspection

    @classmethod
    def from_session(cls, session: Session, *, chunk_size: int = 0) -> RecordedProvider:
        """The main agent's recorded turns and per-call usage of ``session``."""
        turns = [m for m in session.history if m.role == "assistant"]
        usages = [
            Usage(e.input_tokens, e.output_tokens, e.cache_read_tokens, e.cache_write_tokens)
            for e in session.events
            if isinstance(e, ev.Usage) and e.agent == ev.MAIN_AGENT
        ]
        if len(usages) != len(turns):  # cannot pair them reliably; report none
            usages = []
        return cls(
            turns, usages, name=session.meta.provider or "recorded",
            model=session.meta.model or "recorded", chunk_size=chunk_size,
        )

    @property
    def remaining(self) -> int:
        """Recorded turns not replayed yet."""
        return len(self._turns) - self._next

    def _chunks(self, text: str) -> list[str]:
        if not self._chunk or len(text) <= self._chunk:
            return [text]
        return [text[i : i + self._chunk] for i in range(0, len(text), self._chunk)]

    async def stream(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        self.requests.append(request)
        if self._next >= len(self._turns):
            raise RecordingExhausted(
                f"the recording has only {len(self._turns)} model turns; the rerun asked for "
                f"turn {self._next + 1} (it diverged from the recorded session)"
            )
        index = self._next
        self._next += 1
        turn = self._turns[index]
        if turn.thinking is not None or turn.thinking_signature is not None:
            yield ThinkingDelta(turn.thinking or "", turn.thinking_signature)
        if turn.content:
            for chunk in self._chunks(turn.content):
                yield TextDelta(chunk)
        for i, call in enumerate(turn.tool_calls):
            yield ToolCallStart(i, call.id, call.name)
            if call.arguments:
                yield ToolCallDelta(i, call.arguments)
            yield ToolCallEnd(i, call.id, call.name, call.arguments)
        if index < len(self._usages):
            yield self._usages[index]
        yield Stop("tool_use" if turn.tool_calls else "end_turn")
