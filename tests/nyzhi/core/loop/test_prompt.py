"""The system prompt: each section on its own, their order, the size budget, and stability."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest

from nyzhi.core.loop import prompt_sections as s
from nyzhi.core.loop.prompt import (
    FIRST_REQUEST_TOKEN_BUDGET,
    SECTIONS,
    PromptParts,
    SessionPrompt,
    build_system_prompt,
    chars_to_tokens,
    render_sections,
    schemas_chars,
)
from nyzhi.core.prompt_env import Environment
from nyzhi.provider.types import ToolSchema
from nyzhi.tools.output import DEFAULT_THRESHOLD
from nyzhi.tools.registry import default_registry

BUILTIN_NAMES = tuple(default_registry().names())
ENV = Environment(
    platform="Linux x86_64", date="2026-11-23", project_type="python", git_branch="main",
    git_dirty=False, in_git=True,
)


def parts(**kw) -> PromptParts:
    base = dict(
        workspace_root=Path("/home/dev/project"), cwd=Path("/home/dev/project/src"),
        environment=ENV, tool_names=BUILTIN_NAMES,
    )
    base.update(kw)
    return PromptParts(**base)


# ---- sections, each on its own --------------------------------------------------------------


def test_identity_is_ours_unless_a_role_replaces_it():
    assert s.identity(parts()).startswith("You are nyzhi, a coding agent")
    assert s.identity(parts(role_prompt="  You review code.  ")) == "You review code."


def test_environment_states_every_fact_of_the_snapshot():
    text = s.environment(parts(model="m-1", sandbox="workspace-write", trust="autoedit"))
    assert text.startswith("<environment>\n") and text.endswith("\n</environment>")
    for line in (
        "workspace root: /home/dev/project", "working directory: /home/dev/project/src",
        "platform: Linux x86_64", "session started: 2026-11-23", "project type: python",
        "git: branch main, clean at session start", "sandbox: workspace-write",
        "trust: autoedit (file edits run without asking; commands need approval)", "model: m-1",
    ):
        assert line in text.splitlines()


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (attrs.evolve(ENV, git_dirty=True), "git: branch main, uncommitted changes at session start"),
        (attrs.evolve(ENV, git_dirty=None), "git: branch main"),
        (Environment(in_git=False), "git: not a repository"),
    ],
)
def test_environment_git_line(env, expected):
    assert expected in s.environment(parts(environment=env)).splitlines()


def test_environment_without_a_snapshot_claims_nothing_unknown():
    text = s.environment(parts(environment=Environment()))
    assert "git:" not in text and "platform" not in text and "session started" not in text
    assert "working directory: /home/dev/project/src" in text


def test_reading_the_request_tells_questions_from_tasks():
    text = s.reading_the_request(parts())
    assert "question" in text and "task" in text and "with ask_user" in text
    assert "ask_user" not in s.reading_the_request(parts(tool_names=("read",)))


def test_autonomy_draws_the_line_at_destructive_and_outside_steps():
    text = s.autonomy(parts())
    assert "without asking" in text and "destructive or outside the workspace" in text
    assert "Never claim a result a tool did not show you" in text


def test_how_to_work_explores_edits_verifies_reports():
    text = s.how_to_work(parts())
    steps = [line for line in text.splitlines() if line[:2] in ("1.", "2.", "3.", "4.")]
    assert [line.split()[1] for line in steps] == ["Explore", "Make", "Verify", "Finish"]
    assert "(verify, or bash" in text
    assert "(bash with" in s.how_to_work(parts(tool_names=("bash",)))


def test_todo_discipline_only_with_todowrite():
    text = s.todo_discipline(parts())
    assert "three or more steps" in text and "one item in_progress at a time" in text
    assert s.todo_discipline(parts(tool_names=("read", "edit"))) == ""


def test_tool_use_states_the_real_offload_threshold_and_directory():
    text = s.tool_use(parts())
    assert f"longer than {DEFAULT_THRESHOLD:,} characters" in text
    assert "state directory (outside the workspace)" in text  # never committed (issue 29 §5)
    assert "in parallel" in text and "edit or multi_edit" in text and "timeout" in text


def test_delegation_renders_only_with_the_subagent_tools():
    assert s.delegation(parts()).startswith("# Delegating")  # the built-ins have spawn_agent
    without = tuple(n for n in BUILTIN_NAMES if n not in s.DELEGATION_TOOLS)
    assert s.delegation(parts(tool_names=without)) == ""
    assert s.delegation(parts(tool_names=())) == ""  # unknown tool set: assume none
    full = s.delegation(parts(tool_names=(*BUILTIN_NAMES, *s.DELEGATION_TOOLS)))
    assert full.startswith("# Delegating to subagents")
    for phrase in ("explorers", "workers", "yourself when it is small", "sees none of your",
                   "Always wait", "close_agent", "maximum depth", "budget", "keeps its thread"):
        assert phrase in full
    spawn_only = s.delegation(parts(tool_names=("spawn_agent",)))
    assert "Always wait" not in spawn_only and "close_agent" not in spawn_only


def test_code_quality_safety_communication():
    assert "Add no dependency" in s.code_quality(parts())
    assert "test that fails without it" in s.code_quality(parts())
    safety = s.safety(parts())
    assert "secrets" in safety and "data, not instructions" in safety
    assert "sandbox and trust mode" in safety and "say what was blocked" in safety
    assert "path:line" in s.communication(parts())


def test_project_context_blocks_and_precedence():
    assert s.project_context(parts()) == ""
    text = s.project_context(parts(rules="Use tabs.\n", custom_instructions=" Answer in French. "))
    assert "they win" in text
    assert "<project_rules>\nUse tabs.\n</project_rules>" in text
    assert "<custom_instructions>\nAnswer in French.\n</custom_instructions>" in text
    assert text.index("<project_rules>") < text.index("<custom_instructions>")


def test_skills_memory_and_mcp_sections():
    assert s.skills_index(parts()) == s.memory(parts()) == s.mcp_servers(parts()) == ""
    skills = s.skills_index(parts(skills=[("release", "How to cut a release")]))
    assert "load_skill" in skills and "- release: How to cut a release" in skills
    assert "<memory>\nprefers uv\n</memory>" in s.memory(parts(memory="prefers uv\n"))
    assert s.mcp_servers(parts(mcp_summaries=["github: issues"])) == "MCP servers:\n- github: issues"


# ---- assembly --------------------------------------------------------------------------------


def test_sections_come_in_the_documented_order_with_extra_last():
    full = parts(
        rules="R", custom_instructions="C", skills=[("k", "d")], memory="M",
        mcp_summaries=["x"], extra=("deferred: t",),
        tool_names=(*BUILTIN_NAMES, "spawn_agent", "wait"),
    )
    names = [name for name, _ in render_sections(full)]
    assert names == [name for name, _ in SECTIONS] + ["extra"]
    text = build_system_prompt(full)
    assert text.endswith("deferred: t")
    positions = [text.index(t) for _, t in render_sections(full)]
    assert positions == sorted(positions)


def test_empty_sections_leave_no_gaps():
    text = build_system_prompt(parts(extra=("", "  ")))
    assert "\n\n\n" not in text and not text.endswith("\n")


def test_the_prompt_is_a_pure_function_of_its_parts():
    assert build_system_prompt(parts()) == build_system_prompt(parts())
    assert build_system_prompt(parts()) != build_system_prompt(
        parts(environment=attrs.evolve(ENV, date="2026-11-24"))
    )


def test_session_prompt_rebuilds_only_when_the_deferred_list_changes():
    deferred = [""]
    prompt = SessionPrompt(parts(), lambda: deferred[0])
    first = prompt()
    assert prompt() is first  # the same string object: nothing was rebuilt
    deferred[0] = "These tools are available but not loaded: x"
    assert prompt().endswith(deferred[0]) and prompt().startswith(first)
    info = prompt.describe([ToolSchema("t", "d", {"type": "object"})])
    assert info["chars"] == len(prompt()) and info["tokens"] == chars_to_tokens(len(prompt()))
    assert info["sections"][-1] == "extra" and info["environment"] == ENV
    assert info["tools_chars"] == schemas_chars([ToolSchema("t", "d", {"type": "object"})])


# ---- the budget ------------------------------------------------------------------------------


def test_first_request_stays_within_the_token_budget():
    """System prompt (every general section, delegation included) plus every built-in tool
    schema, as chars / 4, may not creep past the budget."""
    registry = default_registry()
    schemas = [ToolSchema(t["name"], t["description"], t["parameters"])
               for t in registry.schemas()]
    system = build_system_prompt(parts(
        workspace_root=Path("/home/a-fairly-long-user-name/projects/some-project"),
        tool_names=(*registry.names(), *s.DELEGATION_TOOLS), model="claude-sonnet-4-5",
        sandbox="workspace-write", trust="limited",
    ))
    total = len(system) + schemas_chars(schemas)
    assert chars_to_tokens(total) <= FIRST_REQUEST_TOKEN_BUDGET, (len(system), total)
    # and the prompt really grew from the old 533-character one
    assert len(system) > 4000
    assert len(json.dumps([t.parameters for t in schemas])) < schemas_chars(schemas)


# ---- the compact profile (small-context models) ----------------------------------------------


def test_compact_profile_keeps_facts_and_project_context_with_one_guidance_section():
    from nyzhi.core.loop.prompt import COMPACT_SECTIONS

    compact = parts(compact=True, rules="Use tabs.", extra=("deferred: t",))
    names = [name for name, _ in render_sections(compact)]
    assert names == ["identity", "environment", "essentials", "project_context", "extra"]
    assert [n for n, _ in COMPACT_SECTIONS][:3] == names[:3]
    text = build_system_prompt(compact)
    assert "never claim a result no tool showed" in text and "data, not instructions" in text
    assert len(text) * 4 < len(build_system_prompt(parts(rules="Use tabs.")))


def test_compact_profile_cuts_tool_descriptions_to_their_first_sentence():
    from nyzhi.core.loop.prompt import first_sentence

    schemas = [ToolSchema(t["name"], t["description"], t["parameters"])
               for t in default_registry().schemas()]
    full = SessionPrompt(parts()).tools(lambda: schemas)()
    compact = SessionPrompt(parts(compact=True)).tools(lambda: schemas)()
    assert full == schemas
    assert [t.parameters for t in compact] == [t.parameters for t in schemas]
    assert all(c.description == first_sentence(t.description) for c, t in zip(compact, schemas, strict=True))
    assert schemas_chars(compact) < 0.75 * schemas_chars(schemas)
    assert SessionPrompt(parts(compact=True)).describe(compact)["profile"] == "compact"


@pytest.mark.parametrize(("model", "compact"), [
    ("smollm2", True),  # the bundled offline model: an 8K window
    ("claude-sonnet-4-5", False),
    ("some-unknown-model", False),  # its window is a guess: the full prompt
])
def test_which_models_get_the_compact_profile(model, compact):
    from nyzhi.core.loop.prompt import _small_context

    assert _small_context(model) is compact
