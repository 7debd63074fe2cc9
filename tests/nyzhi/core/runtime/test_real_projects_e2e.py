"""An existing Claude Code project, at the size real ones have, through ``nyz run`` (issue 31).

The workspace is generated (``nyzhi.testing.claude_project``): 110 role files, 160 skills,
40 commands, folded and literal YAML, Claude Code tool lists. The model is the scripted fake
LLM over real HTTP; ``nyz`` is a real subprocess."""

from __future__ import annotations

import json

from nyzhi.core.loop.prompt import chars_to_tokens
from nyzhi.testing.claude_project import write_claude_project, write_settings
from nyzhi.testing.cli import json_lines, run_nyz
from nyzhi.testing.fake_llm import FakeRequest, PerAgent, open_fake_llm, reply, tool_call

FIRST_REQUEST_TOKENS = 12_000  # the budget for system + tools, chars / 4


def request_chars(request: FakeRequest) -> tuple[int, int]:
    """(system characters, tool characters) of an OpenAI-style request as sent: the tools
    measured as name, description and parameters, the way ``session_start`` measures them."""
    tools = request.json.get("tools") or []
    chars = sum(len(json.dumps({"name": t["function"]["name"],
                                "description": t["function"].get("description", ""),
                                "parameters": t["function"].get("parameters", {})},
                               ensure_ascii=False)) for t in tools)
    return len(request.system_text()), chars


def tool_description(request: FakeRequest, name: str) -> str:
    for tool in request.json.get("tools") or []:
        if tool["function"]["name"] == name:
            return tool["function"]["description"]
    raise AssertionError(f"{name} not offered")


def test_the_generated_project_reads_whole(tmp_path, home):
    """Real YAML: folded and literal descriptions read as text, every file a role or skill."""
    from nyzhi.core.runtime.roles import BUILTIN_ROLES, RoleCatalog
    from nyzhi.knowledge.skills import discover_skills

    project = write_claude_project(tmp_path)
    catalog = RoleCatalog.load({}, tmp_path)
    assert not catalog.errors
    files = [r for r in catalog.roles.values() if r.source.endswith(".md")]
    assert len(files) == project.roles >= 100
    assert all(r.description.startswith("Use this agent for ") for r in files)
    assert all(len(r.description) > 300 for r in files)
    styles = {p.read_text().split("description:", 1)[1][:2] for p in
              (tmp_path / ".claude" / "agents").glob("*.md")}
    assert {" >", " |", ' "'} <= styles  # folded, literal and quoted scalars all present
    assert len(catalog.aliases) == project.roles  # every file name differs from its name
    assert set(BUILTIN_ROLES) <= set(catalog.roles)
    notes: list[str] = []
    skills = discover_skills(tmp_path, notes)
    assert len(skills) == project.skills >= 150 and notes == []
    assert all(s.description.startswith("Skill for ") for s in skills)


async def test_first_request_of_a_large_claude_project_stays_within_budget(
        workspace, home, configure):
    project = write_claude_project(workspace)
    async with open_fake_llm(script=[reply("hi")]) as server:
        configure(workspace, server.url_for("openai"))
        proc = await run_nyz(workspace, home, "run", "--output-format", "stream-json", "hi")
    assert proc.returncode == 0, proc.stderr.decode()
    first = server.requests[0]
    system, tools = request_chars(first)
    assert chars_to_tokens(system + tools) <= FIRST_REQUEST_TOKENS, (system, tools)
    # the listings are cut, and say how many were left out and how to see them
    text = first.system_text()
    assert "more skills not listed here: call list_skills" in text
    spawn = tool_description(first, "spawn_agent")
    assert "more roles not listed here: call list_roles" in spawn
    listed_roles = [line for line in spawn.splitlines() if line.startswith("- ")]
    assert 10 < len(listed_roles) < project.roles
    # every skill line is cut to a short description
    index = text.split("# Skills\n", 1)[1].split("\n\n", 1)[0]
    skill_lines = [line for line in index.splitlines() if line.startswith("- ")]
    assert skill_lines and max(len(line) for line in skill_lines) < 200
    start = json_lines(proc.stdout)[0]
    assert start["prompt"]["chars"] == system


