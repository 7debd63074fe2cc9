"""The team-wide limit on model calls in flight (``[team] max_concurrent_model_calls``): the
fake LLM counts the requests it is answering at once, and never sees more than the limit; the
shared slot file a process team uses grants in ticket order and forgets dead holders."""

from __future__ import annotations

import os
import subprocess
import sys

import trio

from nyzhi.core import events as ev
from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime
from nyzhi.team_files.inbox import deliver
from nyzhi.team_files.model_slots import SharedSlots
from nyzhi.testing.cli import read_until
from nyzhi.testing.fake_llm import PerAgent, open_fake_llm, reply, tool_call

MEMBERS = 6
LIMIT = 2


async def _either(*waits) -> None:
    """Until the first of ``waits`` (trio.Event.wait of each side) returns."""
    async with trio.open_nursery() as nursery:
        for wait in waits:
            async def one(wait=wait):
                await wait()
                nursery.cancel_scope.cancel()
            nursery.start_soon(one)


async def test_in_process_members_never_exceed_the_team_limit(workspace, configure, home):
    """Six teammates are woken by one broadcast and all want the model at once. A request is
    held at the server until every member's request is either there or queued at the gate:
    without the limit all six reach the server together, and the count shows it."""
    box = {}

    async def step(request):
        server, gate = box["server"], box["gate"]
        while not (len(server.requests) >= MEMBERS
                   or (server.active >= LIMIT
                       and len(server.requests) + gate.waiting >= MEMBERS)):
            await _either(server._changed.wait, gate.changed.wait)
        return reply("done")

    script = PerAgent({"WORK": [step] * MEMBERS})
    async with open_fake_llm(script=script) as server:
        box["server"] = server
        configure(workspace, server.url_for("openai"),
                  extra=f"\n[team]\nmax_concurrent_model_calls = {LIMIT}\n")
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full", ephemeral=True,
                                               team="lim")) as rt:
            box["gate"] = gate = rt.teams.gate
            for i in range(MEMBERS):
                await rt.teams.spawn_teammate("lim", f"m{i}", "", "worker", None,
                                              ev.MAIN_AGENT)
            sent = await trio.to_thread.run_sync(
                deliver, rt.teams.store, "lim", "lead", "all", "WORK, all of you")
            await rt.teams.messages_sent("lim", sent)
            with trio.fail_after(60):
                await rt.teams.wait_quiet("lim")
            assert gate.limit_value == LIMIT
            assert gate.max_in_flight <= LIMIT
            assert gate.waited > 0  # requests queued for a slot
    assert len(script.seen["WORK"]) == MEMBERS
    assert server.max_active == LIMIT  # reached, never exceeded


async def test_a_session_in_no_team_is_not_limited(workspace, configure, home):
    async with open_fake_llm(script=[]) as server:
        configure(workspace, server.url_for("openai"),
                  extra="\n[team]\nmax_concurrent_model_calls = 1\n")
        async with open_runtime(RuntimeOptions(cwd=workspace, ephemeral=True)) as rt:
            assert rt.teams.gate.limit_value == 0


def test_shared_slots_grant_in_ticket_order(tmp_path):
    slots = SharedSlots(tmp_path)
    slots.set_limit(2)
    me = os.getpid()
    t1, g1 = slots.enqueue(me)
    t2, g2 = slots.enqueue(me)
    t3, g3 = slots.enqueue(me)
    t4, g4 = slots.enqueue(me)
    assert (g1, g2, g3, g4) == (True, True, False, False)
    assert slots.active() == 2
    slots.release(t2)
    assert slots.poll(t3, me) is True  # the oldest waiter gets the freed slot ...
    assert slots.poll(t4, me) is False  # ... not the newest
    slots.release(t1)
    assert slots.poll(t4, me) is True
    assert slots.active() == 2


def test_a_dead_holder_loses_its_slot(tmp_path):
    """A member killed while it held a slot (its pid gone) does not keep it."""
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)
    slots = SharedSlots(tmp_path)
    slots.set_limit(1)
    held, granted = slots.enqueue(child.pid)
    assert granted
    mine, granted = slots.enqueue(os.getpid())
    assert not granted and not slots.poll(mine, os.getpid())
    child.kill()
    child.wait()
    child.stdin.close()  # the pipe Popen opened (left open: a ResourceWarning)
    assert slots.poll(mine, os.getpid()) is True
    assert held not in [e[0] for e in slots._load()["active"]]


