"""The headless ``result``: a stable ``subtype`` and an ``error`` message for every way a run
can end, and the whole agent tree's usage (issue 40). Each subtype through the real ``nyz run``
in both machine formats, against the scripted fake LLM."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio

from nyzhi.headless.run_result import ResultSubtype, budget_subtype
from nyzhi.testing import machine_faults as mf
from nyzhi.testing.cli import NYZ, json_lines, nyz_env, run_nyz
from nyzhi.testing.fake_llm import (
    FakeUsage,
    PerAgent,
    hang,
    http_error,
    open_fake_llm,
    reply,
    tool_call,
)

FORMATS = ["json", "stream-json"]


def looping(n: int = 6, **kw: Any) -> list:
    """``n`` model steps that each call a tool: a run that never answers by itself."""
    return [reply(tool_calls=[tool_call("glob", {"pattern": "*.txt"})], **kw) for _ in range(n)]


def the_result(fmt: str, out: bytes) -> dict[str, Any]:
    lines = json_lines(out)
    if fmt == "json":
        [result] = lines
    else:
        result = lines[-1]
        assert lines[0]["type"] in ("session_start", "error")  # error: nothing started
    assert result["type"] == "result"
    return result


async def nyz_run(workspace: Path, home: Path, fmt: str, *args: str) -> tuple[int, dict, str]:
    with trio.fail_after(60):
        proc = await run_nyz(workspace, home, "run", "--output-format", fmt, *args)
    return proc.returncode, the_result(fmt, proc.stdout), proc.stderr.decode()


def failed(result: dict[str, Any], subtype: str, *words: str) -> None:
    assert result["is_error"] is True and result["subtype"] == subtype, result
    for word in words:
        assert word in result["error"], result


@pytest.mark.parametrize("fmt", FORMATS)
async def test_success(fmt, workspace, home, configure):
    async with open_fake_llm(script=[reply("all good")]) as server:
        configure(workspace, server.url_for("openai"))
        code, result, _ = await nyz_run(workspace, home, fmt, "hi")
    assert code == 0
    assert result["subtype"] == "success" and result["error"] == "" and not result["is_error"]
    # the fields a script read before are all still there
    assert result["result"] == "all good" and result["session_id"]
    assert result["usage"] == {"input_tokens": 12, "output_tokens": 7, "cache_read_tokens": 0,
                               "cache_write_tokens": 0, "thinking_tokens": 0, "cost_usd": 0.0}


@pytest.mark.parametrize("fmt", FORMATS)
async def test_budget_tokens(fmt, workspace, home, configure):
    async with open_fake_llm(script=looping()) as server:
        configure(workspace, server.url_for("openai"))
        code, result, _ = await nyz_run(workspace, home, fmt, "--budget-tokens", "30", "go")
    assert code == 1
    failed(result, "budget_tokens", "budget: tokens 38/30")
    assert len(server.requests) == 2


@pytest.mark.parametrize("fmt", FORMATS)
async def test_budget_usd(fmt, workspace, home, configure):
    usage = FakeUsage(input_tokens=100_000, output_tokens=1_000)  # gpt-4o: $0.26 a step
    async with open_fake_llm(script=looping(usage=usage), models=["gpt-4o"]) as server:
        configure(workspace, server.url_for("openai"))
        code, result, _ = await nyz_run(workspace, home, fmt, "-m", "gpt-4o",
                                        "--budget-usd", "0.4", "go")
    assert code == 1
    failed(result, "budget_usd", "budget: usd 0.5200/0.4000")
    assert result["cost_usd"] == pytest.approx(0.52)


@pytest.mark.parametrize("fmt", FORMATS)
async def test_budget_time(fmt, workspace, home, configure):
    async with open_fake_llm(script=[hang()]) as server:
        configure(workspace, server.url_for("openai"))
        code, result, _ = await nyz_run(workspace, home, fmt, "--budget-time", "1s", "go")
    assert code == 1
    failed(result, "budget_time", "budget: time")


@pytest.mark.parametrize("fmt", FORMATS)
async def test_budget_steps(fmt, workspace, home, configure):
    async with open_fake_llm(script=looping()) as server:
        configure(workspace, server.url_for("openai"),
                  extra="[agent.agents.budget]\nsteps = 2\n")
        code, result, _ = await nyz_run(workspace, home, fmt, "go")
    assert code == 1
    failed(result, "budget_steps", "budget: steps 2/2")
    assert len(server.requests) == 2


@pytest.mark.parametrize("fmt", FORMATS)
async def test_max_steps(fmt, workspace, home, configure):
    async with open_fake_llm(script=looping()) as server:
        configure(workspace, server.url_for("openai"))
        code, result, _ = await nyz_run(workspace, home, fmt, "--max-steps", "2", "go")
    assert code == 1
    failed(result, "max_steps", "maximum of 2 tool-calling steps")


@pytest.mark.parametrize("fmt", FORMATS)
async def test_provider_error(fmt, workspace, home, configure):
    async with open_fake_llm(script=[http_error(400, "no such model here")]) as server:
        configure(workspace, server.url_for("openai"))
        code, result, _ = await nyz_run(workspace, home, fmt, "go")
    assert code == 1
    failed(result, "provider_error", "no such model here")


@pytest.mark.parametrize("fmt", FORMATS)
async def test_blocked_by_a_hook(fmt, workspace, home, configure):
    hook = ('[[agent.hooks]]\nevent = "user_prompt_submit"\n'
            'command = "echo not today >&2; exit 2"\n')
    async with open_fake_llm(script=[reply("never")]) as server:
        configure(workspace, server.url_for("openai"), extra=hook)
        code, result, _ = await nyz_run(workspace, home, fmt, "go")
    assert code == 1
    failed(result, "blocked", "not today")
    assert server.requests == []


@pytest.mark.parametrize("fmt", FORMATS)
async def test_startup_error(fmt, workspace, home):
    (workspace / ".nyzhi" / "config.toml").write_text("[agent]\nmax_steps = 'many'\n")
    code, result, err = await nyz_run(workspace, home, fmt, "go")
    assert code == 1
    failed(result, "startup_error", "agent.max_steps")
    assert result["session_id"] is None and "agent.max_steps" in err
    assert result["usage"]["input_tokens"] == 0 and result["usage_by_agent"] == {}


@pytest.mark.parametrize("fmt", FORMATS)
async def test_cancelled_by_a_signal(fmt, workspace, home, configure):
    async with open_fake_llm(script=[hang()]) as server:
        configure(workspace, server.url_for("openai"))
        proc = await trio.lowlevel.open_process(
            [*NYZ, "run", "--output-format", fmt, "go"], cwd=workspace, env=nyz_env(home),
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        with trio.fail_after(60):
            await server.wait_for_requests(1)  # the turn is running
            proc.send_signal(signal.SIGTERM)
            out = b""
            async for chunk in proc.stdout:
                out += chunk
            assert await proc.wait() == 143
    failed(the_result(fmt, out), "cancelled", "SIGTERM")


@pytest.mark.skipif(mf.skip_reason() is not None, reason=mf.skip_reason() or "")
@pytest.mark.parametrize("fmt", FORMATS)
async def test_save_error(fmt, workspace, home, configure, tmp_path):
    """Answered, but the session log's disk filled up meanwhile."""
    data = tmp_path / "data"
    gate = trio.Event()

    async def script(request):
        await gate.wait()
        return reply("the answer survives. " * 300)  # needs a block the full disk lacks

    with mf.small_tmpfs(data):
        async with open_fake_llm(script=script) as server, trio.open_nursery() as nursery:
            configure(workspace, server.url_for("openai"))
            done: dict = {}

            async def run() -> None:
                with trio.fail_after(60):
                    done["proc"] = await trio.run_process(
                        [*NYZ, "run", "--output-format", fmt, "hello"], cwd=workspace,
                        env={**nyz_env(home), "XDG_DATA_HOME": str(data)},
                        capture_stdout=True, capture_stderr=True, check=False)

            nursery.start_soon(run)
            await server.wait_for_requests(1)
            mf.fill(data)
            gate.set()
    proc = done["proc"]
    assert proc.returncode == 1
    result = the_result(fmt, proc.stdout)
    failed(result, "save_error", "no space left on device")
    assert result["result"].startswith("the answer survives.")


