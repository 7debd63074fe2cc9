"""Claude Code's tool names and ours: the one table every reader of Claude Code files uses.

Claude Code names tools in four places a project carries over: an agent file's ``tools:`` list
(``nyzhi.core.runtime.roles``), a hook's ``matcher`` (``nyzhi.core.runtime.hooks``), a permission rule such as
``Bash(npm test)`` (``nyzhi.tools.claude_permissions``) and a skill's ``allowed-tools``. All of
them look names up here, so a name mapped once is mapped everywhere.

``CLAUDE_TOOLS`` holds every tool name Claude Code documents (its tools reference, plus the
names older releases used: ``Task``, ``LS``, ``MultiEdit``, ``TodoRead``, ``NotebookRead``,
``BashOutput``, ``KillShell``/``KillBash``, ``exit_plan_mode``), each with our tool of the same
job, or None where nyz has none. A documented name without an equivalent is not a typo: readers
drop it from a tool list and say so once per file (``nyzhi.config.notices_seen``), not on every
run.
"""

from __future__ import annotations

import re

# Claude Code's name -> ours (None: nyz has no tool for that job).
CLAUDE_TOOLS: dict[str, str | None] = {
    # files
    "Read": "read", "Write": "write", "Edit": "edit", "MultiEdit": "multi_edit",
    "NotebookRead": "read", "NotebookEdit": "notebook_edit",
    "Glob": "glob", "Grep": "grep", "LS": "list_dir",
    # commands
    "Bash": "bash", "BashOutput": "bash_output", "KillShell": "kill_shell",
    "KillBash": "kill_shell",
    "PowerShell": None, "Monitor": None,
    # web
    "WebFetch": "web_fetch", "WebSearch": "web_search",
    # subagents and teams
    "Agent": "spawn_agent", "Task": "spawn_agent", "SendMessage": "send_team_message",
    "TeamCreate": "team_create", "TeamDelete": "team_delete",
    # the task list (a team's board here)
    "TaskCreate": "task_create", "TaskGet": "task_list", "TaskList": "task_list",
    "TaskUpdate": "task_update",
    # a background task's output and stop (Claude Code's newer names for BashOutput/KillShell)
    "TaskOutput": "bash_output", "TaskStop": "kill_shell",
    # the session's todo list and plan
    "TodoWrite": "todowrite", "TodoRead": "todoread",
    "ExitPlanMode": "create_plan", "exit_plan_mode": "create_plan", "EnterPlanMode": None,
    # asking, skills, deferred tools
    "AskUserQuestion": "ask_user", "Skill": "load_skill", "SlashCommand": None,
    "ToolSearch": "tool_search",
    # MCP resources, code intelligence, scheduling, worktrees, artifacts
    "ListMcpResourcesTool": None, "ReadMcpResourceTool": None, "LSP": None,
    "CronCreate": None, "CronDelete": None, "CronList": None,
    "EnterWorktree": None, "ExitWorktree": None, "Artifact": None,
}

_FOLDED = {re.sub(r"[\s_-]", "", k.lower()): k for k in CLAUDE_TOOLS}


def _fold(name: str) -> str:
    return re.sub(r"[\s_-]", "", name.strip().lower())


def claude_name(name: str) -> str | None:
    """The Claude Code name ``name`` spells (case, ``_`` and ``-`` ignored: ``multi_edit`` is
    ``MultiEdit``), or None when it is not one of Claude Code's."""
    return _FOLDED.get(_fold(name))


def is_documented(name: str) -> bool:
    """Whether ``name`` is a tool name Claude Code documents."""
    return claude_name(name) is not None


def ours(name: str) -> str | None:
    """Our tool for Claude Code's ``name`` (None when nyz has no equivalent); a name that is
    not Claude Code's is returned as written (our own names, MCP names)."""
    name = name.strip()
    if name.startswith("mcp__"):
        return name
    claude = claude_name(name)
    if claude is None:
        return name
    return CLAUDE_TOOLS[claude]


