"""Subagent roles: the built-ins, role files (ours and Claude Code's), config overrides,
resolution order, the spawn_agent listing, model choice, and the fence the gates enforce."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from nyzhi.config import load_config
from nyzhi.config.modes import SandboxLevel, TrustMode
from nyzhi.config.schema_agent import RoleConfig
from nyzhi.core.runtime import roles as r
from nyzhi.knowledge.frontmatter import FrontMatterError, split_front_matter
from nyzhi.tools.base import Permission, ToolContext
from nyzhi.tools.execution import ToolCallRequest, execute_calls
from nyzhi.tools.gates import ROLE_FENCE, Gates, TrustPolicy
from nyzhi.tools.registry import default_registry
from nyzhi.tools.sandbox import SandboxPolicy

BUILTIN_NAMES = [
    "default", "explorer", "worker", "reviewer", "planner", "architect", "debugger",
    "security-reviewer", "quality-reviewer", "test-engineer", "build-fixer", "deep-executor",
    "document-specialist", "code-simplifier",
]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def ctx_for(ws: Path, level=SandboxLevel.WORKSPACE_WRITE) -> ToolContext:
    return ToolContext(
        workspace_root=ws, cwd=ws, sandbox=SandboxPolicy(level, ws, allow_temp=False),
        agent_path="/agents/main/explorer-1",
    )


# ---- built-ins ------------------------------------------------------------------------------


def test_the_fourteen_builtin_roles_with_their_own_prompts_and_limits():
    assert list(r.BUILTIN_ROLES) == BUILTIN_NAMES
    prompts = [role.system_prompt for role in r.BUILTIN_ROLES.values()]
    assert len(set(prompts)) == 14 and all(len(p) > 100 for p in prompts)
    steps = {name: role.max_steps for name, role in r.BUILTIN_ROLES.items()}
    assert steps["explorer"] == 30 and steps["debugger"] == 60 and steps["deep-executor"] == 80
    assert steps["default"] == steps["worker"] == 50
    read_only = {n for n, role in r.BUILTIN_ROLES.items() if role.read_only}
    assert read_only == {"explorer", "reviewer", "planner", "architect", "security-reviewer",
                         "quality-reviewer"}
    assert r.BUILTIN_ROLES["worker"].allowed_tools is None  # all tools


def test_builtin_fences_name_real_tools_and_read_only_roles_get_no_writer():
    registry = default_registry()
    known = set(registry.names())
    for role in r.BUILTIN_ROLES.values():
        assert role.unknown_tools(known) == [], role.name
        if role.read_only:
            for name in role.allowed_tools or known:
                tool = registry.get(name)
                assert tool.permission is Permission.READ_ONLY or tool.runs_sandboxed, name
                assert not tool.writes_files
    assert "bash" in r.BUILTIN_ROLES["reviewer"].allowed_tools
    assert "bash" not in r.BUILTIN_ROLES["explorer"].allowed_tools
    assert {"todowrite", "todoread"} <= set(r.BUILTIN_ROLES["planner"].allowed_tools)


# ---- role files -----------------------------------------------------------------------------


CLAUDE_REVIEWER = """---
name: api-reviewer
description: "Reviews the HTTP API layer.\\nUse it after API changes."
tools: Read, Grep, Glob, LS, MultiEdit
model: inherit
color: blue
---
You review API handlers. Be strict about status codes.
"""


def test_claude_code_agent_file(tmp_path):
    path = write(tmp_path / ".claude" / "agents" / "api-reviewer.md", CLAUDE_REVIEWER)
    role, warnings = r.load_role_file(path)
    assert role.name == "api-reviewer"
    assert role.description == "Reviews the HTTP API layer.\nUse it after API changes."
    assert role.allowed_tools == ("read", "grep", "glob", "list_dir", "multi_edit")
    assert role.model is None  # "inherit"
    assert role.system_prompt == "You review API handlers. Be strict about status codes."
    assert role.source == str(path) and warnings == []


def test_our_role_file_with_all_fields_and_block_values(tmp_path):
    path = write(tmp_path / "r.md", """---
# a comment
name: migrator
description: >
  Writes database
  migrations.
max_steps: 12
read_only: false
allowed_tools:
  - read
  - write