def test_tool_error_is_a_failure_of_the_tool_step_not_of_the_model():
    """A tool's own failure goes back to the model; the step failing (the executor, a hook)
    ends the turn. The real turn loop marks such an exception, and the result says
    ``tool_error`` where a model call's failure says ``provider_error``. (No input a model or
    a user can give makes a tool step raise end to end, so this is the loop in-process.)"""
    from nyzhi.core import events as ev
    from nyzhi.core.loop.agent import TurnHandle
    from nyzhi.core.loop.turn import TurnLoop
    from nyzhi.headless.run_result import turn_failure
    from nyzhi.provider import types as pt
    from nyzhi.provider.errors import ServerError

    class OneCall:
        name, model = "scripted", "m"

        async def stream(self, request):
            yield pt.ToolCallStart(0, "c0", "glob")
            yield pt.ToolCallEnd(0, "c0", "glob", "{}")
            yield pt.Stop("tool_use")

    async def broken_step(calls, results):
        raise RuntimeError("the executor is gone")

    events: list = []

    async def emit(event):
        events.append(event)

    async def main() -> TurnHandle:
        loop = TurnLoop(agent_path=ev.MAIN_AGENT, provider=OneCall(), tool_schemas=list,
                        tool_step=broken_step, system_prompt=str, emit=emit)
        handle = TurnHandle("go")
        try:
            await loop.run("go")
        except RuntimeError as exc:
            handle.error = exc
        return handle

    handle = trio.run(main)
    errors = [e for e in events if isinstance(e, ev.Error)]
    failure = turn_failure(handle, errors)
    assert failure is not None and failure.subtype == "tool_error"
    assert "the executor is gone" in failure.message
    handle.error = ServerError("upstream down")
    assert turn_failure(handle, []).subtype == "provider_error"