async def test_list_tools_show_what_the_listings_left_out(workspace, home, configure):
    write_claude_project(workspace)
    script = [
        reply(tool_calls=[tool_call("tool_search", {"query": "^list_(skills|roles)$",
                                                          "search_type": "regex"})]),
        reply(tool_calls=[tool_call("list_skills", {"query": "checklist"}),
                          tool_call("list_roles", {"query": "development-django"})]),
        reply("done"),
    ]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        proc = await run_nyz(workspace, home, "run", "--trust", "full", "go")
    assert proc.returncode == 0, proc.stderr.decode()
    skills, roles = server.requests[2].tool_results()[-2:]
    assert "skills (load one with load_skill)" in skills and "checklist" in skills
    assert "guide" not in skills.split("\n", 1)[1].split(":")[0]  # filtered by the query
    assert roles.startswith("1 roles"), roles
    assert "- python-development-django-pro (file django-pro.md): Use this agent" in roles


async def test_a_role_spawned_by_name_and_by_file_name_gets_its_prompt(
        workspace, home, configure):
    project = write_claude_project(workspace)

    def spawn(_req):
        return reply(tool_calls=[
            tool_call("spawn_agent", {"message": "BY-NAME go", "agent_type": project.role_name}),
            tool_call("spawn_agent", {"message": "BY-FILE go", "agent_type": project.role_file}),
            tool_call("spawn_agent", {"message": "NOBODY go", "agent_type": "djang-pro"}),
        ])

    def wait(req):
        ids = [json.loads(t)["agent_id"] for t in req.tool_results() if '"agent_id"' in t]
        return reply(tool_calls=[tool_call("wait", {"ids": ids[:1], "timeout_ms": 60000}),
                                 tool_call("wait", {"ids": ids[1:], "timeout_ms": 60000})])

    agents = PerAgent({
        "MAIN": [spawn, wait, reply("all done")],
        "BY-NAME": [reply("named")],
        "BY-FILE": [reply("filed")],
        "NOBODY": [reply("should never run")],
    })
    async with open_fake_llm(script=agents) as server:
        configure(workspace, server.url_for("openai"))
        proc = await run_nyz(workspace, home, "run", "--trust", "full", "MAIN go")
    assert proc.returncode == 0, proc.stderr.decode()
    for who in ("BY-NAME", "BY-FILE"):
        [request] = agents.seen[who]
        assert project.role_marker in request.system_text(), who
        assert "You are python-development-django-pro." in request.system_text()
    assert agents.seen["NOBODY"] == []
    results = agents.seen["MAIN"][1].tool_results()
    spawned = [json.loads(t) for t in results[:2]]
    assert {r["role"] for r in spawned} == {project.role_name}
    refused = results[2]
    assert "no role named 'djang-pro'" in refused and "django-pro" in refused
    assert "not started" in refused


async def test_claude_code_tool_names_give_no_unknown_tool_notice(workspace, home, configure):
    write_claude_project(workspace)
    async with open_fake_llm(script=[reply("one"), reply("two")]) as server:
        configure(workspace, server.url_for("openai"))
        first = await run_nyz(workspace, home, "run", "hi")
        second = await run_nyz(workspace, home, "run", "hi")
    assert first.returncode == 0 and second.returncode == 0, first.stderr.decode()
    err1, err2 = first.stderr.decode(), second.stderr.decode()
    assert "unknown tools" not in err1 + err2
    # Claude Code names nyz has no tool for: said once per file, not on every run
    assert "no nyz equivalent" in err1
    assert "no nyz equivalent" not in err2
    # the role files' fences hold our names: Agent and TaskCreate reach spawn_agent's roles
    offered = server.requests[0].tool_names()
    assert "spawn_agent" in offered


