"""The incremental thread meter agrees with the full-scan functions it replaces in the loop."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nyzhi.core.loop.context_window import (
    MICRO_COMPACT_CHARS,
    ThreadMeter,
    estimate_tokens,
    micro_compact,
)
from nyzhi.provider.types import Message, ToolCall

MESSAGES = st.builds(
    lambda role, size, call: Message(
        role, "x" * size, tool_calls=(ToolCall("c", "bash", "{}" * call),) if call else ()),
    st.sampled_from(["user", "assistant", "tool", "tool"]),
    st.sampled_from([0, 10, MICRO_COMPACT_CHARS + 1, 3 * MICRO_COMPACT_CHARS]),
    st.integers(0, 3),
)
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.lists(MESSAGES, min_size=1, max_size=4)),
        st.tuples(st.just("replace"), st.lists(MESSAGES, max_size=8)),
    ),
    max_size=25,
)


@settings(max_examples=200, deadline=None)
@given(STEPS)
def test_meter_matches_full_scans(steps):
    meter, thread, reference = ThreadMeter(), [], []
    for op, messages in steps:
        if op == "append":
            thread.extend(messages)
            reference.extend(messages)
        else:  # compaction replaces the thread; the loop resets the meter
            thread[:] = messages
            reference[:] = messages
            meter.reset()
        assert meter.micro_compact(thread) == micro_compact(reference)
        assert thread == reference
        assert meter.estimate(thread, "system") == estimate_tokens(reference, "system")


def test_an_unannounced_replacement_is_detected():
    meter = ThreadMeter()
    thread = [Message("user", "a" * 400)]
    assert meter.estimate(thread) == estimate_tokens(thread)
    thread[:] = [Message("user", "b")]  # shorter, and a different last message
    assert meter.estimate(thread) == estimate_tokens(thread)


def test_micro_compaction_is_idempotent():
    thread = [Message("tool", "y" * (3 * MICRO_COMPACT_CHARS)), *[Message("tool", "") for _ in range(5)]]
    assert micro_compact(thread) == 1
    assert len(thread[0].content) <= MICRO_COMPACT_CHARS and "elided" in thread[0].content
    assert micro_compact(thread) == 0