def test_budget_reasons_map_to_their_subtypes():
    assert budget_subtype("budget: tokens 126/120") == ResultSubtype.BUDGET_TOKENS
    assert budget_subtype("budget: usd 0.5/0.4") == ResultSubtype.BUDGET_USD
    assert budget_subtype("budget: time 3s/2s") == ResultSubtype.BUDGET_TIME
    assert budget_subtype("budget: steps 2/2") == ResultSubtype.BUDGET_STEPS


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_subagents_usage_counts_in_the_result(fmt, workspace, home, configure):
    """Issue 40's case: the tree spent more than the main agent; ``usage`` and ``cost_usd``
    are the tree's, ``usage_by_agent`` says who spent what."""
    sub = "/agents/main/worker-1"
    script = PerAgent({
        "MAIN": [reply(tool_calls=[tool_call("spawn_agent", {"message": "SUB count",
                                                             "agent_type": "worker"})]),
                 reply(tool_calls=[tool_call("wait", {"ids": [sub]})]),
                 reply("the sub counted")],
        "SUB": [reply(tool_calls=[tool_call("glob", {"pattern": "*"})],
                      usage=FakeUsage(100, 50)),
                reply("counted", usage=FakeUsage(200, 20))],
    })
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        code, result, err = await nyz_run(workspace, home, fmt, "MAIN go")
    assert code == 0, err
    assert result["result"] == "the sub counted"
    by_agent = result["usage_by_agent"]
    assert set(by_agent) == {"/agents/main", sub}
    assert by_agent["/agents/main"]["input_tokens"] == 3 * 12
    assert by_agent[sub]["input_tokens"] == 300 and by_agent[sub]["output_tokens"] == 70
    assert result["usage"]["input_tokens"] == 336
    assert result["usage"]["output_tokens"] == 3 * 7 + 70
    assert result["cost_usd"] == result["usage"]["cost_usd"]


@pytest.mark.parametrize("fmt", FORMATS)
async def test_teammate_error_in_a_headless_team(fmt, workspace, home, configure):
    """``nyz team start --headless``: the lead answered, but a teammate's turn failed."""
    script = PerAgent({
        "LEAD-TASK": [reply(tool_calls=[tool_call("send_team_message", {
                          "to": "alice", "message": "ALICE-JOB: do it"})]),
                      reply("assigned")],
        "ALICE-JOB": [http_error(400, "alice's model is gone")],
    })
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        with trio.fail_after(120):
            proc = await run_nyz(workspace, home, "team", "start", "crew", "--members",
                                 "alice:worker", "--task", "LEAD-TASK: go", "--teammate-mode",
                                 "in-process", "--headless", "--output-format", fmt)
    assert proc.returncode == 1, proc.stderr.decode()[-2000:]
    result = the_result(fmt, proc.stdout)
    failed(result, "teammate_error", "/team/crew/alice", "alice's model is gone")
    assert result["result"] == "assigned"
    assert set(result["usage_by_agent"]) == {"/agents/main"}  # alice's call never answered