async def test_rules_imports_and_nested_rules_reach_the_prompt(workspace, home, configure):
    write_claude_project(workspace)
    (workspace / "CLAUDE.md").write_text("ROOT-RULE\nSee @docs/style.md and `@not/an/import`.\n")
    (workspace / "docs").mkdir()
    (workspace / "docs" / "style.md").write_text("STYLE-RULE, more in @deeper.md\n")
    (workspace / "docs" / "deeper.md").write_text("DEEPER-RULE\n")
    (workspace / "CLAUDE.local.md").write_text("LOCAL-RULE\n@missing.md\n")
    sub = workspace / "services" / "api"
    sub.mkdir(parents=True)
    (workspace / "services" / "AGENTS.md").write_text("SERVICES-RULE\n")
    (sub / "CLAUDE.md").write_text("API-RULE\n")
    (home / ".claude").mkdir()
    (home / ".claude" / "CLAUDE.md").write_text("USER-CLAUDE-RULE\n")
    (home / ".codex").mkdir()
    (home / ".codex" / "AGENTS.md").write_text("USER-CODEX-RULE\n")
    steps = [reply(tool_calls=[tool_call("read", {"file_path": "CLAUDE.md"})]), reply("ok")]
    async with open_fake_llm(script=steps) as server:
        configure(workspace, server.url_for("openai"))
        proc = await run_nyz(sub, home, "run", "--trust", "full", "hi")
    assert proc.returncode == 0, proc.stderr.decode()
    system = server.requests[0].system_text()
    order = ["USER-CLAUDE-RULE", "USER-CODEX-RULE", "ROOT-RULE", "STYLE-RULE", "DEEPER-RULE",
             "LOCAL-RULE", "SERVICES-RULE", "API-RULE"]
    where = [system.find(marker) for marker in order]
    assert -1 not in where and where == sorted(where), dict(zip(order, where, strict=True))
    assert "missing.md not imported" in proc.stderr.decode()
    # read once at session start: the second step's prefix is the first's
    assert server.requests[1].system_text() == system


async def test_a_permissions_deny_rule_refuses_a_bash_command_headless(
        workspace, home, configure):
    write_settings(workspace, {"deny": ["Bash(touch:*)", "Read(./.env)"],
                               "allow": ["Bash(npm run test:*)"]})
    (workspace / ".env").write_text("TOKEN=do-not-read\n")
    script = [
        reply(tool_calls=[tool_call("bash", {"command": "touch made-by-bash.txt"}),
                          tool_call("read", {"file_path": ".env"}),
                          tool_call("bash", {"command": "echo still-allowed"})]),
        reply("done"),
    ]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        proc = await run_nyz(workspace, home, "run", "--trust", "full", "go")
    assert proc.returncode == 0, proc.stderr.decode()
    touched, env_read, echoed = server.requests[1].tool_results()
    assert "Permission denied (deny rules)" in touched
    assert ".claude/settings.json permissions.deny Bash(touch:*)" in touched
    assert not (workspace / "made-by-bash.txt").exists()
    assert "Permission denied (deny rules)" in env_read and "do-not-read" not in env_read
    assert "permissions.deny Read(./.env)" in env_read
    assert "still-allowed" in echoed
    # the allow rule with a command is not something our gates express: said, with the file
    err = proc.stderr.decode()
    assert "settings.json: Claude Code permission rules nyz cannot express" in err
    assert "allow: Bash(npm run test:*)" in err


async def test_an_unapproved_claude_allow_rule_approves_nothing(workspace, home, configure):
    """``permissions.allow`` approves tools without asking, so a cloned repo (or the sandboxed
    agent) could plant it: like ``[agent.trust] auto_approve``, it counts only as the user
    last approved it (``nyz config trust``). Vectors: settings.json and settings.local.json,
    a bare tool name and an MCP-style name; the control approves and the call then runs."""
    script = [reply(tool_calls=[tool_call("bash", {"command": "touch planted-ran.txt"})]),
              reply("done")] * 3
    async with open_fake_llm(script=script) as server:
        # the provider in the user's own config: the project's gated parts wait for approval
        configure(workspace, server.url_for("openai"), approve=False)
        for name in ("settings.json", "settings.local.json"):
            settings = workspace / ".claude" / name
            settings.parent.mkdir(exist_ok=True)
            settings.write_text(json.dumps({"permissions": {"allow": ["Bash", "mcp__x"]}}))
            proc = await run_nyz(workspace, home, "run", "go")  # headless, trust off
            assert proc.returncode == 0, proc.stderr.decode()
            assert not (workspace / "planted-ran.txt").exists(), name
            assert "permissions.allow" in proc.stderr.decode()  # the notice says what was held
            settings.unlink()
        settings = workspace / ".claude" / "settings.json"
        settings.write_text(json.dumps({"permissions": {"allow": ["Bash"]}}))
        approved = await run_nyz(workspace, home, "config", "trust", "--yes")
        assert approved.returncode == 0, approved.stderr.decode()
        proc = await run_nyz(workspace, home, "run", "go")
    assert proc.returncode == 0, proc.stderr.decode()
    assert (workspace / "planted-ran.txt").exists()  # approved: the allow rule applies
