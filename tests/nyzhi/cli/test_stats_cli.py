"""``nyz stats``, ``nyz cost`` and ``/stats`` read the session journals (issue 37).

Sessions are real: made by ``nyz run`` against the scripted fake LLM, or written with the real
session writer under a chosen clock (to spread usage over days, weeks and months). The index
is proven incremental by planting a number in it: an unchanged log keeps its indexed summary,
a changed one is folded again.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from pathlib import Path

import pytest
import trio

from nyzhi.core import events as ev
from nyzhi.core.runtime.sessions import SessionStore
from nyzhi.core.runtime.sessions import store as store_module
from nyzhi.testing.cli import run_nyz
from nyzhi.testing.fake_llm import FakeUsage, open_fake_llm, reply, tool_call


@pytest.fixture(autouse=True)
def utc():
    """Local days are UTC days here, in this process and in the nyz it starts."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if before is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = before
    time.tzset()


async def nyz_json(workspace: Path, home: Path, *args: str) -> dict:
    with trio.fail_after(60):
        proc = await run_nyz(workspace, home, *args, "--json")
    assert proc.returncode == 0, proc.stderr.decode()
    return json.loads(proc.stdout)


class Clock:
    def __init__(self, when: float) -> None:
        self.now = when

    def time(self) -> float:
        return self.now


def write_session(home: Path, clock: Clock, when: dt.datetime, *, model: str, project: str,
                  usd: float, tokens: int, explorer_usd: float = 0.0) -> str:
    """A session whose one turn (and, optionally, an explorer's call) happened at ``when``,
    through the real writer."""
    clock.now = when.timestamp()
    store = SessionStore(home / ".local/share/nyzhi/sessions")
    with store.create(cwd=project, workspace_root=project, provider="fake", model=model,
                      sync="never") as w:
        w.append_event(ev.SessionStart(session_id=w.id, provider="fake", model=model))
        w.append_event(ev.TurnStart(turn_id="t1", prompt="go"))
        w.append_event(ev.Usage(input_tokens=tokens, output_tokens=10, cache_read_tokens=tokens,
                                cost_usd=usd, model=model))
        w.append_event(ev.ToolDone(call_id="c1", name="read"))
        if explorer_usd:
            w.append_agent("/agents/main/explorer-1", {"role": "explorer", "model": "small"})
            w.append_event(ev.Usage(agent="/agents/main/explorer-1", input_tokens=5,
                                    output_tokens=1, cost_usd=explorer_usd, model="small"))
        w.append_event(ev.TurnComplete(turn_id="t1"))
        return w.id


@pytest.fixture
def clock(monkeypatch) -> Clock:
    c = Clock(0.0)
    monkeypatch.setattr(store_module, "time", c)
    return c


async def test_stats_of_sessions_made_by_nyz_run(workspace, home, configure):
    usage = FakeUsage(input_tokens=100, output_tokens=20, cache_read_tokens=300)
    script = [reply(tool_calls=[tool_call("glob", {"pattern": "*.txt"})], usage=usage),
              reply("one", usage=usage), reply("two", usage=usage)]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        for prompt in ("first", "second"):
            with trio.fail_after(60):
                proc = await run_nyz(workspace, home, "run", prompt)
            assert proc.returncode == 0, proc.stderr.decode()
    data = await nyz_json(workspace, home, "stats", "--by", "model")
    assert data["sessions"] == 2 and data["turns"] == 2 and data["tool_calls"] == 1
    assert (data["input_tokens"], data["output_tokens"], data["cache_read_tokens"]) == (
        300, 60, 900)
    assert data["cache_hit_rate"] == 0.75
    assert list(data["groups"]) == ["fake-model-1"]
    with trio.fail_after(60):
        text = (await run_nyz(workspace, home, "stats")).stdout.decode()
    assert "sessions    2" in text and "tool calls  1" in text and "hit rate 75%" in text