def claude_names_for(tool: str) -> tuple[str, ...]:
    """Claude Code's names for our ``tool`` (``spawn_agent`` -> ``Agent``, ``Task``), so a
    Claude Code matcher like ``Write|Edit`` selects ours."""
    return tuple(k for k, v in CLAUDE_TOOLS.items() if v == tool)


def without_equivalent(names: list[str] | tuple[str, ...]) -> list[str]:
    """The names of ``names`` Claude Code documents and nyz has no tool for."""
    return [n for n in names if is_documented(n) and CLAUDE_TOOLS[claude_name(n) or ""] is None]


# ---- hooks: what a Claude Code hook script is given, and what it may give back ---------------

# The name a hook's payload carries for our tool where Claude Code has two for one job: its
# hooks reference names subagent calls ``Task`` (``Agent`` still matches, ``claude_names_for``).
_HOOK_NAME = {"spawn_agent": "Task", "read": "Read"}
# Our argument -> Claude Code's, per tool (only the ones that differ). Paths become absolute.
_ARGS: dict[str, dict[str, str]] = {
    "grep": {"include": "glob"},
    "spawn_agent": {"message": "prompt", "agent_type": "subagent_type"},
}
_PATH_ARGS = frozenset({"file_path", "path", "notebook_path"})


def claude_tool_name(tool: str) -> str:
    """Claude Code's name for our ``tool`` as a hook's ``tool_name`` (``bash`` -> ``Bash``);
    MCP tools (``mcp__server__tool``) and tools Claude Code has no name for keep ours."""
    if tool.startswith("mcp__"):
        return tool
    if tool in _HOOK_NAME:
        return _HOOK_NAME[tool]
    names = claude_names_for(tool)
    return names[0] if names else tool


def _absolute(path: str, cwd: str) -> str:
    import os

    return os.path.normpath(os.path.join(cwd, os.path.expanduser(path)))


def claude_tool_inputs(tool: str, args: dict, cwd: str) -> list[dict]:
    """Our call's arguments as Claude Code's ``tool_input``: its parameter names, absolute
    paths, ``Bash`` timeouts in milliseconds. One input per file for a ``multi_edit`` over
    several files (Claude's ``MultiEdit`` edits one), so a file guard sees every file."""
    if tool == "multi_edit":
        out = []
        for entry in args.get("edits") or []:
            if not isinstance(entry, dict):
                continue
            edits = [{"old_string": r.get("old", ""), "new_string": r.get("new", ""),
                      "replace_all": False}
                     for r in entry.get("replacements") or [] if isinstance(r, dict)]
            out.append({"file_path": _absolute(str(entry.get("file", "")), cwd), "edits": edits})
        return out or [{"file_path": "", "edits": []}]
    renames = _ARGS.get(tool, {})
    converted: dict = {}
    for key, value in args.items():
        name = renames.get(key, key)
        if key in _PATH_ARGS and isinstance(value, str) and value:
            value = _absolute(value, cwd)
        converted[name] = value
    if tool == "bash" and isinstance(converted.get("timeout"), int | float):
        converted["timeout"] = int(converted["timeout"] * 1000)
    if tool == "spawn_agent":
        converted.setdefault("description", str(converted.get("prompt", ""))[:60])
    return [converted]


def ours_tool_input(tool: str, claude_input: dict) -> dict | None:
    """A hook's ``updatedInput`` (Claude Code's names) as our tool's arguments, or None when
    it cannot be expressed (``MultiEdit``'s shape for our multi-file edit)."""
    if tool == "multi_edit":
        path = claude_input.get("file_path")
        edits = claude_input.get("edits")
        if not isinstance(path, str) or not isinstance(edits, list):
            return None
        return {"edits": [{"file": path, "replacements": [
            {"old": e.get("old_string", ""), "new": e.get("new_string", "")}
            for e in edits if isinstance(e, dict)]}]}
    back = {v: k for k, v in _ARGS.get(tool, {}).items()}
    out = {back.get(k, k): v for k, v in claude_input.items()}
    if tool == "bash" and isinstance(out.get("timeout"), int | float):
        out["timeout"] = out["timeout"] / 1000
    if tool == "spawn_agent":
        out.pop("description", None)
    return out
