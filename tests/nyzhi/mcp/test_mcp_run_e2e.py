"""`nyz run` with each real MCP server: the model (the scripted fake LLM) calls a server
tool, nyz runs it through the gates, and the result goes back to the model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import trio
from _mcp_servers import toml_server

from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call

NYZ = [sys.executable, "-m", "nyzhi"]


def env_for(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(HOME=str(home), PYTHONUNBUFFERED="1")
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env.pop(var, None)
    return env


async def nyz(ws: Path, home: Path, *args: str) -> subprocess.CompletedProcess:
    return await trio.run_process(
        [*NYZ, *args], cwd=ws, env=env_for(home), capture_stdout=True, capture_stderr=True,
        check=False,
    )


def offered(request) -> set[str]:
    """Tool names in an OpenAI chat request."""
    return {t["function"]["name"] for t in request.json.get("tools", [])}


def events(out: bytes) -> list[dict]:
    return [json.loads(line) for line in out.decode().splitlines() if line.strip()]


def _server(kind: str, ws: Path, request: pytest.FixtureRequest) -> tuple[str, str, dict, str]:
    """(config, tool, arguments, expected text in the result) for one real server."""
    if kind in ("everything", "filesystem"):
        bins = request.getfixturevalue("npm_servers")
        if kind == "everything":
            return (toml_server("everything", str(bins["everything"]), []),
                    "mcp__everything__echo", {"message": "hi there"}, "Echo: hi there")
        (ws / "notes.txt").write_text("filesystem says hello\n")
        return (toml_server("filesystem", str(bins["filesystem"]), [str(ws)]),
                "mcp__filesystem__read_text_file", {"path": str(ws / "notes.txt")},
                "filesystem says hello")
    if kind == "time":
        cmd = request.getfixturevalue("time_server")
        return (toml_server("time", cmd[0], cmd[1:]), "mcp__time__convert_time",
                {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
                "21:00")
    cmd = request.getfixturevalue("git_server")
    subprocess.run(["git", "-C", str(ws), "checkout", "-q", "-b", "topic-branch"], check=True)
    return (toml_server("git", cmd[0], [*cmd[1:], "--repository", str(ws)]),
            "mcp__git__git_status", {"repo_path": str(ws)}, "topic-branch")


@pytest.mark.parametrize("kind", ["everything", "filesystem", "time", "git"])
async def test_nyz_run_calls_each_real_server(kind, workspace, home, configure, request):
    extra, tool, arguments, expected = _server(kind, workspace, request)
    script = [reply(tool_calls=[tool_call(tool, arguments)]), reply("all done")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"), extra=extra)
        proc = await nyz(workspace, home, "run", "--trust", "full", "--output-format",
                         "stream-json", "use the server")
    assert proc.returncode == 0, proc.stderr.decode()
    assert tool in offered(server.requests[0])  # the server's tools were listed and offered to the model
    done = next(e for e in events(proc.stdout) if e["type"] == "tool_done")
    assert done["name"] == tool and not done["is_error"], done
    assert expected in done["output"]
    assert expected in server.requests[1].tool_results()[0]


async def test_mcp_tools_need_approval_unless_allow_listed(workspace, home, configure,
                                                            helper_server):
    extra = toml_server("helper", helper_server[0], helper_server[1:],
                        'allow_tools = ["mcp__helper__echo"]')
    calls = [tool_call("mcp__helper__wait", {"seconds": 0}), tool_call("mcp__helper__echo",
                                                                         {"text": "listed"})]
    async with open_fake_llm(script=[reply(tool_calls=calls), reply("done")]) as server:
        configure(workspace, server.url_for("openai"), extra=extra)
        proc = await nyz(workspace, home, "run", "--output-format", "stream-json", "go")
    assert proc.returncode == 0, proc.stderr.decode()
    done = {e["name"]: e for e in events(proc.stdout) if e["type"] == "tool_done"}
    wait = done["mcp__helper__wait"]
    assert wait["is_error"] and "needs approval" in wait["output"] and "--trust" in wait["output"]
    echo = done["mcp__helper__echo"]
    assert not echo["is_error"] and echo["output"] == "listed"


async def test_untrusted_mcp_json_server_is_not_started(workspace, home, configure, tmp_path,
                                                        helper_server):
    marker = tmp_path / "started"
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": {
        "command": "sh", "args": ["-c", f"touch {marker}; exec {' '.join(helper_server)}"]}}}))
    call = tool_call("mcp__proj__echo", {"text": "trusted"})
    async with open_fake_llm(script=[reply("no tools"), reply(tool_calls=[call]),
                                     reply("ok")]) as server:
        configure(workspace, server.url_for("openai"))
        untrusted = await nyz(workspace, home, "run", "--output-format", "stream-json", "go")
        assert untrusted.returncode == 0, untrusted.stderr.decode()
        assert not marker.exists()
        assert "mcp__proj__echo" not in offered(server.requests[0])
        # approved by the person running nyz: --trust full alone no longer does (issue 49)
        trusted = await nyz(workspace, home, "run", "--trust", "full",
                            "--approve-project-config", "--output-format", "stream-json", "go")
    assert trusted.returncode == 0, trusted.stderr.decode()
    assert marker.exists()
    done = next(e for e in events(trusted.stdout) if e["type"] == "tool_done")
    assert done["output"] == "trusted" and not done["is_error"]
