"""nyz serve's kept event history is bounded by size as well as by count (issue 55: memory grew
steadily under load; it was the history kept for replay, up to 200,000 events whatever their
size). The real WebSession, fed events as its pump is."""

from __future__ import annotations

import json
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


def _turn(web: WebSession, n: int, deltas: int = 500) -> None:
    web.record(ev.TurnStart(turn_id=f"t{n}", prompt=f"turn {n}"))
    for i in range(deltas):
        web.record(ev.TextDelta(text=f"w{n}.{i} "))
    web.record(ev.TurnComplete(turn_id=f"t{n}"))


def _replayed(web: WebSession, since: int, seen: dict[str, str]) -> dict[str, str]:
    """What app.js shows per (agent, kind) after a reconnect from ``since``: what it had,
    then every backlog event it has not seen (its ``seq <= lastSeq`` rule), appended."""
    out, last = dict(seen), since
    for text in web.backlog(since):
        message = json.loads(text)
        assert message["seq"] > last
        last = message["seq"]
        event = message["event"]
        if event["type"].endswith("_delta"):
            key = f"{event['agent']} {event['type']} {event.get('call_id', '')}"
            out[key] = out.get(key, "") + event["text"]
    assert last == web.seq
    return out


async def test_a_finished_message_is_kept_as_one_event_so_turns_cost_their_text_not_their_deltas():
    # issue 55: 500 deltas a turn, each kept as its own ~130-byte event, were the growth
    async with trio.open_nursery() as nursery:
        web = WebSession(_runtime(), nursery)
        for n in range(40):
            _turn(web, n)
        assert web.seq == 40 * 502
        assert len(web.log) == 40 * 3  # turn start, the one coalesced message, turn complete
        per_turn = web.log_bytes / 40
        assert per_turn < 3 * 500 * 8, per_turn  # its text and offsets, not 500 encoded events
        assert web.log_bytes == (sum(len(t) for _, t in web.log)
                                 + 4 * sum(len(ends) for _, ends in web.runs.values()))
        assert web.first_kept() == 1


async def test_a_reconnect_replays_the_same_text_from_any_event_number():
    async with trio.open_nursery() as nursery:
        web = WebSession(_runtime(), nursery)
        live: list[dict[str, str]] = [{}]  # what a viewer that never left has after each seq
        sub = "/agents/main/sub1"

        def record(event: ev.AnyEvent) -> None:
            web.record(event)
            shown = dict(live[-1])
            if event.type.endswith("_delta"):
                key = f"{event.agent} {event.type} {getattr(event, 'call_id', '')}"
                shown[key] = shown.get(key, "") + event.text
            live.append(shown)

        record(ev.TurnStart(turn_id="t1", prompt="go"))
        for i in range(7):
            record(ev.ThinkingDelta(text=f"hm{i} "))
        for i in range(9):
            record(ev.TextDelta(text=f"é{i} "))
            if i % 4 == 3:  # a subagent's deltas interleave: runs are per agent
                record(ev.TextDelta(text=f"sub{i} ", agent=sub))
        record(ev.ToolStart(call_id="c1", name="bash", arguments="{}"))
        for i in range(5):
            record(ev.ToolOutputDelta(call_id="c1", text=f"line {i}\n"))
        record(ev.ToolDone(call_id="c1", name="bash", output="all"))
        for i in range(6):
            record(ev.TextDelta(text=f"done{i} "))
        record(ev.TurnComplete(turn_id="t1"))
        assert web.runs  # some runs were coalesced
        for since in range(web.seq + 1):
            assert _replayed(web, since, live[since]) == live[-1], since


async def test_coalesced_turns_are_dropped_whole_within_the_byte_bound():
    async with trio.open_nursery() as nursery:
        web = WebSession(_runtime(), nursery, keep_bytes=32 * 1024)
        for n in range(100):
            _turn(web, n)
        assert web.log_bytes <= 32 * 1024
        assert set(web.runs) <= {seq for seq, _ in web.log}  # no offsets kept for a dropped run
        first = web.first_kept()
        assert web.log[0][0] >= first > 1