disallowed_tools: [bash]
mcp_servers: [db]
model: 'fast-model'
frobnicate: 1
---
Write one migration per change.
""")
    role, warnings = r.load_role_file(path)
    assert role.description == "Writes database migrations."
    assert (role.max_steps, role.read_only, role.model) == (12, False, "fast-model")
    assert role.allowed_tools == ("read", "write") and role.disallowed_tools == ("bash",)
    assert role.mcp_servers == ("db",)
    assert len(warnings) == 1 and str(path) in warnings[0] and "frobnicate" in warnings[0]


@pytest.mark.parametrize(("text", "needle"), [
    ("---\nname: x\nNo closing line\n", "line 1: front matter opened with '---' is never closed"),
    ("---\nmax_steps: ten\n---\nbody\n", "max_steps: expected a whole number of steps"),
    ("---\nmax_steps: 0\n---\nbody\n", "max_steps: expected at least 1"),
    ("---\nname: x\n---\n", "no body"),
    ("---\nname: \"unclosed\n---\nbody\n", "line 2: front matter is not valid YAML"),
    ("---\nname: a\nname: b\n---\nbody\n", "line 3: front matter is not valid YAML: key 'name' appears twice"),
    ("---\nname:\n  nested: 1\n---\nbody\n", "name: expected a name, found {'nested': 1}"),
    ("---\nread_only: maybe\n---\nbody\n", "read_only: expected true or false"),
    ("---\nread_only: yes\n---\nbody\n", "read_only: expected true or false, found 'yes'"),
    ("---\ntools: {a: 1}\n---\nbody\n", "tools: expected a list of names"),
    ("---\nname: ../evil\n---\nbody\n", "name: expected letters"),
    ("---\n- a list\n---\nbody\n", "front matter must be 'key: value' lines, found list"),
])
def test_bad_role_files_name_the_file_and_the_problem(tmp_path, text, needle):
    path = write(tmp_path / "bad.md", text)
    with pytest.raises(r.RoleError) as err:
        r.load_role_file(path)
    assert str(path) in str(err.value) and needle in str(err.value)


@pytest.mark.parametrize(("value", "level"), [
    ("high", "high"), ("off", "off"), ("'OFF'", "off"), ("8000", 8000), ("'2048'", 2048),
])
def test_role_file_thinking_is_a_front_matter_key(tmp_path, value, level):
    """``thinking`` is in the role key table (issue 32): YAML 1.2 booleans, so ``off`` is the
    level and not false; a number is a token budget."""
    role, warnings = r.load_role_file(write(tmp_path / "t.md", f"---\nthinking: {value}\n---\nbody\n"))
    assert role.thinking == level and warnings == []


@pytest.mark.parametrize(("value", "needle"), [
    ("hard", "thinking: expected off, low, medium, high"), ("0", "at least 1"),
    ("true", "found True"),
])
def test_role_file_bad_thinking_names_the_file(tmp_path, value, needle):
    path = write(tmp_path / "t.md", f"---\nthinking: {value}\n---\nbody\n")
    with pytest.raises(r.RoleError) as err:
        r.load_role_file(path)
    assert str(path) in str(err.value) and needle in str(err.value)


def test_front_matter_absent_means_body_only():
    assert split_front_matter("just a prompt\n") == ({}, "just a prompt")
    with pytest.raises(FrontMatterError):
        split_front_matter("---\nbad line\n---\n", "f.md")


# ---- resolution -----------------------------------------------------------------------------


def test_resolution_order_config_then_nyzhi_then_claude_then_builtin(tmp_path):
    ws = tmp_path
    write(ws / ".claude/agents/shared.md", "---\ndescription: from claude\n---\nclaude prompt\n")
    write(ws / ".claude/agents/only-claude.md", "---\ndescription: c\n---\nclaude only\n")
    write(ws / ".nyzhi/agents/shared.md", "---\ndescription: from nyzhi\n---\nnyzhi prompt\n")
    write(ws / ".nyzhi/agents/explorer.md", "---\ndescription: mine\n---\nmy explorer\n")
    config = {
        "shared": RoleConfig(model="cfg-model"),  # overrides fields of the .nyzhi file
        "reviewer": RoleConfig(max_steps=7),  # overrides fields of the built-in
        "fresh": RoleConfig(description="from config", system_prompt="cfg prompt"),
    }
    catalog = r.RoleCatalog.load(config, ws)
    shared = catalog.resolve("shared")
    assert (shared.description, shared.system_prompt, shared.model) == (
        "from nyzhi", "nyzhi prompt", "cfg-model")
    assert shared.source == "config"
    assert catalog.resolve("only-claude").system_prompt == "claude only"
    assert catalog.resolve("explorer").system_prompt == "my explorer"  # a file replaces whole
    assert catalog.resolve("explorer").allowed_tools is None
    reviewer = catalog.resolve("reviewer")
    assert reviewer.max_steps == 7 and reviewer.read_only
    assert reviewer.system_prompt == r.BUILTIN_ROLES["reviewer"].system_prompt
    assert catalog.resolve("fresh").system_prompt == "cfg prompt"
    assert catalog.resolve("worker") == r.BUILTIN_ROLES["worker"]
    with pytest.raises(r.RoleError, match="no role named 'nobody'"):
        catalog.resolve("nobody")  # never a silent default (issue 31)
    nobody = catalog.resolve("nobody", strict=False)  # for display only
    assert nobody.source == "synthesized" and nobody.system_prompt == r.rp.DEFAULT
    assert catalog.resolve(None).name == "default"


def test_config_file_key_and_roles_from_a_real_config(tmp_path, home):
    ws = tmp_path / "ws"
    write(ws / "roles/sql.md", "---\ndescription: SQL helper\nmax_steps: 9\n---\nWrite SQL.\n")
    write(ws / ".nyzhi/config.toml", """
