"""The tool-use section says which search fits which question, naming only tools the agent
has: structure with ast_search, and definitions and references with the LSP tools only when
those are in its set (issue 36)."""

from __future__ import annotations

from pathlib import Path

from nyzhi.core.loop import prompt_sections as s
from nyzhi.core.loop.prompt import PromptParts
from nyzhi.core.prompt_env import Environment

ENV = Environment(platform="Linux x86_64", date="2026-11-23", project_type="python",
                  git_branch="main", git_dirty=False, in_git=True)
BASE = ("read", "grep", "glob", "edit")


def tool_use(*names: str) -> str:
    return s.tool_use(PromptParts(workspace_root=Path("/p"), cwd=Path("/p"), environment=ENV,
                                  tool_names=names))


def test_structure_with_ast_search_when_the_agent_has_it():
    text = tool_use(*BASE, "ast_search", "batch_apply")
    assert "Find text with grep, structure with ast_search" in text
    assert "batch_apply" in text and "lsp_" not in text


def test_definitions_via_the_language_server_tools_when_present():
    text = tool_use(*BASE, "ast_search", "lsp_goto_definition", "lsp_find_references")
    assert "definitions and references with lsp_goto_definition and lsp_find_references" in text


def test_a_read_only_agent_is_not_told_about_batch_apply():
    text = tool_use(*BASE, "ast_search")
    assert "structure with ast_search" in text and "batch_apply" not in text


def test_no_line_for_an_agent_without_structural_search():
    text = tool_use(*BASE)
    assert "ast_search" not in text and "batch_apply" not in text
