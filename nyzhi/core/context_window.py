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


def estimate_tokens(messages: Sequence[Message], system: str = "") -> int:
    chars = len(system)
    for m in messages:
        chars += len(m.content) + len(m.thinking or "")
        for call in m.tool_calls:
            chars += len(call.name) + len(call.arguments)
    return chars // 4 + MESSAGE_OVERHEAD_TOKENS * len(messages)


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
        half = max_chars // 2
        dropped = len(m.content) - 2 * half
        text = (
            m.content[:half]
            + f"\n[... {dropped} characters elided by micro-compaction ...]\n"
            + m.content[-half:]
        )
        messages[i] = attrs.evolve(m, content=text)
        shortened += 1
    return shortened
