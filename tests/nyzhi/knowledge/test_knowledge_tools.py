"""The knowledge tools on a real workspace, and the skill/command/plan file formats."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from nyzhi.config.schema_agent import CommandConfig
from nyzhi.knowledge import plans
from nyzhi.knowledge.commands import expand, load_commands, split_invocation
from nyzhi.knowledge.skills import discover_skills, skills_index
from nyzhi.tools.builtin import knowledge as kt

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from _toolctx import make_ctx  # noqa: E402


@pytest.fixture
def ctx(workspace, home):
    return make_ctx(workspace, session_id="s-1")


async def test_memory_tools_round_trip(ctx):
    out = await kt.MemoryReadTool().run({}, ctx)
    assert "(no user memory)" in out.output and "(no project memory)" in out.output
    wrote = await kt.MemoryWriteTool().run({"topic": "db", "content": "Postgres 16"}, ctx)
    assert not wrote.is_error and "topic 'db'" in wrote.output
    await kt.MemoryWriteTool().run(
        {"topic": "prefs", "content": "Likes tabs", "scope": "user"}, ctx)
    listing = (await kt.MemoryReadTool().run({}, ctx)).output
    assert "- db: Postgres 16" in listing and "Likes tabs" in listing
    assert "Postgres 16" in (await kt.MemoryReadTool().run({"topic": "db"}, ctx)).output
    missing = await kt.MemoryReadTool().run({"topic": "nope"}, ctx)
    assert missing.is_error and "project topics: db" in missing.output
    bad = await kt.MemoryWriteTool().run({"topic": "db", "content": "x", "mode": "prepend"}, ctx)
    assert bad.is_error and "append, replace" in bad.output


async def test_create_plan_merges_todos_and_replaces_the_body(ctx, workspace):
    first = {"name": "Migrate", "overview": 'Move to "v2"', "plan": "old body",
             "todos": [{"id": "1", "content": "a"}, {"id": "2", "content": "b"}]}
    result = await kt.CreatePlanTool().run(first, ctx)
    assert not result.is_error, result.output
    path = workspace / ".nyzhi/plans/s-1.plan.md"
    second = {"name": "Migrate", "plan": "new body",
              "todos": [{"id": "2", "content": "b", "status": "completed"},
                        {"id": "3", "content": "c"}]}
    await kt.CreatePlanTool().run(second, ctx)
    meta, body = plans.read_plan(path)
    assert body == "new body"
    assert [(t["id"], t["status"]) for t in meta["todos"]] == [
        ("1", "pending"), ("2", "completed"), ("3", "pending")]
    bad = await kt.CreatePlanTool().run({**second, "todos": [{"id": "4", "status": "done"}]}, ctx)
    assert bad.is_error and "status must be one of" in bad.output


async def test_create_plan_refuses_a_symlinked_plans_dir(ctx, workspace, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / ".nyzhi/plans").symlink_to(outside)
    result = await kt.CreatePlanTool().run({"name": "x", "plan": "y"}, ctx)
    assert result.is_error and list(outside.iterdir()) == []


async def test_notepads(ctx, workspace):
    assert (await kt.NotepadReadTool().run({}, ctx)).output == "notepads: none yet"
    await kt.NotepadWriteTool().run(
        {"plan": "migrate", "category": "learnings", "content": "CI caches pip."}, ctx)
    await kt.NotepadWriteTool().run(
        {"plan": "migrate", "category": "issues", "content": "Flaky test_x."}, ctx)
    text = (await kt.NotepadReadTool().run({"plan": "migrate"}, ctx)).output
    assert text.index("CI caches pip.") < text.index("Flaky test_x.") and "## [" in text
    bad = await kt.NotepadWriteTool().run(
        {"plan": "migrate", "category": "ideas", "content": "x"}, ctx)
    assert bad.is_error and "learnings, decisions, issues" in bad.output
    assert (await kt.NotepadReadTool().run({}, ctx)).output == "notepads: migrate"


async def test_load_skill_unknown_lists_the_known(ctx, workspace):
    (workspace / ".nyzhi/skills/deploy").mkdir(parents=True)
    (workspace / ".nyzhi/skills/deploy/SKILL.md").write_text("Deploy with fly.\n")
    result = await kt.LoadSkillTool().run({"name": "nope"}, ctx)
    assert result.is_error and "skills: deploy" in result.output
    assert "Deploy with fly." in (await kt.LoadSkillTool().run({"name": "DEPLOY"}, ctx)).output


def test_skill_discovery_front_matter_fallbacks_and_precedence(tmp_path):
    root = tmp_path
    (root / ".nyzhi/skills/a").mkdir(parents=True)
    (root / ".nyzhi/skills/a/SKILL.md").write_text(
        '---\nname: alpha\ndescription: "Does alpha"\n---\nbody\n')
    (root / ".nyzhi/skills/legacy.md").write_text("# Legacy\nOld style skill.\n")
    (root / ".claude/skills/alpha").mkdir(parents=True)
    (root / ".claude/skills/alpha/SKILL.md").write_text("---\nname: alpha\n---\nother\n")
    (root / ".claude/skills/no-skill-file").mkdir()
    assert skills_index(root) == (("alpha", "Does alpha"), ("legacy", "Old style skill."))
    assert discover_skills(root)[0].path == root / ".nyzhi/skills/a/SKILL.md"


def test_commands_precedence_and_rendering(tmp_path):
    root = tmp_path
    (root / ".claude/commands").mkdir(parents=True)
    (root / ".nyzhi/commands").mkdir(parents=True)
    (root / ".claude/commands/fix.md").write_text("claude fix $ARGUMENTS")
    (root / ".claude/commands/both.md").write_text("from claude")
    (root / ".nyzhi/commands/both.md").write_text("# Both\nfrom nyzhi $ARGUMENTS")
    configured = [CommandConfig("fix", "config fix $ARGUMENTS", "Fix")]
    commands = load_commands(root, configured)
    assert commands["fix"].template == "config fix $ARGUMENTS" and commands["fix"].source == "config"
    assert commands["both"].description == "Both" and commands["both"].template == "from nyzhi $ARGUMENTS"
    assert expand("/both  a b ", commands) == "from nyzhi a b"
    assert expand("/fix", commands) == "config fix"
    assert expand("please /fix", commands) == "please /fix"
    assert expand("/missing x", commands) == "/missing x"
    assert split_invocation("/a-b.c:d args\nmore") == ("a-b.c:d", "args\nmore")
    assert split_invocation("/ nothing") is None

