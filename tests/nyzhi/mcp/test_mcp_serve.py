"""`nyz mcp serve` driven by the SDK's own client, over stdio and streamable HTTP."""

from __future__ import annotations

import functools
import subprocess
import sys

import pytest
import trio
from test_mcp_run_e2e import env_for

NYZ = [sys.executable, "-m", "nyzhi"]


def _child_env(home) -> dict[str, str]:
    env = env_for(home)
    return {k: env[k] for k in ("HOME", "PYTHONPATH", "PATH") if k in env}


async def test_stdio_lists_and_calls_through_the_gates(workspace, home):
    from mcp import Client, StdioServerParameters

    (workspace / "notes.txt").write_text("served over mcp\n")
    params = StdioServerParameters(command=sys.executable, args=["-m", "nyzhi", "mcp", "serve"],
                                   env=_child_env(home), cwd=str(workspace))
    async with Client(params) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"read", "write", "glob", "bash"} <= names and "ask_user" not in names
        read = await client.call_tool("read", {"file_path": "notes.txt"})
        assert not read.is_error and "served over mcp" in read.content[0].text
        # default: read-only sandbox, no trust; writing is refused, nothing written
        denied = await client.call_tool("write", {"file_path": "new.txt", "content": "x"})
        assert denied.is_error and "Permission denied" in denied.content[0].text
    assert not (workspace / "new.txt").exists()

    params.args = ["-m", "nyzhi", "mcp", "serve", "--trust", "full",
                   "--sandbox", "workspace-write"]
    async with Client(params) as client:
        wrote = await client.call_tool("write", {"file_path": "new.txt", "content": "x"})
        assert not wrote.is_error, wrote.content[0].text
    assert (workspace / "new.txt").read_text() == "x"


async def test_deferred_tools_are_listed_and_called_and_an_unknown_one_is_an_error(
        workspace, home):
    """Issue 53: the tools a model in nyz loads with tool_search (git_show, ast_search, the
    lsp_* tools...) are listed to an MCP client and can be called; tool_search itself is not
    served; an unknown tool is a JSON-RPC error (-32602)."""
    from mcp import Client, StdioServerParameters
    from mcp.shared.exceptions import MCPError

    from nyzhi.tools.registry import default_registry

    deferred = {t.name for t in default_registry().deferred_tools()}
    (workspace / "a.py").write_text("def f():\n    print(1)\n")
    params = StdioServerParameters(command=sys.executable, args=["-m", "nyzhi", "mcp", "serve"],
                                   env=_child_env(home), cwd=str(workspace))
    async with Client(params) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"git_show", "ast_search", "lsp_hover", "file_info", "notebook_edit"} <= names
        assert "tool_search" not in names
        # every deferred tool the served set keeps (not the subagent or team ones) is listed
        assert {"git_show", "list_skills", "batch_apply"} <= deferred & names
        found = await client.call_tool("ast_search", {"pattern": "print($A)"})
        assert not found.is_error and "a.py" in found.content[0].text, found.content[0].text
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("no_such_tool", {})
        assert unknown.value.code == -32602 and "no_such_tool" in str(unknown.value)


async def _start_http(nursery, workspace, home, *extra: str):
    proc = await nursery.start(functools.partial(
        trio.run_process, [*NYZ, "mcp", "serve", "--http", "127.0.0.1:0", *extra],
        cwd=workspace, env=env_for(home), stderr=subprocess.PIPE, check=False))
    seen = b""
    url = token = None
    async for chunk in proc.stderr:
        seen += chunk
        for line in seen.decode().splitlines():
            if "listening on " in line:
                url = line.split("listening on ", 1)[1].strip()
            if "bearer token " in line:
                token = line.split("bearer token ", 1)[1].strip()
        if url and (token or "--token" in extra):
            return proc, url, token
    raise AssertionError(f"nyz mcp serve did not start: {seen.decode()}")


async def _client_ok(url: str, headers: dict[str, str]) -> list[str]:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with create_mcp_http_client(headers=headers) as http, Client(
            streamable_http_client(url, http_client=http)) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        denied = await client.call_tool("write", {"file_path": "x.txt", "content": "x"})
        assert denied.is_error and "Permission denied" in denied.content[0].text
        listed = await client.call_tool("glob", {"pattern": "*.txt"})
        assert "notes.txt" in listed.content[0].text
        return names


