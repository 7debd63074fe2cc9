"""Token estimates and micro-compaction of a thread.

Exact token counts need each model's tokenizer; the loop only needs to know when a thread is
getting close to the window, so it uses the same cheap estimate as the original (characters / 4
plus a per-message overhead) and errs on the side of compacting early.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from nyzhi.provider.types import Message

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

    def estimate(self, messages: Sequence[Message], system: str = "") -> int:
        """``estimate_tokens(messages, system)``."""
        self._check(messages)
        n = len(messages)
        if n > self._seen:
            self._chars += estimate_chars(messages[self._seen:])
            self._seen, self._last = n, messages[-1]
        return (self._chars + len(system)) // 4 + MESSAGE_OVERHEAD_TOKENS * n
