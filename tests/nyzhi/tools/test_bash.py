"""The bash tool on real subprocesses: sandbox, timeout, nodes, errors."""

from pathlib import Path

import pytest

from nyzhi.tools.base import SandboxLevel, ToolContext
from nyzhi.tools.builtin.bash import MAX_TIMEOUT, BashTool, parse_timeout
from nyzhi.tools.builtin.common import ArgError
from nyzhi.tools.executors import LocalExecutor, MonitoredExecutor
from nyzhi.tools.sandbox import SandboxPolicy


def ctx_for(ws: Path, level=SandboxLevel.WORKSPACE_WRITE, **kw) -> ToolContext:
    policy = SandboxPolicy(level, ws, allow_temp=False, **kw)
    return ToolContext(workspace_root=ws, cwd=ws, sandbox=policy)


async def test_runs_in_cwd_with_exit_code_in_metadata(tmp_path: Path):
    sub = tmp_path / "sub"
    sub.mkdir()
    ctx = ctx_for(tmp_path)
    ctx.cwd = sub
    r = await BashTool().run({"command": "pwd; exit 3"}, ctx)
    assert r.is_error and r.metadata["exit_code"] == 3 and r.metadata["sandboxed"]
    assert str(sub) in r.output and "[exit code 3]" in r.output
    ok = await BashTool().run({"command": "true"}, ctx)
    assert not ok.is_error and ok.output == "(no output)"


async def test_streams_through_ctx_output(tmp_path: Path):
    seen = []

    async def sink(text):
        seen.append(text)

    ctx = ctx_for(tmp_path)
    ctx.output = sink
    await BashTool().run({"command": "echo streamed"}, ctx)
    assert "".join(seen) == "streamed\n"


async def test_timeout_argument(tmp_path: Path):
    r = await BashTool().run({"command": "sleep 30", "timeout": 0.2}, ctx_for(tmp_path))
    assert r.is_error and r.metadata["timed_out"] and "timed out" in r.output
    assert parse_timeout({}) == 30 and parse_timeout({"timeout": 10_000}) == MAX_TIMEOUT
    with pytest.raises(ArgError):
        parse_timeout({"timeout": "soon"})
    bad = await BashTool().run({"command": "ls", "timeout": -1}, ctx_for(tmp_path))
    assert bad.is_error and "timeout" in bad.output


async def test_sandbox_applies_to_bash(tmp_path: Path):
    ws = tmp_path / "ws"
    ws.mkdir()
    r = await BashTool().run({"command": f"touch {tmp_path}/evil"}, ctx_for(ws))
    assert r.is_error and not (tmp_path / "evil").exists()


async def test_missing_bwrap_refuses_or_reports(tmp_path: Path):
    refused = await BashTool().run(
        {"command": "echo RAN_IT"}, ctx_for(tmp_path, bwrap_path="/nonexistent/bwrap")
    )
    assert refused.is_error and "bubblewrap" in refused.output and "RAN_IT" not in refused.output
    ctx = ctx_for(tmp_path, bwrap_path="/nonexistent/bwrap", bwrap_fallback="unsandboxed")
    ran = await BashTool().run({"command": "echo hi"}, ctx)
    assert (
        "hi" in ran.output and "WITHOUT" in ran.output and "WITHOUT" in ran.metadata["sandbox_note"]
    )


async def test_node_selection(tmp_path: Path):
    (tmp_path / "f").write_text("data\n")
    ctx = ctx_for(tmp_path)
    none = await BashTool().run({"command": "ls", "node": "box"}, ctx)
    assert none.is_error and "no nodes are configured" in none.output
    ctx.nodes = {"ro": MonitoredExecutor(LocalExecutor())}
    unknown = await BashTool().run({"command": "ls", "node": "box"}, ctx)
    assert unknown.is_error and "configured nodes: ro" in unknown.output
    ok = await BashTool().run({"command": "cat f", "node": "ro"}, ctx)
    assert ok.output == "data\n" and ok.metadata["node"] == "ro"
    refused = await BashTool().run({"command": "rm f", "node": "ro"}, ctx)
    assert refused.is_error and "refused by the monitored executor" in refused.output
    assert (tmp_path / "f").exists()


async def test_ctx_executor_is_used_when_set(tmp_path: Path):
    ctx = ctx_for(tmp_path)
    ctx.executor = MonitoredExecutor(LocalExecutor())
    r = await BashTool().run({"command": "touch x"}, ctx)
    assert r.is_error and not (tmp_path / "x").exists()


async def test_missing_command_is_an_error(tmp_path: Path):
    r = await BashTool().run({}, ctx_for(tmp_path))
    assert r.is_error and "'command' is required" in r.output