def test_a_corrupt_slot_file_is_named(tmp_path):
    (tmp_path / "model_calls.json").write_text("[1, 2]")
    try:
        SharedSlots(tmp_path).enqueue(os.getpid())
    except ValueError as exc:
        assert "model_calls.json" in str(exc)
    else:
        raise AssertionError("a corrupt slot file was accepted")


class Lines:
    """A child's stdout, a line at a time (``read_until``: no sleeps)."""

    def __init__(self, stream) -> None:
        self.stream, self.buf = stream, bytearray()

    async def next(self) -> str:
        await read_until(self.stream, self.buf, b"\n")
        line, _, rest = bytes(self.buf).partition(b"\n")
        self.buf[:] = rest
        return line.decode()


HOLDER = """
import sys, trio
from nyzhi.core.runtime.teams.model_gate import ModelCallGate
from nyzhi.team_files.model_slots import SharedSlots

slots = SharedSlots(sys.argv[1])
real_enqueue = slots.enqueue
def enqueue(pid):
    ticket, granted = real_enqueue(pid)
    print("queued", ticket, flush=True)
    return ticket, granted
slots.enqueue = enqueue

async def main():
    gate = ModelCallGate(None)
    gate.set_limit(int(sys.argv[2]), slots)
    async with gate.slot():
        print("holding", flush=True)
        await trio.to_thread.run_sync(sys.stdin.readline)  # until the test says release
    print("released", flush=True)

trio.run(main)
"""


async def test_process_members_share_the_limit_in_ticket_order(tmp_path):
    """Five processes (as a process team's members) ask for a slot through the real gate over
    one slot file with a limit of 2: two hold, three queue; each release lets in the oldest
    waiter. Without the shared file all five would hold at once."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    env = {**os.environ, "PYTHONPATH": root}
    SharedSlots(tmp_path).set_limit(LIMIT)
    procs, lines, tickets = [], [], []
    try:
        with trio.fail_after(60):
            for _ in range(5):  # one at a time, so the tickets are in start order
                proc = await trio.lowlevel.open_process(
                    [sys.executable, "-c", HOLDER, str(tmp_path), str(LIMIT)], env=env,
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE)
                procs.append(proc)
                lines.append(Lines(proc.stdout))
                word, ticket = (await lines[-1].next()).split()
                assert word == "queued"
                tickets.append(int(ticket))
            assert tickets == sorted(tickets)
            for i in range(LIMIT):  # the first two hold ...
                assert await lines[i].next() == "holding"
            slots = SharedSlots(tmp_path)
            state = slots._load()
            assert [e[0] for e in state["active"]] == tickets[:LIMIT]  # ... the rest wait
            assert [e[0] for e in state["queue"]] == tickets[LIMIT:]
            for i in range(5):  # each release lets the oldest waiter in
                await procs[i].stdin.send_all(b"release\n")
                assert await lines[i].next() == "released"
                if i + LIMIT < 5:
                    assert await lines[i + LIMIT].next() == "holding"
                    active = [e[0] for e in slots._load()["active"]]
                    assert active == tickets[i + 1:i + 1 + LIMIT]
            for proc in procs:
                assert await proc.wait() == 0
    finally:
        for proc in procs:
            proc.kill()
    assert slots._load()["active"] == [] and slots._load()["queue"] == []


async def test_a_process_team_takes_every_model_call_through_the_slot_file(workspace, home,
                                                                           configure):
    """``nyz team start --teammate-mode process``: the lead writes its limit into the team's
    slot file, and every model request of the lead and of each member process takes a ticket
    there; the fake LLM never sees more than the limit at once."""
    from nyzhi.team_files.store import TeamStore
    from nyzhi.testing.cli import run_nyz

    script = PerAgent({
        "LEAD-TASK": [
            reply(tool_calls=[tool_call("send_team_message",
                                        {"to": "all", "message": "WORK: say done"})]),
            reply("sent"),
        ],
        "WORK": [reply("done")] * 3,
    })
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"),
                  extra=f"\n[team]\nmax_concurrent_model_calls = {LIMIT}\n")
        with trio.fail_after(180):
            proc = await run_nyz(
                workspace, home, "team", "start", "pt", "--members",
                "a:worker,b:worker,c:worker", "--task", "LEAD-TASK", "--teammate-mode",
                "process", "--headless", "--output-format", "stream-json")
        assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    assert len(script.seen["WORK"]) == 3
    assert server.max_active <= LIMIT
    slots = SharedSlots(TeamStore().team_dir("pt"))
    state = slots._load()
    assert state["limit"] == LIMIT
    assert state["next"] - 1 == len(server.requests)  # one ticket per model request
    assert state["active"] == [] and state["queue"] == []
