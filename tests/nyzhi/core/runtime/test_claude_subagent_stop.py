"""Claude Code's ``SubagentStop`` hooks can block a subagent's stop and make it go on, as
Claude Code documents (issue 52), bounded by the subagent's steps. A project's
``.claude/settings.json`` hook script, the real runtime, a real subagent, the fake LLM."""

from __future__ import annotations

import json
import sys
import textwrap

import trio

from nyzhi.core import events as ev
from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime
from nyzhi.testing.fake_llm import open_fake_llm, reply

SUBAGENT_STOP_ONCE = """
    import json, os, sys
    data = json.load(sys.stdin)
    with open(os.environ["HOOK_LOG"], "a") as fh:
        fh.write(json.dumps(data) + "\\n")
    if data.get("stop_hook_active") or data.get("hook_event_name") != "SubagentStop":
        sys.exit(0)
    print(json.dumps({"decision": "block", "reason": "Check your findings once more."}))
"""

ALWAYS = """
    import json
    print(json.dumps({"decision": "block", "reason": "again"}))
"""


def settings(ws, body: str) -> None:
    (ws / ".claude" / "hooks").mkdir(parents=True, exist_ok=True)
    (ws / ".claude" / "hooks" / "sub.py").write_text(textwrap.dedent(body))
    command = f'{sys.executable} "$CLAUDE_PROJECT_DIR/.claude/hooks/sub.py"'
    (ws / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"SubagentStop": [
        {"hooks": [{"type": "command", "command": command, "timeout": 20}]}]}}))


async def run_subagent(rt) -> dict:
    ident = (await rt.agents.spawn(ev.MAIN_AGENT, "SUB task"))["agent_id"]
    with trio.fail_after(120):
        while True:
            got = await rt.agents.wait([ident], 60_000)
            if not got["timed_out"]:
                return rt.agents.records[ident]


async def test_subagent_stop_blocks_once_and_the_subagent_goes_on(workspace, configure,
                                                                  monkeypatch, tmp_path):
    log = tmp_path / "hook.jsonl"
    monkeypatch.setenv("HOOK_LOG", str(log))
    settings(workspace, SUBAGENT_STOP_ONCE)
    script = [reply("found it, I think"), reply("checked: found it")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full",
                                               ephemeral=True)) as rt:
            rec = await run_subagent(rt)
    assert rec.status == "completed" and rec.final == "checked: found it"
    assert len(server.requests) == 2
    assert server.requests[1].last_user_text() == "Check your findings once more."
    payloads = [json.loads(line) for line in log.read_text().splitlines()]
    # once per stop, inside the subagent's turn; not again when its work ends
    assert [p["stop_hook_active"] for p in payloads] == [False, True]
    assert {p["hook_event_name"] for p in payloads} == {"SubagentStop"}
    assert payloads[0]["agent_id"] == rec.path


async def test_a_subagent_stop_loop_is_bounded_by_its_steps(workspace, configure):
    settings(workspace, ALWAYS)
    async with open_fake_llm(script=[reply(f"a{i}") for i in range(6)]) as server:
        configure(workspace, server.url_for("openai"),
                  extra="[agent.agents.roles.default]\nmax_steps = 3\n")
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full",
                                               ephemeral=True)) as rt:
            rec = await run_subagent(rt)
    assert len(server.requests) == 3  # blocked every time, stopped by max_steps
    assert rec.status == "errored" and "max_steps" in rec.reason
