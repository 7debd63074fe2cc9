"""Token estimates and micro-compaction of a thread.

Exact token counts need each model's tokenizer; the loop only needs to know when a thread is
getting close to the window, so it uses a cheap estimate: characters / 4 plus a per-message
overhead until the provider has answered once, then the ratio of the tokens it counted to the
characters sent (``Calibration``), since code, JSON and non-English text count differently
and every provider counts differently.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from nyzhi.provider.types import Message

if TYPE_CHECKING:
    from nyzhi.core.runtime.sessions.store import Session

MESSAGE_OVERHEAD_TOKENS = 4
# Tool results longer than this, outside the most recent ones, are shortened in place.
MICRO_COMPACT_CHARS = 4000
KEEP_RECENT_TOOL_RESULTS = 5
_MARKER_ROOM = 64  # the elision marker's length, with room for a long count


def estimate_chars(messages: Sequence[Message]) -> int:
    chars = 0
    for m in messages:
        chars += len(m.content) + len(m.thinking or "")
        for call in m.tool_calls:
            chars += len(call.name) + len(call.arguments)
    return chars


def estimate_tokens(messages: Sequence[Message], system: str = "") -> int:
    return (estimate_chars(messages) + len(system)) // 4 + MESSAGE_OVERHEAD_TOKENS * len(messages)


def tokens_for(chars: int, messages: int, ratio: float | None) -> int:
    """Estimated tokens of ``chars`` characters in ``messages`` messages: calibrated by
    ``ratio`` (tokens per character, which already counts the per-message overhead), else
    characters / 4 plus the overhead."""
    if ratio is not None:
        return math.ceil(chars * ratio)
    return chars // 4 + MESSAGE_OVERHEAD_TOKENS * messages


# A ratio is only learnt from a request at least this long: a tiny one is mostly the wire
# format's own overhead, which says nothing about the thread.
MIN_CALIBRATION_CHARS = 2000
# Tokens per character a real prompt can have: ~0.25 for English, ~0.3 for code and JSON, up
# to ~1 for CJK text; a report outside these (a proxy's placeholder usage, a count of only
# the new tokens) is not a measurement and is ignored.
RATIO_BOUNDS = (0.08, 2.0)


class Calibration:
    """Tokens per character, per ``provider/model``: learnt from each response's reported
    input tokens against the characters sent, and from an overflow error's own count.

    The latest measurement wins: it covers the whole request, so it moves smoothly as the
    thread's content changes. Shared by every agent of a runtime (one provider), saved in
    the session's state record and in its ``usage`` events, so a resume starts calibrated.
    """

    def __init__(self, ratios: Mapping[str, float] | None = None) -> None:
        self.ratios: dict[str, float] = dict(ratios or {})

    @staticmethod
    def key(provider: str, model: str) -> str:
        return f"{provider}/{model}"

    def ratio(self, key: str) -> float | None:
        return self.ratios.get(key)

    def observe(self, key: str, tokens: int, chars: int) -> None:
        if tokens <= 0 or chars < MIN_CALIBRATION_CHARS:
            return
        low, high = RATIO_BOUNDS
        if low <= tokens / chars <= high:
            self.ratios[key] = tokens / chars

    def snapshot(self) -> dict[str, float]:
        return dict(self.ratios)

    @classmethod
    def from_session(cls, session: Session | None) -> Calibration:
        """What a resumed session had learnt: the ratios saved with its last compaction, then
        each ``usage`` event logged after it (the last one per model wins)."""
        from nyzhi.core import events as ev
        from nyzhi.core.loop.state_record import read_state

        calibration = cls()
        if session is None:
            return calibration
        calibration.ratios.update(read_state(session.state).calibration or {})
        provider = session.meta.provider
        for event in session.events[session.snapshot_events:]:
            if isinstance(event, ev.Usage) and event.model and event.request_chars:
                tokens = event.input_tokens + event.cache_read_tokens + event.cache_write_tokens
                calibration.observe(cls.key(provider, event.model), tokens, event.request_chars)
        return calibration


def parse_ratios(data: Any) -> dict[str, float]:
    """``{"provider/model": ratio}`` from JSON, dropping anything of the wrong shape."""
    if not isinstance(data, dict):
        return {}
    low, high = RATIO_BOUNDS
    return {
        str(k): float(v) for k, v in data.items()
        if isinstance(v, int | float) and not isinstance(v, bool) and low <= v <= high
    }


def micro_compact(
    messages: list[Message],
    *,
    max_chars: int = MICRO_COMPACT_CHARS,
    keep_recent: int = KEEP_RECENT_TOOL_RESULTS,
) -> int:
    """Shorten oversized tool results older than the last ``keep_recent`` ones, in place.

    The model has already acted on those results; keeping their head and tail preserves the
    gist at a fraction of the context. Returns how many messages were shortened.
    """
    tool_indexes = [i for i, m in enumerate(messages) if m.role == "tool"]
    old = tool_indexes[:-keep_recent] if keep_recent else tool_indexes
    shortened = 0
    for i in old:
        m = messages[i]
        if len(m.content) <= max_chars:
            continue
        # head and tail plus the marker stay within max_chars, so a shortened result is
        # never shortened again
        half = (max_chars - _MARKER_ROOM) // 2
        dropped = len(m.content) - 2 * half
        text = (
            m.content[:half]
            + f"\n[... {dropped} characters elided by micro-compaction ...]\n"
            + m.content[-half:]
        )
        messages[i] = attrs.evolve(m, content=text)
        shortened += 1
    return shortened


class ThreadMeter:
    """``micro_compact`` and ``estimate_tokens`` for a thread that grows at its end, in time
    proportional to what was appended since the last call rather than to the whole thread.

    The turn loop calls both on every step; over a long turn the full scans made each step
    cost O(thread length), which dominated the per-step overhead (and 200 subagents multiply
    it). The meter remembers how many messages it has seen and the last of them: a thread
    that was replaced (compaction, or anything that shrank or rewrote its tail) is detected
    and measured afresh. A rewrite in the middle of the thread by someone else must be
    followed by ``reset()``.
    """

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._seen = 0  # messages measured into _chars
        self._last: Message | None = None
        self._chars = 0
        self._settled = 0  # tool results before this index are past micro-compaction

    def _check(self, messages: Sequence[Message]) -> None:
        seen = self._seen
        if seen and (len(messages) < seen or messages[seen - 1] is not self._last):
            self.reset()

    def micro_compact(self, messages: list[Message]) -> int:
        """Like ``micro_compact(messages)``, looking only at results that became old."""
        self._check(messages)
        # the boundary: index of the KEEP_RECENT_TOOL_RESULTS-th tool result from the end
        boundary, recent = len(messages), 0
        while boundary > self._settled and recent < KEEP_RECENT_TOOL_RESULTS:
            boundary -= 1
            if messages[boundary].role == "tool":
                recent += 1
        if recent < KEEP_RECENT_TOOL_RESULTS:
            return 0  # fewer recent results than kept since the last call: nothing aged
        start, self._settled = self._settled, boundary
        window = messages[start:boundary]
        shortened = micro_compact(window, keep_recent=0)
        if shortened:
            messages[start:boundary] = window
            self.reset()
            self._settled = boundary
        return shortened

    def chars(self, messages: Sequence[Message]) -> int:
        """``estimate_chars(messages)``."""
        self._check(messages)
        n = len(messages)
        if n > self._seen:
            self._chars += estimate_chars(messages[self._seen:])
            self._seen, self._last = n, messages[-1]
        return self._chars

    def estimate(
        self, messages: Sequence[Message], system: str = "", *, extra_chars: int = 0,
        ratio: float | None = None,
    ) -> int:
        """``estimate_tokens(messages, system)``; ``extra_chars`` (the tool definitions) are
        counted too, and ``ratio`` replaces characters / 4 (see ``tokens_for``)."""
        chars = self.chars(messages) + len(system) + extra_chars
        return tokens_for(chars, len(messages), ratio)
