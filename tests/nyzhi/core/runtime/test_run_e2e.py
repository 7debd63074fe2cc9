"""``nyz run`` as a user runs it: a real subprocess, real HTTP to the scripted fake LLM,
real files and real tool subprocesses."""

from __future__ import annotations

import json
import signal
import subprocess

import trio

from nyzhi.testing.cli import (
    NYZ,
    json_lines,
    nyz_env,
    run_nyz,
    settled_running,
    started_running,
)
from nyzhi.testing.fake_llm import hang, http_error, open_fake_llm, reply, tool_call


async def test_text_output_multi_step(workspace, home, configure):
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / "b.txt").write_text("beta\n")
    script = [
        # two read-only calls in one step (they run concurrently), then a second step
        reply(tool_calls=[tool_call("read", {"file_path": "a.txt"}),
                          tool_call("read", {"file_path": "b.txt"})]),
        reply(tool_calls=[tool_call("glob", {"pattern": "*.txt"})]),
        reply("alpha and beta"),
    ]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        proc = await run_nyz(workspace, home, "run", "read both files")
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.decode().strip() == "alpha and beta"
    assert "[tool: read]" in proc.stderr.decode()
    second = server.requests[1].tool_results()
    assert any("alpha" in r for r in second) and any("beta" in r for r in second)
    assert len(server.requests) == 3


async def test_stdin_goes_before_prompt_and_json_format(workspace, home, configure):
    async with open_fake_llm(script=[reply("ok")]) as server:
        configure(workspace, server.url_for("anthropic"), api_style="anthropic")
        proc = await run_nyz(workspace, home, "run", "--output-format", "json", "summarise",
                         stdin=b"PIPED DIFF")
    assert proc.returncode == 0, proc.stderr.decode()
    [result] = json_lines(proc.stdout)
    assert result["type"] == "result" and result["result"] == "ok"
    assert result["is_error"] is False and result["session_id"]
    assert set(result["usage"]) >= {"input_tokens", "output_tokens", "cost_usd"}
    sent = server.requests[0].last_user_text()
    assert sent.index("PIPED DIFF") < sent.index("summarise")


async def test_stream_json_events(workspace, home, configure):
    script = [reply(tool_calls=[tool_call("think", {"thought": "plan"})]), reply("done")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("gemini"), api_style="gemini")
        proc = await run_nyz(workspace, home, "run", "--output-format", "stream-json", "go")
    assert proc.returncode == 0, proc.stderr.decode()
    events = json_lines(proc.stdout)
    assert events[0]["type"] == "session_start" and events[0]["session_id"]
    assert events[-1]["type"] == "result" and events[-1]["result"] == "done"
    assert events[-1]["session_id"] == events[0]["session_id"]
    kinds = [e["type"] for e in events]
    for kind in ("turn_start", "text_delta", "tool_start", "tool_done", "usage", "turn_complete"):
        assert kind in kinds, kind
    assert all(e.get("agent") == "/agents/main" for e in events[1:-1])


async def test_headless_approval_denied_unless_trust_full(workspace, home, configure):
    script = [
        reply(tool_calls=[tool_call("write", {"file_path": "new.txt", "content": "x"})]),
        reply("could not write"),
        reply(tool_calls=[tool_call("write", {"file_path": "new.txt", "content": "x"})]),
        reply("written"),
    ]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        denied = await run_nyz(workspace, home, "run", "--output-format", "stream-json", "write it")
        assert not (workspace / "new.txt").exists()
        done = [e for e in json_lines(denied.stdout) if e["type"] == "tool_done"][0]
        assert done["is_error"] and "--trust" in done["output"]
        allowed = await run_nyz(workspace, home, "run", "--trust", "full", "write it")
    assert allowed.returncode == 0, allowed.stderr.decode()
    assert (workspace / "new.txt").read_text() == "x"


async def test_provider_error_exits_1_with_clear_message(workspace, home, configure):
    async with open_fake_llm(script=[http_error(401, "invalid x-api-key")]) as server:
        configure(workspace, server.url_for("anthropic"), api_style="anthropic")
        proc = await run_nyz(workspace, home, "run", "hi")
    assert proc.returncode == 1
    err = proc.stderr.decode()
    assert "401" in err and "invalid x-api-key" in err and "sk-test-key" not in err


async def test_resume_with_continue(workspace, home, configure):
    async with open_fake_llm(script=[reply("first answer"), reply("second answer")]) as server:
        configure(workspace, server.url_for("openai"))
        one = await run_nyz(workspace, home, "run", "--output-format", "json", "remember BLUE")
        two = await run_nyz(workspace, home, "run", "--continue", "--output-format", "json", "what colour?")
    assert one.returncode == 0 and two.returncode == 0, two.stderr.decode()
    assert json_lines(one.stdout)[0]["session_id"] == json_lines(two.stdout)[0]["session_id"]
    transcript = server.requests[1].transcript()
    assert ("user", "remember BLUE") in transcript and ("assistant", "first answer") in transcript



