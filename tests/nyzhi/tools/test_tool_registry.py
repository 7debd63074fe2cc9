"""The registry (fencing, deferred tools, external tools, default set) and large-output capping."""

from pathlib import Path

import pytest
from _toolctx import make_ctx

from nyzhi.tools.base import Permission, Tool, ToolResult
from nyzhi.tools.output import cap_output, results_dir
from nyzhi.tools.registry import BUILTIN_MODULES, ToolRegistry, ToolRegistryError, default_registry

ORIGINAL_NAMES = {
    "bash", "read", "write", "edit", "apply_patch", "multi_edit", "glob", "grep", "fuzzy_find",
    "tail_file", "list_dir", "directory_tree", "file_info", "delete_file", "move_file",
    "copy_file", "create_dir", "git_status", "git_diff", "git_log", "git_show", "git_branch",
    "git_commit", "git_checkout", "todowrite", "todoread", "think", "ask_user", "tool_search",
    "verify", "web_fetch", "memory_read", "memory_write", "load_skill", "create_plan",
    "notepad_read", "notepad_write",
    "spawn_agent", "send_input", "wait", "close_agent", "resume_agent",
    "team_create", "team_delete", "team_list", "send_team_message", "read_inbox", "task_create",
    "task_update", "task_list", "spawn_teammate",
    "list_skills", "list_roles",  # issue 31: what the budgeted listings leave out
    # issue 38 (web_search is registered only when [web_search] names a backend)
    "browser_open", "browser_screenshot", "browser_evaluate", "browser_click", "browser_type",
    "create_pr", "review_pr",
    # issue 36: the original's LSP tools, plus rename and symbols
    "lsp_diagnostics", "lsp_goto_definition", "lsp_find_references", "lsp_hover",
    "lsp_rename", "lsp_symbols",
    "notebook_edit",  # issue 56: Claude Code's NotebookEdit
    # issue 51: background shells (read-only: the command was approved when bash started it)
    "bash_output", "write_stdin", "kill_shell", "list_shells",
}
EDITING_TOOLS = {"ast_search", "batch_apply", "instrument", "remove_instrumentation"}  # issue 36: the original's editing tools
ORIGINAL_NAMES |= EDITING_TOOLS
BROWSER_TOOLS = {"browser_open", "browser_screenshot", "browser_evaluate", "browser_click",
                 "browser_type"}
WRITE_TOOLS = {"write", "edit", "multi_edit", "apply_patch", "delete_file", "move_file", "copy_file", "create_dir",
               "lsp_rename", "notebook_edit"}
WRITE_TOOLS |= EDITING_TOOLS - {"ast_search"}
NEEDS_APPROVAL = WRITE_TOOLS | BROWSER_TOOLS | {"create_pr", "bash", "git_commit", "git_checkout",
                                                "web_fetch", "memory_write", "team_delete"}


class Dummy(Tool):
    def __init__(self, name: str, deferred: bool = False) -> None:
        self.name = name
        self.description = f"{name} does things.\nSecond line."
        self.deferred = deferred

    async def run(self, args, ctx):
        return ToolResult(output=self.name)


def test_default_registry_has_every_builtin_with_original_permissions() -> None:
    reg = default_registry()
    assert set(reg.names()) == ORIGINAL_NAMES
    for tool in reg.tools():
        if tool.name in ("bash", "verify"):
            continue  # owned and tested by the shell/verify suite
        expected = Permission.NEEDS_APPROVAL if tool.name in NEEDS_APPROVAL else Permission.READ_ONLY
        assert tool.permission is expected, tool.name
        assert tool.writes_files == (tool.name in WRITE_TOOLS), tool.name
    for schema in reg.schemas():
        assert schema["parameters"]["type"] == "object" and schema["description"]
    assert "bash" in BUILTIN_MODULES and "verify" in BUILTIN_MODULES


def test_missing_builtin_module_is_a_clear_error() -> None:
    with pytest.raises(ModuleNotFoundError):
        default_registry(("files_read", "no_such_module"))


