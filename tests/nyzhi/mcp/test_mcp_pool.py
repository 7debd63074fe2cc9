"""The MCP pool in-process, against real servers: connect, tools, calls, crashes, sharing."""

from __future__ import annotations

import functools
import os
import signal
import subprocess

import trio
from _mcp_servers import counted, pids, toml_server

import actors
from nyzhi.config.mcp_sources import ServerEntry
from nyzhi.config.schema import McpStdioServer
from nyzhi.core.loop.agent import UserInput
from nyzhi.core.runtime.mcp.pool import McpPool
from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime
from nyzhi.core.runtime.server_supervision import Intensity
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call
from nyzhi.testing.runtime import run_turn
from nyzhi.testing.waits import until
from nyzhi.tools.registry import ToolRegistry


async def _connected(rt_or_pool, name: str) -> None:
    pool = getattr(rt_or_pool, "mcp", rt_or_pool)
    await pool.links[name].wait_settled()
    link = pool.links[name]
    assert link.status == "connected", (link.status, link.reason)



async def test_tools_registered_with_schema_and_summarised(workspace, configure, npm_servers):
    extra = toml_server("everything", str(npm_servers["everything"]), [])
    async with open_fake_llm(script=[reply("hi")]) as server:
        configure(workspace, server.url_for("openai"), extra=extra)
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full")) as rt:
            await _connected(rt, "everything")
            registry = rt.main_agent.tooling.registry
            echo = registry.get("mcp__everything__echo")
            assert echo is not None and echo.permission.value == "needs_approval"
            assert echo.parameters["properties"]["message"]["type"] == "string"
            assert rt.system.lookup("/mcp/everything/conn") is not None
            # 15 tools (13 before nyz offered elicitation) is not over the default
            # threshold of 15: all sent in full
            assert not registry.is_deferred("mcp__everything__echo")
            [line] = rt.mcp.summaries()
            assert line.startswith("everything: 15 tools") and "echo" in line
            await run_turn(rt, "hello")
            system = [t for role, t in server.requests[0].transcript() if role == "system"]
            assert "everything: 15 tools" in system[0]
            resources = await rt.mcp_resources()
            assert resources and all(r.server == "everything" for r in resources)
            text = await rt.mcp_read_resource("everything", resources[0].uri)
            assert text.strip()
            prompts = await rt.mcp_prompts()
            assert "simple-prompt" in {p.name for p in prompts}
            assert (await rt.mcp_prompt_text("everything", "simple-prompt")).strip()


async def test_progress_becomes_tool_output_delta(workspace, configure, npm_servers):
    extra = toml_server("everything", str(npm_servers["everything"]), [])
    call = tool_call("mcp__everything__trigger-long-running-operation",
                     {"duration": 1, "steps": 2})
    async with open_fake_llm(script=[reply(tool_calls=[call]), reply("done")]) as server:
        configure(workspace, server.url_for("openai"), extra=extra)
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full")) as rt:
            await _connected(rt, "everything")
            handle, events = await run_turn(rt, "run it")
    deltas = [e.text for e in events if e.type == "tool_output_delta"]
    assert any("progress 1/2" in d for d in deltas) and any("progress 2/2" in d for d in deltas)
    done = next(e for e in events if e.type == "tool_done")
    assert not done.is_error and "completed" in done.output


async def test_deferred_above_threshold(workspace, configure, npm_servers):
    extra = "[mcp]\ndefer_threshold = 5\n" + toml_server(
        "everything", str(npm_servers["everything"]), [])
    async with open_fake_llm(script=[reply("hi")]) as server:
        configure(workspace, server.url_for("openai"), extra=extra)
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            await _connected(rt, "everything")
            registry = rt.main_agent.tooling.registry
            # 13 MCP tools > 5: deferred, found through tool_search
            assert registry.is_deferred("mcp__everything__echo")
            assert "mcp__everything__echo" not in {s["name"] for s in registry.schemas()}
            assert "mcp__everything__echo" in registry.prompt_summary()
            assert any(t.name == "mcp__everything__get-sum" for t in registry.search("sum"))


