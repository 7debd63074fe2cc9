"""A language server is a program nyz runs as the user, so what a project says about one counts
only once approved, and the server runs inside the session's sandbox like a ``bash`` command
(a server may run the project's code: build scripts, a virtualenv's interpreter)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio

import actors
from nyzhi.config.project_trust import gated_parts
from nyzhi.config.schema import LspConfig, LspServerConfig
from nyzhi.core.runtime.lsp import LspPool
from nyzhi.testing.cli import run_nyz
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call
from nyzhi.tools.base import SandboxLevel
from nyzhi.tools.sandbox import SandboxPolicy


def planted(marker: Path, name: str = "pyright", extra: str = "") -> str:
    """A project config whose language server would leave ``marker`` when it starts."""
    script = f"touch {marker}; exec sleep 30"
    return (f"[lsp.{name}]\ncommand = \"/bin/sh\"\nargs = [\"-c\", {json.dumps(script)}]\n"
            f"{extra}")


async def run_edit(ws: Path, home: Path, configure, extra: str, approve: bool, *args: str):
    calls = [reply(tool_calls=[tool_call("lsp_diagnostics", {"file": "main.py"})]),
             reply(tool_calls=[tool_call("read", {"file_path": "main.py"})]),
             reply(tool_calls=[tool_call("edit", {"file_path": "main.py", "old_string": "1",
                                                  "new_string": "2"})]),
             reply("done")]
    async with open_fake_llm(script=calls) as server:
        configure(ws, server.url_for("openai"), extra=extra, approve=approve)
        with trio.fail_after(120):
            return await run_nyz(ws, home, "run", *args, "go")


@pytest.mark.parametrize("extra", [
    "",  # a default's command replaced
    'languages = ["python"]\n',  # and the languages said again
], ids=["default-replaced", "languages"])
async def test_an_unapproved_project_server_never_starts(
        workspace, home, configure, tmp_path, extra):
    (workspace / "main.py").write_text("x = 1\n")
    marker = tmp_path / "started"
    # no sandbox in the way: only the approval stands between the project and the command
    proc = await run_edit(workspace, home, configure, planted(marker, extra=extra), False,
                          "--trust", "autoedit", "--sandbox", "full-access")
    assert proc.returncode == 0, proc.stderr.decode()
    assert (workspace / "main.py").read_text() == "x = 2\n"  # the edit itself happened
    assert not marker.exists()


async def test_an_unapproved_new_server_name_never_starts(workspace, home, configure, tmp_path):
    (workspace / "main.py").write_text("x = 1\n")
    marker = tmp_path / "started"
    proc = await run_edit(workspace, home, configure,
                          planted(marker, "evil", 'languages = ["python"]\n'), False,
                          "--trust", "autoedit", "--sandbox", "full-access")
    assert proc.returncode == 0, proc.stderr.decode()
    assert not marker.exists()


async def test_an_approved_project_server_does_start(workspace, home, configure, tmp_path):
    """The control: the same config, approved, runs (so the tests above test the gate)."""
    (workspace / "main.py").write_text("x = 1\n")
    marker = tmp_path / "started"
    proc = await run_edit(workspace, home, configure, planted(marker), True,
                          "--trust", "autoedit", "--sandbox", "full-access")
    assert proc.returncode == 0, proc.stderr.decode()
    assert marker.exists()


def test_server_tables_are_gated_settings_are_not(tmp_path):
    from nyzhi.config.loader import load_config

    ws = tmp_path / "ws"
    (ws / ".nyzhi").mkdir(parents=True)
    (ws / ".nyzhi" / "config.toml").write_text(
        "[lsp]\ndiagnostics_wait = 2.0\n[lsp.pyright]\n"
        'settings = { python = { pythonPath = "./evil/bin/python" } }\n')
    parts = gated_parts(load_config(ws, env={"HOME": str(tmp_path / "home")}))
    # one unit per server table (issue 49's key table: lsp.NAME runs a program); [lsp]'s own
    # diagnostics_wait is SAFE, so it is not among the gated keys
    [(_file, gated)] = [(k, v) for k, v in parts.items() if "lsp.pyright" in v]
    assert gated == {"lsp.pyright": {"settings": {"python": {
        "pythonPath": "./evil/bin/python"}}}}


def program_of(pid: int) -> bytes:
    return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]


@pytest.fixture
def sandbox(workspace) -> SandboxPolicy:
    policy = SandboxPolicy(SandboxLevel.WORKSPACE_WRITE, workspace, allow_temp=False)
    if policy.find_bwrap() is None:
        pytest.skip("bubblewrap (bwrap) is not installed (scripts/system-deps.sh)")
    return policy


async def test_a_server_runs_inside_the_session_sandbox(
        py_project, pyright, lsp_env, sandbox, tmp_path):
    outside, inside = tmp_path / "escaped", py_project / "inside"
    script = f"touch {outside}; touch {inside}; exec {pyright} --stdio"
    config = LspConfig(diagnostics_wait=30.0, servers={"pyright": LspServerConfig(
        command="/bin/sh", args=("-c", script))})
    async with actors.open_system(name="lsp-sandbox") as system:
        pool = await LspPool.open(system, config, workspace=py_project, env=lsp_env,
                                  sandbox=sandbox)
        text, failed = await pool.ask("definition", path=py_project / "main.py",
                                      symbol="total_area")
        assert not failed and text.startswith("shapes.py:9:5"), text
        [link] = pool.links.values()
        assert program_of(link.pid).endswith(b"bwrap")
    assert inside.exists()  # the workspace is writable from the server
    assert not outside.exists()  # the rest is not


async def test_a_sandbox_that_cannot_run_says_so(py_project, pyright, lsp_env):
    policy = SandboxPolicy(SandboxLevel.WORKSPACE_WRITE, py_project, allow_temp=False,
                           bwrap_fallback="refuse", bwrap_path="/nonexistent/bwrap")
    async with actors.open_system(name="lsp-sandbox") as system:
        pool = await LspPool.open(system, LspConfig(), workspace=py_project, env=lsp_env,
                                  sandbox=policy)
        text, failed = await pool.ask("hover", path=py_project / "main.py", symbol="Circle")
    assert failed and "needs bubblewrap" in text, text



async def test_a_location_in_a_credential_file_shows_none_of_it(
        py_project, pyright, lsp_env, home):
    """Even where the server could read it (full-access: no masks), nyz does not read a
    credential file for an answer's context line, as read refuses it."""
    keys = home / ".ssh"
    keys.mkdir()
    (keys / "stolen.py").write_text('SECRET = "hunter2-private-key"\n')
    (py_project / "main.py").write_text("from stolen import SECRET\n\nprint(SECRET)\n")
    policy = SandboxPolicy(SandboxLevel.FULL_ACCESS, py_project)
    config = LspConfig(servers={"pyright": LspServerConfig(settings={
        "basedpyright": {"analysis": {"extraPaths": [str(keys)]}}})})
    async with actors.open_system(name="lsp-sandbox") as system:
        pool = await LspPool.open(system, config, workspace=py_project, env=lsp_env,
                                  sandbox=policy)
        found, failed = await pool.ask("definition", path=py_project / "main.py", line=3,
                                       column=7)
        refs, _ = await pool.ask("references", path=py_project / "main.py", symbol="SECRET",
                                 line=3)
    stolen = str(keys / "stolen.py")
    assert not failed and found.startswith(f"{stolen}:1:1:"), found
    assert f"{stolen}:1:1: " in refs  # the location is named ...
    for text in (found, refs):
        assert "hunter2" not in text  # ... but none of its text is shown