async def _interrupt_when(proc: trio.Process, stdout: trio.abc.ReceiveStream, seen: str) -> bytes:
    buf = b""
    async for chunk in stdout:
        buf += chunk
        if seen.encode() in buf:
            proc.send_signal(signal.SIGINT)
            break
    async for chunk in stdout:
        buf += chunk
    return buf


async def test_interrupt_mid_stream_exits_130(workspace, home, configure):
    async with open_fake_llm(script=[hang(reply("partial answer that never ends"), after_frames=2)]) as server:
        configure(workspace, server.url_for("openai"))
        proc = await trio.lowlevel.open_process(
            [*NYZ, "run", "--output-format", "stream-json", "hi"], cwd=workspace,
            env=nyz_env(home), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )
        out = await _interrupt_when(proc, proc.stdout, '"text_delta"')
        code = await proc.wait()
    assert code == 130
    events = json_lines(out)
    assert events[-1]["type"] == "result" and events[-1]["is_error"] is True


async def test_interrupt_mid_bash_leaves_no_orphans(workspace, home, configure):
    marker = "987654"
    command = f"sleep {marker} & echo READY-TO-$((6*7)); sleep {marker}"
    script = [reply(tool_calls=[tool_call("bash", {"command": command, "timeout": 600})])]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"), extra='[agent.sandbox]\nlevel = "full-access"\n')
        proc = await trio.lowlevel.open_process(
            [*NYZ, "run", "--trust", "full", "--output-format", "stream-json", "run it"],
            cwd=workspace, env=nyz_env(home), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )
        buf = b""
        async for chunk in proc.stdout:  # streamed tool output: the sleeps are running
            buf += chunk
            if b"READY-TO-42" in buf:
                break
        assert await started_running(marker)
        proc.send_signal(signal.SIGINT)
        async for chunk in proc.stdout:
            buf += chunk
        code = await proc.wait()
    assert code == 130
    assert await settled_running(marker) == [], buf.decode()
    done = [e for e in json_lines(buf) if e["type"] == "tool_done"]
    assert done and done[0]["is_error"]


async def test_retry_is_an_event_the_caller_sees(workspace, home, configure):
    from nyzhi.testing.fake_llm import rate_limited

    async with open_fake_llm(script=[rate_limited(retry_after=0), reply("after retry")]) as server:
        configure(workspace, server.url_for("openai"))
        proc = await run_nyz(workspace, home, "run", "--output-format", "stream-json", "hi")
    assert proc.returncode == 0, proc.stderr.decode()
    events = json_lines(proc.stdout)
    retry = [e for e in events if e["type"] == "retry"]
    assert retry and retry[0]["attempt"] == 2 and "429" in retry[0]["reason"]
    assert events[-1]["result"] == "after retry"


async def test_every_stream_json_line_is_an_event_of_the_vocabulary(workspace, home, configure):
    from nyzhi.core import events as ev

    script = [reply(tool_calls=[tool_call("think", {"thought": "plan"})]), reply("done")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        proc = await run_nyz(workspace, home, "run", "--output-format", "stream-json", "go")
    assert proc.returncode == 0, proc.stderr.decode()
    events = [ev.from_json(line) for line in json_lines(proc.stdout)]
    assert not [e for e in events if isinstance(e, ev.GenericEvent)]
    assert isinstance(events[0], ev.SessionStart) and isinstance(events[-1], ev.Result)
    assert events[-1].result == "done" and events[-1].session_id == events[0].session_id
    starts = [e for e in events if isinstance(e, ev.TurnStart)]
    ends = [e for e in events if isinstance(e, ev.TurnComplete)]
    assert [e.turn_id for e in ends] == [e.turn_id for e in starts] != []
    # and so is every event record of the session log
    log = next((home / ".local" / "share").rglob(f"{events[0].session_id}*.jsonl"))
    records = [json.loads(line) for line in log.read_text().splitlines()]
    logged = [ev.from_json(r["event"]) for r in records if r["kind"] == "event"]
    assert logged and not [e for e in logged if isinstance(e, ev.GenericEvent)]


async def test_a_runtime_that_cannot_start_prints_an_error_event(workspace, home):
    (workspace / ".nyzhi" / "config.toml").write_text(
        '[provider]\ndefault = "nowhere"\n[provider.nowhere]\nmodel = "m"\n')
    proc = await run_nyz(workspace, home, "run", "--output-format", "stream-json", "hi")
    assert proc.returncode == 1
    error, result = json_lines(proc.stdout)
    assert error["type"] == "error" and error["agent"] == "/agents/main"
    assert error["kind"] == "startup" and error["retryable"] is False
    assert result["type"] == "result" and result["is_error"] is True
    assert result["subtype"] == "startup_error" and result["error"] == error["message"]
    assert "base_url" in error["message"] and "base_url" in proc.stderr.decode()
