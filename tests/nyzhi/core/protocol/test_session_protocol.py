"""The session protocol itself (``nyzhi.core.protocol``): ops as typed records through the one
converter, the one status line and ``/status`` card, and a ``Session`` applying ops on a real
runtime (the fake LLM behind it)."""

from __future__ import annotations

import pytest

from nyzhi.core.protocol import Session, SessionStatus, ops, status_card, status_line
from nyzhi.core.protocol.status import AgentLine
from nyzhi.core.runtime.commands.workflows import context_text
from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime
from nyzhi.knowledge.plans import plan_path
from nyzhi.testing.fake_llm import open_fake_llm, reply


@pytest.mark.parametrize("op", [
    ops.UserTurn("hi", attachments=("shot.png",), agent="/agents/main/x"), ops.Interrupt(),
    ops.Interrupt("/agents/main/x", "turn"), ops.Approve("r1", "always"), ops.Answer("r2", "yes"),
    ops.SetTrust("full"), ops.SetPlanMode(True), ops.SetModel("m"), ops.SetThinking("high"),
    ops.SetThinking(2048), ops.RunCommand("/status"), ops.MessageAgent("/agents/main/x", "go"),
    ops.Compact(), ops.Rewind(all=True), ops.Shutdown(),
])
def test_every_op_reads_back_as_written(op):
    data = ops.write_op(op)
    assert data["op"] == op.op and list(data)[0] == "op"  # the tag first
    assert ops.read_op(data) == op


@pytest.mark.parametrize(("data", "message"), [
    ({"op": "launch"}, "unknown op 'launch'; expected one of user_turn, interrupt"),
    ([], "an op must be a JSON object"),
    ({"op": "interrupt", "scope": "all"}, "interrupt op: scope must be one of turn, subtree"),
    ({"op": "approve", "request_id": "r", "answer": "maybe"}, "approve op: answer must be one of"),
    ({"op": "set_model"}, "set_model op: 'model' is missing"),
    ({"op": "user_turn", "text": 5}, "user_turn op: 'text' must be a string, found 5"),
])
def test_a_bad_op_is_one_line_naming_the_field(data, message):
    with pytest.raises(ops.OpError) as caught:
        ops.read_op(data)
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


STATUS = SessionStatus(
    session_id="s-1", cwd="/w", provider="fake", model="m1", trust="autoedit",
    sandbox="workspace-write", plan_mode=True, context_used=9_000, context_window=100_000,
    tokens=1234, cost_usd=0.0123, agents=(AgentLine("/agents/main", "main", "running", 1000, 0.01),
                                          AgentLine("/agents/main/ex", "subagent", "idle", 234)),
    approvals=1, background=("mcp 1/2 connected",))


def test_the_one_status_line():
    assert status_line(STATUS) == ("PLAN · fake/m1 · trust autoedit · sandbox workspace-write · "
                                   "ctx 9% · 1234 tok $0.012 · agents 1/2 · 1 waiting")
    assert "tok" not in status_line(STATUS, usage=False)


def test_the_status_card_is_labelled_rows_under_the_status_line():
    card = status_card(STATUS, extra=(("theme", "light"),)).splitlines()
    assert card[0] == status_line(STATUS)
    width = len("background")  # the longest label: values start one column after it
    assert all(line[width] == " " and line[width + 1] != " " for line in card[1:])
    rows = {line[:width].strip(): line[width + 1:] for line in card[1:]}
    assert rows["session"] == "s-1" and rows["trust"] == "autoedit"
    assert rows["context"] == "~9,000 of 100,000 tokens (9%)"
    assert rows["approvals"] == "1 waiting" and rows["background"] == "mcp 1/2 connected"
    assert rows["theme"] == "light" and rows["plan mode"] == "on (read-only tools)"
    assert rows["agent ex"] == "idle · 234 tok $0.000 (subagent)"


async def test_a_session_applies_ops_and_its_status_counts_context_as_context_does(
        workspace, home, configure):
    async with open_fake_llm(script=[reply("first"), reply("second")]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            session = Session(rt)
            applied = await session.submit(ops.UserTurn("hello"))
            assert (await applied.handle.wait()).text == "first"
            status = session.status()
            figure = context_text(rt.main_agent.loop.context_usage()).splitlines()[0]
            assert f"~{status.context_used:,} of {status.context_window:,} tokens " \
                   f"({status.context})" in figure
            assert status.tokens > 0 and status.running == 0 and status.approvals == 0
            assert session.apply(ops.SetModel("fake-model-2")).notice == \
                "model: fake/fake-model-2 from the next request"
            assert session.apply(ops.SetTrust("auto-edit")).notice == "trust: autoedit"  # an alias
            session.apply(ops.SetTrust("full"))
            with pytest.raises(ValueError, match="invalid trust mode 'often'"):
                session.apply(ops.SetTrust("often"))
            assert session.apply(ops.SetPlanMode(True)).follow_up is None
            plan_path(workspace, rt.session_id).parent.mkdir(parents=True, exist_ok=True)
            plan_path(workspace, rt.session_id).write_text("# Plan\n")
            left = session.apply(ops.SetPlanMode(False))
            assert left.notice == "plan mode off" and left.follow_up.startswith(
                "Plan mode is off. Execute the plan in")
            assert status_line(session.status()).startswith("fake/fake-model-2 · trust full")
            with pytest.raises(ops.OpError, match="run_command needs a front end's command host"):
                await session.submit(ops.RunCommand("/status"))
            with pytest.raises(ops.OpError, match="compact is not applied at once"):
                session.apply(ops.Compact())
            await (await session.submit(ops.UserTurn("again"))).handle.wait()
    assert server.requests[-1].model == "fake-model-2"