def test_allow_tools_only_covers_its_own_server():
    from nyzhi.core.runtime.mcp.pool import allow_listed

    assert allow_listed("git", "mcp__git__git_status", ["mcp__git__*"])
    assert allow_listed("git", "mcp__git__git_status", ["git_status"])  # bare: this server's
    assert allow_listed("git", "mcp__git__git_commit", ["git_status"]) is None
    assert allow_listed("git", "mcp__git__git_status", ["*"])  # "*" = all of git's tools
    assert allow_listed("evil", "mcp__evil__x", ["mcp__git__*"]) is None
    assert allow_listed("evil", "bash", ["*"]) is None


async def test_crash_mid_call_then_restart(workspace, configure, npm_servers, tmp_path):
    pidfile = tmp_path / "pids"
    command, args = counted([str(npm_servers["everything"])], pidfile)
    extra = toml_server("everything", command, args)
    async with open_fake_llm(script=[reply("hi")]) as server:
        configure(workspace, server.url_for("openai"), extra=extra)
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full")) as rt:
            await _connected(rt, "everything")
            [first] = pids(pidfile)
            progressed = trio.Event()

            async def output(_text: str) -> None:
                progressed.set()

            result = None

            async def call() -> None:
                nonlocal result
                result = await rt.mcp.call_tool(
                    "everything", "trigger-long-running-operation",
                    {"duration": 30, "steps": 30}, output=output)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(call)
                await progressed.wait()  # the call is running on the server
                os.kill(first, signal.SIGKILL)
            assert result.is_error and "'everything'" in result.output
            echoed = await rt.mcp.call_tool("everything", "echo", {"message": "again"})
            assert not echoed.is_error and "again" in echoed.output
            assert len(pids(pidfile)) == 2 and rt.mcp.links["everything"].status == "connected"


async def test_five_agents_share_one_server_process(workspace, configure, npm_servers, tmp_path):
    pidfile = tmp_path / "pids"
    command, args = counted([str(npm_servers["everything"])], pidfile)
    extra = toml_server("everything", command, args)
    names = [f"sub-{i}" for i in range(5)]

    def script(request):
        # each subagent calls echo once, then answers with what came back
        results = request.tool_results()
        if results:
            return reply(results[-1])
        return reply(tool_calls=[tool_call("mcp__everything__echo", {"message": "x"})])

    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"), extra=extra)
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full")) as rt:
            await _connected(rt, "everything")
            subs = [await rt.spawn_agent(n) for n in names]
            handles = [await s.ask(UserInput("echo x")) for s in subs]
            for h in handles:
                await h.wait()
                assert "Echo: x" in h.outcome.text
    assert len(pids(pidfile)) == 1