async def test_cost_by_period_and_group(workspace, home, clock):
    days = [dt.datetime(2026, 10, 30, 12, tzinfo=dt.UTC),   # October, ISO week 44
            dt.datetime(2026, 11, 2, 12, tzinfo=dt.UTC),    # November, week 45
            dt.datetime(2026, 11, 2, 18, tzinfo=dt.UTC),
            dt.datetime(2026, 11, 4, 9, tzinfo=dt.UTC)]
    write_session(home, clock, days[0], model="big", project="/p/a", usd=1.0, tokens=100)
    write_session(home, clock, days[1], model="big", project="/p/b", usd=2.0, tokens=100,
                  explorer_usd=0.5)
    write_session(home, clock, days[2], model="mid", project="/p/a", usd=0.25, tokens=100)
    write_session(home, clock, days[3], model="mid", project="/p/a", usd=4.0, tokens=100)

    daily = await nyz_json(workspace, home, "cost")
    assert [(p["period"], p["cost_usd"]) for p in daily["periods"]] == [
        ("2026-10-30", 1.0), ("2026-11-02", 2.75), ("2026-11-04", 4.0)]
    assert daily["total"]["cost_usd"] == 7.75 and daily["total"]["turns"] == 4

    weekly = await nyz_json(workspace, home, "cost", "weekly", "--by", "model")
    assert [p["period"] for p in weekly["periods"]] == ["2026-W44", "2026-W45"]
    w45 = weekly["periods"][1]["groups"]
    assert {k: v["cost_usd"] for k, v in w45.items()} == {"mid": 4.25, "big": 2.0, "small": 0.5}

    monthly = await nyz_json(workspace, home, "cost", "monthly", "--by", "project")
    assert {p["period"]: {k: v["cost_usd"] for k, v in p["groups"].items()}
            for p in monthly["periods"]} == {
        "2026-10": {"/p/a": 1.0}, "2026-11": {"/p/a": 4.25, "/p/b": 2.5}}

    agents = await nyz_json(workspace, home, "stats", "--by", "agent")
    assert {k: (v["cost_usd"], v["turns"]) for k, v in agents["groups"].items()} == {
        "main": (7.25, 4), "explorer": (0.5, 0)}
    assert agents["first"].startswith("2026-10-30") and agents["last"].startswith("2026-11-04")


async def test_the_index_is_incremental_and_follows_changes(workspace, home, clock):
    when = dt.datetime(2026, 11, 20, 12, tzinfo=dt.UTC)
    kept = write_session(home, clock, when, model="m", project="/p", usd=1.0, tokens=10)
    grows = write_session(home, clock, when, model="m", project="/p", usd=1.0, tokens=10)
    gone = write_session(home, clock, when, model="m", project="/p", usd=1.0, tokens=10)
    assert (await nyz_json(workspace, home, "stats"))["cost_usd"] == 3.0
    [index] = (home / ".cache/nyzhi/stats").iterdir()
    assert index.stat().st_mode & 0o777 == 0o600

    # plant a figure in the unchanged session's summary: a warm run must use it as it is
    data = json.loads(index.read_text())
    data["sessions"][kept]["summary"]["rows"][0][7] = 100.0  # its cost
    index.write_text(json.dumps(data))
    # the second session goes on (another turn), the third is deleted
    store = SessionStore(home / ".local/share/nyzhi/sessions")
    with store.open(grows, sync="never") as w:
        w.append_event(ev.TurnStart(turn_id="t2"))
        w.append_event(ev.Usage(input_tokens=1, output_tokens=1, cost_usd=0.5, model="m"))
    store.delete(gone)

    after = await nyz_json(workspace, home, "stats")
    assert after["sessions"] == 2 and after["turns"] == 3
    assert after["cost_usd"] == 100.0 + 1.5
    on_disk = json.loads(index.read_text())["sessions"]
    assert set(on_disk) == {kept, grows}


async def test_a_corrupt_index_is_rebuilt_and_no_sessions_is_said(workspace, home, clock):
    assert (await nyz_json(workspace, home, "stats"))["sessions"] == 0
    with trio.fail_after(60):
        proc = await run_nyz(workspace, home, "cost")
    assert proc.returncode == 0 and proc.stdout == b"no usage recorded yet\n"
    write_session(home, clock, dt.datetime(2026, 11, 1, tzinfo=dt.UTC), model="m",
                  project="/p", usd=0.125, tokens=1)
    assert (await nyz_json(workspace, home, "stats"))["cost_usd"] == 0.125
    index_dir = home / ".cache/nyzhi/stats"
    for index in index_dir.iterdir():
        index.write_text("{not json")
    assert (await nyz_json(workspace, home, "stats"))["cost_usd"] == 0.125


async def test_slash_stats_in_the_line_chat(workspace, home, configure):
    usage = FakeUsage(input_tokens=1234, output_tokens=56)
    async with open_fake_llm(script=[reply("ANSWERED", usage=usage)]) as server:
        configure(workspace, server.url_for("openai"))
        with trio.fail_after(60):
            proc = await run_nyz(workspace, home, "chat", "--plain",
                                 stdin=b"hello\n/stats agent\n/stats bogus\n/exit\n")
    out = proc.stdout.decode()
    assert proc.returncode == 0, proc.stderr.decode()
    assert "input 1,234 · output 56" in out and "turns       1" in out
    assert "by agent:" in out and "main" in out
    assert "usage: /stats [model|project|agent]" in out + proc.stderr.decode()


def test_stats_is_in_the_command_registry():
    from nyzhi.core.runtime.commands import COMMANDS

    assert "stats" in COMMANDS and not COMMANDS["stats"].needs