async def _client_refused(url: str, headers: dict[str, str]) -> None:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    with pytest.raises(Exception):  # noqa: B017 - the SDK wraps the 401 in several ways
        async with create_mcp_http_client(headers=headers) as http, Client(
                streamable_http_client(url, http_client=http)) as client:
            await client.list_tools()


async def test_http_requires_the_bearer_token(workspace, home):
    (workspace / "notes.txt").write_text("hi\n")
    async with trio.open_nursery() as nursery:
        proc, url, _ = await _start_http(nursery, workspace, home, "--token", "s3cret")
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
        assert "read" in await _client_ok(url, {"Authorization": "Bearer s3cret"})
        await _client_refused(url, {})
        await _client_refused(url, {"Authorization": "Bearer wrong"})
        proc.terminate()
    assert not (workspace / "x.txt").exists()


async def test_http_generates_and_prints_a_token(workspace, home):
    (workspace / "notes.txt").write_text("hi\n")
    async with trio.open_nursery() as nursery:
        proc, url, token = await _start_http(nursery, workspace, home)
        assert token and len(token) >= 20
        await _client_ok(url, {"Authorization": f"Bearer {token}"})
        await _client_refused(url, {"Authorization": "Bearer x"})
        proc.terminate()


def test_non_loopback_needs_allow_remote(workspace, home):
    proc = subprocess.run([*NYZ, "mcp", "serve", "--http", "0.0.0.0:0"], cwd=workspace,
                          env=env_for(home), capture_output=True, text=True, check=False,
                          timeout=60)
    assert proc.returncode == 1 and "--allow-remote" in proc.stderr
    bad = subprocess.run([*NYZ, "mcp", "serve", "--http", "127.0.0.1:http"], cwd=workspace,
                         env=env_for(home), capture_output=True, text=True, check=False,
                         timeout=60)
    assert bad.returncode == 1 and "numeric port" in bad.stderr


SUBAGENT_TOOLS = {"spawn_agent", "send_input", "wait", "close_agent", "resume_agent"}
TEAM_TOOLS = {"team_create", "team_delete", "team_list", "send_team_message", "read_inbox",
              "task_create", "task_update", "task_list", "spawn_teammate"}


async def test_subagent_tools_only_with_the_flag_and_no_team_tools(workspace, home, configure):
    """Issue 40: a client gets a deliberate set. Subagents spend the user's model budget, so
    their five tools need --allow-subagents (and then really run, on the configured model);
    a client is in no team, so no team tool is offered either way."""
    import json

    from mcp import Client, StdioServerParameters
    from mcp.shared.exceptions import MCPError

    from nyzhi.testing.fake_llm import PerAgent, open_fake_llm, reply

    script = PerAgent({"SUB": [reply("the sub reports GREEN")]})
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        params = StdioServerParameters(command=sys.executable,
                                       args=["-m", "nyzhi", "mcp", "serve"],
                                       env=_child_env(home), cwd=str(workspace))
        async with Client(params) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"read", "glob", "bash"} <= names
            assert not names & (SUBAGENT_TOOLS | TEAM_TOOLS | {"ask_user"}), names
            # refused as the MCP spec says: a protocol error, not a tool result
            for name, args in (("spawn_agent", {"message": "SUB go"}), ("task_list", {})):
                with pytest.raises(MCPError) as refused:
                    await client.call_tool(name, args)
                assert refused.value.code == -32602 and "Unknown tool" in str(refused.value)

        params.args = [*params.args, "--allow-subagents"]
        async with Client(params) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert SUBAGENT_TOOLS <= names and {"read", "glob"} <= names
            assert not names & (TEAM_TOOLS | {"ask_user"}), names
            started = await client.call_tool("spawn_agent", {"message": "SUB go",
                                                             "agent_type": "worker"})
            assert not started.is_error, started.content[0].text
            agent_id = json.loads(started.content[0].text)["agent_id"]
            assert agent_id == "/agents/main/worker-1"
            waited = await client.call_tool("wait", {"ids": [agent_id], "timeout_ms": 60000})
            assert "the sub reports GREEN" in waited.content[0].text, waited.content[0].text
    assert len(script.seen["SUB"]) == 1
