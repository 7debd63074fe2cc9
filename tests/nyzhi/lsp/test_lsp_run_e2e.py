"""Language servers through ``nyz run`` as a user runs it: the scripted model edits a file into
a type error (the edit's result carries it), then an explorer subagent asks the same server
for a definition. A wrapper records every server process start: one, shared by both agents.
The server runs in the session's default sandbox (workspace-write, under bwrap)."""

from __future__ import annotations

import json
from pathlib import Path

import trio

from nyzhi.testing.cli import json_lines, run_nyz, settled_running
from nyzhi.testing.fake_llm import PerAgent, open_fake_llm, reply, tool_call


def lsp_config(pidfile: Path, pyright: Path, idle: float = 600.0) -> str:
    script = f"echo $$ >> {pidfile}; exec {pyright} --stdio"
    return (f"[lsp]\ndiagnostics_wait = 30.0\nidle_timeout = {idle}\n"
            f"[lsp.pyright]\ncommand = \"/bin/sh\"\nargs = [\"-c\", {json.dumps(script)}]\n")


async def test_edit_diagnostics_and_a_subagent_share_one_server(
        py_project, home, configure, pyright, tmp_path):
    pidfile = tmp_path / "starts.txt"
    explorer: list[str] = []

    def spawn(_req):
        return reply(tool_calls=[tool_call("spawn_agent", {
            "message": "EXPLORE where is total_area", "agent_type": "explorer"})])

    def wait(req):
        explorer[:] = [json.loads(req.tool_results()[-1])["agent_id"]]
        return reply(tool_calls=[tool_call("wait", {"ids": explorer, "timeout_ms": 120000})])

    agents = PerAgent({
        "MAIN": [
            reply(tool_calls=[tool_call("read", {"file_path": "main.py"})]),
            reply(tool_calls=[tool_call("edit", {"file_path": "main.py",
                                                 "old_string": "Circle(2.0)",
                                                 "new_string": 'Circle("two")'})]),
            spawn, wait, reply("all done"),
        ],
        "EXPLORE": [
            reply(tool_calls=[tool_call("lsp_goto_definition",
                                        {"file": "main.py", "symbol": "total_area"})]),
            reply("it is in shapes.py"),
        ],
    })
    async with open_fake_llm(script=agents) as server:
        configure(py_project, server.url_for("openai"), extra=lsp_config(pidfile, pyright))
        with trio.fail_after(180):
            proc = await run_nyz(py_project, home, "run", "--trust", "full",
                                 "--output-format", "stream-json", "MAIN go")
    assert proc.returncode == 0, proc.stderr.decode()
    events = json_lines(proc.stdout)
    done = {(e["agent"], e["name"]): e for e in events if e["type"] == "tool_done"}
    edit = done[("/agents/main", "edit")]
    assert "[lsp] 1 new error after this change:" in edit["output"]
    assert 'main.py:3:39: error: Argument of type "Literal[\'two\']"' in edit["output"]
    found = done[(explorer[0], "lsp_goto_definition")]
    assert not found["is_error"]
    assert found["output"] == "shapes.py:9:5: def total_area(circles: list[Circle]) -> float:"
    assert len(pidfile.read_text().split()) == 1  # one server process for both agents
    # and it did not outlive the run (its bwrap's command line names the pidfile)
    assert await settled_running(str(pidfile)) == []