[agent.agents.roles.sql]
config_file = "roles/sql.md"
read_only = true

[agent.agents.roles.explorer]
model = "small-model"
""")
    config = load_config(ws).config
    catalog = r.RoleCatalog.load(config.agent.agents.roles, ws)
    sql = catalog.resolve("sql")
    assert (sql.system_prompt, sql.max_steps, sql.read_only) == ("Write SQL.", 9, True)
    explorer = catalog.resolve("explorer")
    assert explorer.model == "small-model" and explorer.read_only
    assert explorer.allowed_tools == r.EXPLORER_TOOLS


def test_a_broken_file_is_reported_and_resolving_it_raises_that_error(tmp_path):
    bad = write(tmp_path / ".nyzhi/agents/broken.md", "---\nmax_steps: many\n---\nx\n")
    write(tmp_path / ".nyzhi/agents/fine.md", "fine prompt\n")
    catalog = r.RoleCatalog.load({}, tmp_path)
    assert catalog.resolve("fine").system_prompt == "fine prompt"
    assert str(bad) in catalog.errors["broken"]
    with pytest.raises(r.RoleError, match="max_steps"):
        catalog.resolve("broken")
    missing = r.RoleCatalog.load({"x": RoleConfig(config_file="nope.md")}, tmp_path)
    with pytest.raises(r.RoleError, match=r"agent\.agents\.roles\.x: .*nope\.md"):
        missing.resolve("x")


def test_role_list_for_spawn_agent_and_unknown_tool_warnings(tmp_path):
    write(tmp_path / ".claude/agents/zed.md", "---\ndescription: Zed.\ntools: Read, Teleport\n"
          "---\nz\n")
    catalog = r.RoleCatalog.load({}, tmp_path)
    text = catalog.render_list()
    lines = text.splitlines()
    assert [line.split(":")[0][2:] for line in lines] == [*BUILTIN_NAMES, "zed"]
    assert "- explorer: Read-only codebase search" in text and "(30 steps, read only)" in text
    assert "- zed: Zed. (50 steps)" in text
    notes = catalog.check_tools(default_registry().names())
    assert notes == [f"role 'zed' ({tmp_path / '.claude/agents/zed.md'}) names unknown tools: "
                     "Teleport"]


# ---- models ---------------------------------------------------------------------------------


def test_model_choice_precedence():
    models = r.RoleModels(subagent_model="sub-model")
    plain = r.BUILTIN_ROLES["worker"]
    pinned = r.Role("pinned", "", "p", model="role-model")
    assert models.resolve(plain, "parent-model") == r.ModelChoice("sub-model",
                                                                  "agent.subagent_model")
    assert r.RoleModels().resolve(plain, "parent-model").model == "parent-model"
    assert models.resolve(pinned, "parent-model").model == "role-model"
    assert models.resolve(pinned, "parent-model", requested="asked").model == "asked"
    models.set("pinned", "console-model")
    assert models.resolve(pinned, "p", requested="asked") == r.ModelChoice("console-model",
                                                                           "override")
    assert models.resolve(plain, "p").model == "sub-model"  # other roles unaffected
    models.set("pinned", None)
    assert models.resolve(pinned, "p").model == "role-model"


# ---- the fence ------------------------------------------------------------------------------


def test_mcp_servers_fence_by_server():
    role = r.Role("x", "", "p", mcp_servers=("github",))
    assert role.allows("mcp__github__list_issues") and not role.allows("mcp__jira__search")
    assert role.allows("read")
    assert r.Role("y", "", "p").allows("mcp__jira__search")


def fenced_for(role: r.Role, ws: Path):
    registry = default_registry()
    gates = Gates(trust=TrustPolicy(mode=TrustMode.FULL))
    return registry, r.fence_tools(role, registry, gates, ctx_for(ws))


async def test_read_only_role_write_is_refused_by_the_gate_even_when_called(tmp_path):
    """The model calls ``write`` although the explorer's view does not offer it: the gate
    refuses and the file is not created. Also with a fence that lists ``write`` explicitly
    (a read-only role whose allowed_tools name a writer)."""
    ws = tmp_path
    registry, fenced = fenced_for(r.BUILTIN_ROLES["explorer"], ws)
    assert "write" not in fenced.registry.names() and "read" in fenced.registry.names()
    assert "write" not in {s["name"] for s in fenced.registry.schemas()}
    # the gates alone (as if the registry offered every tool)
    decision = await fenced.gates.check(registry.get("write"), {"file_path": "a.txt",
                                                                "content": "x"}, fenced.context)
    assert not decision.allowed and decision.gate == ROLE_FENCE
    sneaky = r.Role("sneaky", "", "p", read_only=True, allowed_tools=("read", "write", "edit"))
    _registry, sneaky_tools = fenced_for(sneaky, ws)
    assert "write" not in sneaky_tools.registry.names()
    outcomes = await execute_calls(
        [ToolCallRequest("c1", "write", {"file_path": "a.txt", "content": "x"})],
        registry=registry,  # the unfenced registry: only the gate stands in the way
        gates=sneaky_tools.gates,
        ctx=sneaky_tools.context,
    )
    result = outcomes[0].result
    assert result.is_error and "`sneaky` role is read-only" in result.output
    assert outcomes[0].decision.gate == ROLE_FENCE
    assert not (ws / "a.txt").exists()


def bwrap_works() -> bool:
    try:
        return subprocess.run(["bwrap", "--ro-bind", "/", "/", "true"],
                              capture_output=True).returncode == 0
    except OSError:
        return False


@pytest.mark.skipif(not bwrap_works(), reason="bubblewrap cannot run here")
async def test_read_only_role_shell_runs_in_the_read_only_sandbox(tmp_path):
    ws = tmp_path
    (ws / "notes.txt").write_text("hello\n")
    registry, fenced = fenced_for(r.BUILTIN_ROLES["reviewer"], ws)
    assert fenced.context.sandbox.level is SandboxLevel.READ_ONLY
    outcomes = await execute_calls(
        [ToolCallRequest("c1", "bash", {"command": "cat notes.txt"}),
         ToolCallRequest("c2", "bash", {"command": "echo x > made.txt"})],
        registry=fenced.registry, gates=fenced.gates, ctx=fenced.context,
    )
    assert "hello" in outcomes[0].result.output and not outcomes[0].result.is_error
    assert outcomes[1].result.is_error and not (ws / "made.txt").exists()
    # a read-only role whose context was not switched to the read-only sandbox: refused
    decision = await fenced.gates.check(registry.get("bash"), {"command": "ls"}, ctx_for(ws))
    assert decision.gate == ROLE_FENCE and "read-only" in decision.reason


async def test_fence_narrows_and_keeps_existing_fences(tmp_path):
    registry = default_registry()
    gates = Gates(allowed_tools=frozenset({"read", "grep", "write"}),
                  disallowed_tools=frozenset({"grep"}))
    role = r.Role("w", "", "p", allowed_tools=("read", "write", "bash"))
    fenced = r.fence_tools(role, registry, gates, ctx_for(tmp_path))
    assert fenced.gates.allowed_tools == {"read", "write"}
    assert "grep" in fenced.gates.disallowed_tools
    ctx = fenced.context
    assert ctx.registry is fenced.registry and ctx.sandbox.level is SandboxLevel.WORKSPACE_WRITE
    bash = await fenced.gates.check(registry.get("bash"), {"command": "ls"}, ctx)
    assert bash.gate == ROLE_FENCE


def test_subagent_prompt_is_role_then_shared_rules_then_briefing():
    from nyzhi.core.runtime.briefing import build_briefing

    briefing = build_briefing("/proj")
    text = r.subagent_prompt(r.BUILTIN_ROLES["explorer"], briefing)
    role_at = text.index(r.BUILTIN_ROLES["explorer"].system_prompt)
    assert role_at == 0 < text.index("You are a subagent") < text.index(
        "# Context Briefing (from parent)")
    assert r.subagent_prompt(r.BUILTIN_ROLES["worker"]).endswith(r.rp.SHARED_RULES)


def test_a_role_file_answers_to_its_declared_name_then_its_file_name(tmp_path):
    write(tmp_path / ".claude/agents/django-pro.md",
          "---\nname: python-development-django-pro\ndescription: >\n  Django work,\n  "
          "folded.\ntools: Read, Agent\n---\nDJANGO prompt\n")
    write(tmp_path / ".claude/agents/python-development-django-pro.md",  # a file named like
          "---\nname: other\n---\nOTHER prompt\n")  # the first one's declared name
    catalog = r.RoleCatalog.load({}, tmp_path)
    by_name = catalog.resolve("python-development-django-pro")
    assert by_name.system_prompt == "DJANGO prompt"  # the declared name wins over a file name
    assert by_name.description == "Django work, folded."
    assert by_name.allowed_tools == ("read", "spawn_agent")
    assert catalog.resolve("django-pro") is by_name
    assert catalog.resolve("Django-Pro") is by_name
    assert catalog.resolve("other").system_prompt == "OTHER prompt"
    with pytest.raises(r.RoleError) as err:
        catalog.resolve("djangopro")
    message = str(err.value)
    assert "django-pro (file of python-development-django-pro)" in message
    assert "not started" in message
    # list_roles' filter looks at names, file names and descriptions
    assert [m["name"] for m in catalog.matching("django")] == [
        "other", "python-development-django-pro"]
    assert [m["name"] for m in catalog.matching("folded")] == ["python-development-django-pro"]


async def test_the_view_and_the_gates_ask_one_fence_so_they_agree_on_every_name(tmp_path):
    """The registry's view (what the model is shown) and the gates (what a call the model
    makes anyway meets) both ask the role's ``ToolFence``: MCP tools by server too."""
    from nyzhi.tools.fence import ToolFence

    class Mcp:
        permission = Permission.READ_ONLY
        description = "an MCP tool"
        deferred = False
        parameters = {"type": "object", "properties": {}}

        def __init__(self, name):
            self.name = name

        async def run(self, args, ctx):  # pragma: no cover - never reached when fenced
            raise AssertionError("a fenced tool ran")

    registry = default_registry()
    for name in ("mcp__docs__search", "mcp__shell__run", "mcp__oddname"):
        registry.register(Mcp(name))
    role = r.Role("m", "", "p", disallowed_tools=("bash",), mcp_servers=("docs",))
    fenced = r.fence_tools(role, registry, Gates(), ctx_for(tmp_path))
    fence = role.tool_fence
    assert fence == ToolFence.of(None, ("bash",), ("docs",))
    for name in registry.names():
        tool = registry.get(name)
        decision = await fenced.gates.check(tool, {}, fenced.context)
        assert fenced.registry.is_allowed(name) is fence.allows(name), name
        assert (decision.gate == ROLE_FENCE) is (not fence.allows(name)), name
    assert not fence.allows("mcp__shell__run") and fence.allows("mcp__docs__search")
    assert not fence.allows("mcp__oddname") and not fence.allows("bash") and fence.allows("read")
    # narrowing: a child never gets what its parent's fence stops
    child = fence.narrowed(ToolFence.of(("read", "bash", "mcp__docs__search"), ("grep",)))
    assert child.allowed == {"read", "bash", "mcp__docs__search"}
    assert child.disallowed == {"bash", "grep"} and child.mcp_servers == {"docs"}
    assert [n for n in ("read", "bash", "mcp__docs__search") if child.allows(n)] == [
        "read", "mcp__docs__search"]
