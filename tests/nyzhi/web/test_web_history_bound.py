"""nyz serve's kept event history is bounded by size as well as by count (issue 55: memory grew
steadily under load; it was the history kept for replay, up to 200,000 events whatever their
size). The real WebSession, fed events as its pump is."""

from __future__ import annotations

import types

import trio

from nyzhi.config.secrets import Redactor
from nyzhi.core import events as ev
from nyzhi.web.session import WebSession


def _runtime() -> object:
    redactor = Redactor()
    return types.SimpleNamespace(bus=types.SimpleNamespace(redactor=redactor),
                                 tooling=types.SimpleNamespace(redactor=redactor),
                                 session_start=types.SimpleNamespace(cwd="."),
                                 session_id="s1")


async def test_the_history_kept_for_replay_stays_within_its_byte_bound():
    async with trio.open_nursery() as nursery:
        web = WebSession(_runtime(), nursery, keep=200_000, keep_bytes=64 * 1024)
        for i in range(5000):
            web.record(ev.TextDelta(text=f"word {i} "))
        assert web.seq == 5000
        assert web.log_bytes <= 64 * 1024 and web.log_bytes == sum(len(t) for _, t in web.log)
        first = web.log[0][0]
        assert first > 1 and web.log[-1][0] == 5000  # the oldest went, the newest stayed
        assert [seq for seq, _ in web.log] == list(range(first, 5001))  # no gap in what is kept


async def test_the_count_bound_still_holds():
    async with trio.open_nursery() as nursery:
        web = WebSession(_runtime(), nursery, keep=100, keep_bytes=1 << 30)
        for _ in range(1000):
            web.record(ev.TextDelta(text="x"))
        assert len(web.log) == 100 and web.log[0][0] == 901