def test_role_fencing_views() -> None:
    reg = ToolRegistry()
    for n in ("read", "write", "bash"):
        reg.register(Dummy(n))
    ro = reg.fenced(allowed={"read", "bash"}, disallowed={"bash"})
    assert ro.names() == ["read"] and ro.is_allowed("read") and not ro.is_allowed("write")
    assert ro.get("write") is not None  # lookup still works; the gate reports the fence
    narrower = ro.fenced(allowed={"write", "read"})
    assert narrower.names() == ["read"]  # a view never widens its parent's fence
    reg.register(Dummy("grep"))
    assert reg.fenced(disallowed={"bash"}).names() == ["read", "write", "grep"]
    assert [s["name"] for s in ro.schemas()] == ["read"]
    assert not reg.is_allowed("nope")


def test_register_conflicts_and_external_tools() -> None:
    reg = ToolRegistry()
    reg.register(Dummy("read"))
    with pytest.raises(ToolRegistryError, match="already registered"):
        reg.register(Dummy("read"))
    with pytest.raises(ToolRegistryError, match="shadow a built-in"):
        reg.register_external(Dummy("read"))
    reg.register_external(Dummy("mcp__srv__a"), deferred=True)
    reg.register_external(Dummy("mcp__srv__a"), deferred=True)  # reconnect replaces
    assert reg.names() == ["read", "mcp__srv__a"]
    assert reg.is_deferred("mcp__srv__a")
    with pytest.raises(ToolRegistryError, match="invalid tool name"):
        reg.register(Dummy("bad name"))


def test_deferred_discovery_is_per_view() -> None:
    reg = ToolRegistry()
    reg.register(Dummy("read"))
    reg.register(Dummy("mcp__x__y", deferred=True))
    agent_a, agent_b = reg.fenced(), reg.fenced()
    assert agent_a.discover("mcp__x__y") and not agent_a.discover("nope")
    assert [s["name"] for s in agent_a.schemas()] == ["read", "mcp__x__y"]
    assert [s["name"] for s in agent_b.schemas()] == ["read"]
    assert agent_b.prompt_summary().endswith("- mcp__x__y: mcp__x__y does things.")


def test_cap_output_small_passes_through(tmp_path: Path) -> None:
    result = ToolResult(output="short", metadata={"k": 1})
    assert cap_output(result, make_ctx(tmp_path), "bash") is result


def test_cap_output_writes_file_with_pointer(tmp_path: Path, home: Path) -> None:
    text = "\n".join(f"line {i}" for i in range(1000))
    capped = cap_output(ToolResult(output=text, is_error=True, metadata={"exit_code": 1}), make_ctx(tmp_path), "bash")
    path = Path(capped.metadata["full_output_path"])
    assert path.parent == results_dir(tmp_path) and path.name.endswith("-bash.txt")
    assert path.is_relative_to(home / ".local" / "state")  # not the workspace (issue 29 §5)
    assert path.read_text() == text
    assert capped.is_error and capped.metadata["exit_code"] == 1
    assert capped.output.startswith(f"[Output written to {path} (1000 lines, {len(text)} chars). Use read")
    assert "line 0" in capped.output and "line 999" in capped.output and "line 500" not in capped.output
    assert len(capped.output) < 4000


def test_cap_output_threshold_is_configurable(tmp_path: Path, home: Path) -> None:
    result = ToolResult(output="x" * 100)
    assert cap_output(result, make_ctx(tmp_path), "t", threshold=200) is result
    assert "full_output_path" in cap_output(result, make_ctx(tmp_path), "t", threshold=50).metadata


def test_a_deferred_tools_prompt_line_is_its_main_clause_within_the_bound() -> None:
    """Every first request lists the deferred tools: a short first sentence is kept whole, a
    long one is cut to its main clause, and nothing (an MCP server's essay) passes the bound."""
    from nyzhi.tools.registry import SUMMARY_CHARS, tool_summary

    assert tool_summary("List pull requests. More.") == "List pull requests."
    assert tool_summary(
        "Click the element matching a CSS selector in the current browser tab (waiting up to "
        "30 s for it), with real mouse events at its centre.") == (
        "Click the element matching a CSS selector in the current browser tab")
    essay = tool_summary("word " * 400)
    assert len(essay) <= SUMMARY_CHARS and essay.endswith("…")
    reg = ToolRegistry()
    reg.register(Dummy("mcp__x__long", deferred=True))
    reg.get("mcp__x__long").description = "Does " + "very " * 100 + "much."
    [_, line] = reg.prompt_summary().splitlines()
    assert len(line) <= len("- mcp__x__long: ") + SUMMARY_CHARS
