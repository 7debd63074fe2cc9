"""The system prompt: who the agent is, where it runs, the project's rules, its tools.

Built fresh for every model step from parts that can change during a session (deferred tools
discovered, a role switched), so it is a function of the parts, never cached text.
"""

from __future__ import annotations

import datetime
import platform
from collections.abc import Sequence
from pathlib import Path

import attrs

BASE_PROMPT = """You are nyzhi, a coding agent working in the user's repository from a terminal.
You read, edit, run and review code with the tools you are given. Work in small verified steps:
look before you change, prefer exact edits to rewrites, run the tests or checks that prove a
change, and say plainly what you did and what is left. Never invent file contents or results."""


@attrs.define
class PromptParts:
    workspace_root: Path
    cwd: Path
    rules: str = ""
    role_prompt: str = ""
    custom_instructions: str = ""
    mcp_summaries: Sequence[str] = ()  # filled once MCP servers are wired in
    model: str = ""
    extra: Sequence[str] = ()  # further sections, e.g. the deferred-tool list


def environment_block(parts: PromptParts) -> str:
    today = datetime.date.today().isoformat()
    return (
        "<environment>\n"
        f"workspace root: {parts.workspace_root}\n"
        f"working directory: {parts.cwd}\n"
        f"platform: {platform.system()} {platform.machine()}\n"
        f"date: {today}\n"
        + (f"model: {parts.model}\n" if parts.model else "")
        + "</environment>"
    )


def build_system_prompt(parts: PromptParts) -> str:
    sections = [parts.role_prompt.strip() or BASE_PROMPT, environment_block(parts)]
    if parts.rules.strip():
        sections.append(f"<project_rules>\n{parts.rules.strip()}\n</project_rules>")
    if parts.custom_instructions.strip():
        sections.append(
            f"<custom_instructions>\n{parts.custom_instructions.strip()}\n</custom_instructions>"
        )
    if parts.mcp_summaries:
        sections.append("MCP servers:\n" + "\n".join(f"- {s}" for s in parts.mcp_summaries))
    sections.extend(s for s in parts.extra if s)
    return "\n\n".join(sections)
