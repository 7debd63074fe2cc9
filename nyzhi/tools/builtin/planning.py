"""Planning and thinking: todowrite, todoread, think.

Todos live in ``ctx.state["todos"]`` (per session) and, when the session has an id, in
``<workspace>/.nyzhi/todos/<session>.json`` written atomically, so a resumed session (or a
crash) keeps its plan. Writes merge by id: the model can update one item without resending all.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import trio

from nyzhi.config.modes import TODO_MARKS, TodoStatus, choices
from nyzhi.config.prompt_files import prompt_roots, read_prompt_file
from nyzhi.config.scaffold import ignore_runtime_files
from nyzhi.tools.base import ToolContext, ToolResult
from nyzhi.tools.builtin.common import ArgError, BuiltinTool, req_str
from nyzhi.tools.offload import run_blocking
from nyzhi.tools.paths import write_nofollow

STATUSES = choices(TodoStatus)


def todos_path(ctx: ToolContext) -> Path | None:
    if not ctx.session_id:
        return None
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", ctx.session_id)
    return Path(ctx.workspace_root) / ".nyzhi" / "todos" / f"{safe}.json"


def _save(path: Path, data: bytes) -> None:
    """Write the todo file, with ``.nyzhi/.gitignore`` listing it first (never committed)."""
    ignore_runtime_files(path)
    write_nofollow(path, data)


def _read_todos(path: Path | None) -> list[dict[str, Any]]:
    """The todos saved at ``path`` ([] when absent, unreadable or refused: they go into the
    prompt, so the file must resolve inside the workspace, ``config.prompt_files``).
    Blocking."""
    if path is None or not path.exists():
        return []
    try:
        root = path.parent.parent.parent  # <root>/.nyzhi/todos/<session>.json
        data = json.loads(read_prompt_file(path, prompt_roots(root), errors="strict"))
        return [t for t in data.get("todos", []) if isinstance(t, dict) and "id" in t]
    except (OSError, ValueError):
        return []


def load_todos(ctx: ToolContext) -> list[dict[str, Any]]:
    """The session's todos: from state, else from the session's file, else empty."""
    todos = ctx.state.get("todos")
    if todos is None:
        todos = ctx.state["todos"] = _read_todos(todos_path(ctx))
    return todos


async def load_todos_async(ctx: ToolContext) -> list[dict[str, Any]]:
    """``load_todos`` with the file read (first use in a session only) in a worker thread."""
    if ctx.state.get("todos") is None:
        todos = await run_blocking(_read_todos, todos_path(ctx))
        ctx.state.setdefault("todos", todos)  # unless another call loaded them meanwhile
    return load_todos(ctx)


def render(todos: list[dict[str, Any]]) -> str:
    if not todos:
        return "No todos."
    lines = []
    for t in todos:
        line = f"{TODO_MARKS.get(t['status'], '[?]')} {t['id']}: {t['content']}"
        if t.get("blocked_by"):
            line += f" (blocked by {', '.join(t['blocked_by'])})"
        lines.append(line)
    done = sum(t["status"] == TodoStatus.COMPLETED for t in todos)
    lines.append(f"({done}/{len(todos)} completed)")
    return "\n".join(lines)


def _str_list(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ArgError(f"{where} must be an array of ids")
    return [str(v) for v in value]


class TodoWriteTool(BuiltinTool):
    name = "todowrite"
    description = (
        "Create or update the session's todo list (the user sees it) and get the whole list "
        "back. Items merge by id, so send only those that changed; a new item needs content. "
        "Use it for work of three or more steps, one item in_progress at a time. Example: "
        "{\"todos\": [{\"id\": \"1\", \"content\": \"Add parser test\", \"status\": "
        "\"in_progress\"}]}."
    )
    parameters = {
        "type": "object",
        "properties": {
            "todos": {
                "type": "array",
                "description": "Items to add or update.",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": "Stable id of the item."},
                        "content": {"type": "string", "description": "The step in a few words (required for a new item)."},
                        "status": {"type": "string", "enum": list(STATUSES), "description": "The item's state."},
                        "blocked_by": {"type": "array", "items": {"type": "string"}, "description": "Ids that must finish first."},
                        "blocks": {"type": "array", "items": {"type": "string"}, "description": "Ids waiting on this one."},
                    },
                    "required": ["id", "content", "status"],
                },
            }
        },
        "required": ["todos"],
    }

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        items = args.get("todos")
        if not isinstance(items, list):
            raise ArgError(
                "'todos' is required and must be an array like "
                '[{"id": "1", "content": "Write the test", "status": "pending"}]'
            )
        updates = []
        for i, item in enumerate(items, start=1):
            if not isinstance(item, dict):
                raise ArgError(f"todos[{i}] must be an object")
            tid = item.get("id")
            if not isinstance(tid, str | int) or str(tid) == "":
                raise ArgError(f"todos[{i}]: 'id' is required")
            status = item.get("status")
            if status not in STATUSES:
                raise ArgError(f"todos[{i}]: status must be one of {', '.join(STATUSES)}, got {status!r}")
            content = req_str(item, "content") if "content" in item else None
            updates.append({
                "id": str(tid), "content": content, "status": status,
                "blocked_by": _str_list(item.get("blocked_by"), f"todos[{i}].blocked_by"),
                "blocks": _str_list(item.get("blocks"), f"todos[{i}].blocks"),
            })
        todos = await load_todos_async(ctx)
        by_id = {t["id"]: t for t in todos}
        for up in updates:
            existing = by_id.get(up["id"])
            if existing is None:
                if up["content"] is None:
                    raise ArgError(
                        f"todo {up['id']!r} is new, so 'content' is required; to update an "
                        "existing item, use its id as todoread shows it"
                    )
                todos.append(up)
                by_id[up["id"]] = up
            else:
                existing["status"] = up["status"]
                if up["content"] is not None:
                    existing["content"] = up["content"]
                if "blocked_by" in up and up["blocked_by"]:
                    existing["blocked_by"] = up["blocked_by"]
                if up["blocks"]:
                    existing["blocks"] = up["blocks"]
        path = todos_path(ctx)
        if path is not None:
            # The file is written in a worker thread. Two todowrite calls of one step run
            # concurrently: taking the snapshot under a lock makes the last save hold both.
            async with ctx.state.setdefault("todos_save_lock", trio.Lock()):
                payload = json.dumps({"session": ctx.session_id, "todos": todos}, indent=2) + "\n"
                await run_blocking(_save, path, payload.encode("utf-8"))
        return ToolResult(output=render(todos), metadata={"todos": [dict(t) for t in todos]})


class TodoReadTool(BuiltinTool):
    name = "todoread"
    deferred = True  # todowrite answers with the whole list
    description = (
        "Show the session's todo list with each item's status. todowrite already returns the "
        "list after each change, so this is for checking it later."
    )
    parameters = {"type": "object", "properties": {}}

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        todos = await load_todos_async(ctx)
        return ToolResult(output=render(todos), metadata={"todos": [dict(t) for t in todos]})


class ThinkTool(BuiltinTool):
    name = "think"
    description = (
        "Write down reasoning without acting; the thought comes back unchanged and nothing else "
        "happens. Use it to plan a multi-step change or weigh a tool result before the next "
        "move."
    )
    parameters = {
        "type": "object",
        "properties": {"thought": {"type": "string", "description": "Your reasoning."}},
        "required": ["thought"],
    }

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return ToolResult(output=req_str(args, "thought"))


TOOLS = (TodoWriteTool, TodoReadTool, ThinkTool)