async def test_failing_server_is_marked_failed_and_others_go_on(helper_server, tmp_path,
                                                                 monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    bad = ServerEntry("bad", McpStdioServer("sh", ("-c", "echo broken config >&2; exit 3")))
    good = ServerEntry("good", McpStdioServer(helper_server[0], tuple(helper_server[1:])))
    registry = ToolRegistry()
    errors = []

    async def publish(event):
        errors.append(event)

    async with actors.open_system() as system:
        pool = await McpPool.open(
            system, registry, [bad, good], root=tmp_path, publish=publish,
            intensity=Intensity(2, 30.0, actors.Backoff(0.01, 0.02)),
        )
        await pool.wait_started()
        statuses = {s.name: s for s in pool.statuses()}
        assert statuses["bad"].status == "failed"
        assert "gave up after 2 restarts" in statuses["bad"].reason
        assert "broken config" in statuses["bad"].reason  # the server's own stderr
        assert statuses["good"].status == "connected" and statuses["good"].tools == 2
        assert "mcp__good__echo" in registry
        assert [e.message for e in errors if "'bad'" in e.message]
        result = await pool.call_tool("bad", "x", {})
        assert result.is_error and "'bad' is failed" in result.output
        assert (await pool.call_tool("good", "echo", {"text": "hi"})).output == "hi"


async def test_missing_command_fails_at_once(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    entry = ServerEntry("nope", McpStdioServer(str(tmp_path / "no-such-server")))
    async with actors.open_system() as system:
        pool = await McpPool.open(system, ToolRegistry(), [entry], root=tmp_path)
        await pool.wait_started()
        [status] = pool.statuses()
    assert status.status == "failed" and "no-such-server" in status.reason


async def test_cancelling_a_call_tells_the_server(helper_server, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    log = tmp_path / "server.log"
    entry = ServerEntry("helper", McpStdioServer(
        helper_server[0], (*helper_server[1:], "--log", str(log))))
    async with actors.open_system() as system:
        pool = await McpPool.open(system, ToolRegistry(), [entry], root=tmp_path)
        await _connected(pool, "helper")
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(pool.call_tool, "helper", "wait", {"seconds": 600})
                # cancelled once the server runs the call (not after a moment, which on a busy
                # machine may come before the request has even arrived)
                await until(lambda: log.exists() and log.read_text() == "started\n",
                            what="the server to start the call")
                scope.cancel()
        assert scope.cancelled_caught
        # the server got notifications/cancelled and cancelled its handler
        await until(lambda: log.read_text() == "started\ncancelled\n",
                    what="the server to cancel its handler")
        echoed = await pool.call_tool("helper", "echo", {"text": "ping"})
        assert echoed.output == "ping"  # and the connection is still good


async def test_hot_add_in_a_running_session(workspace, configure, time_server):
    async with open_fake_llm(script=[reply("hi")]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            assert rt.mcp_status() == []
            await rt.mcp_add("time", McpStdioServer(time_server[0], tuple(time_server[1:])))
            await _connected(rt, "time")
            assert "mcp__time__get_current_time" in rt.main_agent.tooling.registry
            result = await rt.mcp.call_tool("time", "get_current_time", {"timezone": "UTC"})
            assert not result.is_error and "UTC" in result.output


async def test_http_server_gets_the_configured_headers(helper_server, tmp_path, monkeypatch):
    from nyzhi.config.schema import McpHttpServer
    from nyzhi.provider.llama_server import free_loopback_port

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    port = free_loopback_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with_header = ServerEntry("web", McpHttpServer(url, {"X-Token": "abc"}))
    without = ServerEntry("bare", McpHttpServer(url))
    async with trio.open_nursery() as nursery:
        proc = await nursery.start(functools.partial(
            trio.run_process, [*helper_server, "--http", str(port), "--require-header",
                               "X-Token=abc"], stdout=subprocess.PIPE, check=False))
        async for chunk in proc.stdout:  # the helper says "ready" once it is bound
            if b"ready" in chunk:
                break
        async with actors.open_system() as system:
            pool = await McpPool.open(system, ToolRegistry(), [with_header, without],
                                      root=tmp_path,
                                      intensity=Intensity(1, 30.0, actors.Backoff(0.01, 0.02)))
            await pool.wait_started()
            statuses = {s.name: s for s in pool.statuses()}
            assert statuses["web"].status == "connected", statuses["web"].reason
            assert (await pool.call_tool("web", "echo", {"text": "over http"})).output == "over http"
            assert statuses["bare"].status == "failed" and "could not connect" in statuses["bare"].reason
            assert await pool.read_resource("web", "helper://greeting") == "hello from the helper"
        proc.terminate()


async def test_interactive_session_asks_once_for_a_project_server(workspace, configure,
                                                                   helper_server):
    import json

    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": {
        "command": helper_server[0], "args": helper_server[1:]}}}))
    async with open_fake_llm(script=[reply("hi")]) as server:
        configure(workspace, server.url_for("openai"))
        opts = RuntimeOptions(cwd=workspace, interactive=True)
        async with open_runtime(opts) as rt, rt.subscribe() as events:
            async for event in events:
                if event.type == "approval_request":
                    break
            assert event.tool == "mcp server proj" and "helper_server.py" in event.summary
            assert rt.mcp.links["proj"].status == "starting"
            await rt.answer_approval(event.request_id, "approve")
            await _connected(rt, "proj")
        # approved once: the next session starts it without asking
        async with open_runtime(opts) as rt:
            await _connected(rt, "proj")


async def test_large_output_is_offloaded_like_any_tool(workspace, configure, helper_server):
    big = "\n".join(f"line {i} " + "x" * 60 for i in range(400))
    extra = toml_server("helper", helper_server[0], helper_server[1:])
    call = tool_call("mcp__helper__echo", {"text": big})
    async with open_fake_llm(script=[reply(tool_calls=[call]), reply("seen")]) as server:
        configure(workspace, server.url_for("openai"), extra=extra)
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full")) as rt:
            await _connected(rt, "helper")
            _handle, events = await run_turn(rt, "echo it")
    done = next(e for e in events if e.type == "tool_done")
    assert "[Output written to" in done.output and len(done.output) < len(big)
    from nyzhi.tools.output import results_dir

    saved = list(results_dir(workspace).glob("*mcp__helper__echo*"))
    assert len(saved) == 1 and saved[0].read_text() == big
