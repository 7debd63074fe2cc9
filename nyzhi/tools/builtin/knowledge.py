"""Memory, skills, plans and notepads: memory_read, memory_write, load_skill, list_skills,
create_plan, notepad_read, notepad_write.

The files and their formats belong to ``nyzhi.knowledge``; these tools check arguments and
run the blocking file work in a worker thread. ``memory_write`` asks for approval (a note
outlives the session and is shown to every later one); the others only read, or write the
session's plan and the project's notepads under ``.nyzhi/``, which plan mode must allow.
Those workspace writes refuse symlinks at every path component (``tools.paths.write_nofollow``),
since read-only tools do not pass the sandbox gate.
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path
from typing import Any

import trio

from nyzhi.config.prompt_files import PromptFileRefused
from nyzhi.knowledge import plans
from nyzhi.knowledge.memory import MODES, SCOPES, MemoryRequestError, MemoryStore
from nyzhi.knowledge.skills import discover_skills, find_skill
from nyzhi.tools.base import Permission, ToolContext, ToolResult
from nyzhi.tools.builtin.common import ArgError, BuiltinTool, error, opt_str, req_str
from nyzhi.tools.paths import write_nofollow


def _root(ctx: ToolContext) -> Path:
    return Path(os.path.realpath(ctx.workspace_root))


def _store(ctx: ToolContext) -> MemoryStore:
    return MemoryStore.for_workspace(_root(ctx))


class MemoryReadTool(BuiltinTool):
    name = "memory_read"
    description = (
        "Read notes saved in earlier sessions. Without a topic: the user memory and the list "
        "of project topics. With a topic: that topic's notes."
    )
    parameters = {
        "type": "object",
        "properties": {"topic": {"type": "string", "description": "A topic from the list."}},
    }

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        topic = opt_str(args, "topic")
        store = _store(ctx)

        def read() -> str:
            if topic is None:
                user = store.read_user().strip() or "(no user memory)"
                index = store.read_index().strip() or "(no project memory)"
                return f"# User memory\n{user}\n\n{index}"
            text = store.read_topic(topic)
            if text is None:
                known = ", ".join(store.topics()) or "none yet"
                raise ArgError(f"no memory topic {topic!r} (project topics: {known})")
            return text

        try:
            return ToolResult(await trio.to_thread.run_sync(read))
        except MemoryRequestError as exc:
            return error(str(exc))


class MemoryWriteTool(BuiltinTool):
    name = "memory_write"
    description = (
        "Save a note for later sessions: a fact about this project (build commands, "
        "conventions, decisions, pitfalls) or, with scope 'user', about the user's preferences. "
        "Save what will still be true and useful later, in one or two sentences; never secrets."
    )
    permission = Permission.NEEDS_APPROVAL
    parameters = {
        "type": "object",
        "properties": {
            "topic": {"type": "string", "description": "Short topic name, e.g. 'testing'."},
            "content": {"type": "string", "description": "The note (markdown)."},
            "mode": {"type": "string", "enum": list(MODES),
                     "description": "append (default) or replace the topic's notes."},
            "scope": {"type": "string", "enum": list(SCOPES),
                      "description": "project (default) or user (every project)."},
        },
        "required": ["topic", "content"],
    }

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        topic, content = req_str(args, "topic"), req_str(args, "content")
        mode = opt_str(args, "mode") or "append"
        scope = opt_str(args, "scope") or "project"
        store = _store(ctx)
        try:
            path = await trio.to_thread.run_sync(
                lambda: store.write(topic, content, mode=mode, scope=scope))
        except MemoryRequestError as exc:
            return error(str(exc))
        verb = "replaced" if mode == "replace" else "saved"
        return ToolResult(f"{verb} in {scope} memory, topic {topic!r} ({path})",
                          metadata={"path": str(path)})


class LoadSkillTool(BuiltinTool):
    name = "load_skill"
    description = (
        "Load a skill's full instructions by name. The prompt lists only each skill's name and "
        "description; load one when the task matches it, before starting the work."
    )
    parameters = {
        "type": "object",
        "properties": {"name": {"type": "string", "description": "The skill's name."}},
        "required": ["name"],
    }

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        name = req_str(args, "name")
        root = _root(ctx)
        skill = await trio.to_thread.run_sync(find_skill, root, name)
        if skill is None:
            names = ", ".join(s.name for s in discover_skills(root)) or "none"
            return error(f"no skill named {name!r} (skills: {names})")
        try:
            body = await trio.to_thread.run_sync(skill.body)
        except OSError as exc:  # PromptFileRefused: a skill file swapped for a symlink
            return error(f"skill {skill.name!r} cannot be loaded: {exc}")
        return ToolResult(body, metadata={"path": str(skill.path)})


class ListSkillsTool(BuiltinTool):
    name = "list_skills"
    deferred = True  # the skill index in the prompt covers most projects
    description = (
        "List the project's skills with their descriptions, all of them or those whose name or "
        "description contains 'query'. The prompt's skill index is cut to a budget; this shows "
        "the ones it left out."
    )
    parameters = {
        "type": "object",
        "properties": {"query": {"type": "string", "description": "Words to filter by."}},
    }

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        query = (opt_str(args, "query") or "").strip().lower()
        skills = await trio.to_thread.run_sync(discover_skills, _root(ctx))
        lines = [f"- {s.name}: {s.description}" for s in skills
                 if all(w in f"{s.name} {s.description}".lower() for w in query.split())]
        if not lines:
            return ToolResult(f"no skill matches {query!r}" if query else "no skills")
        return ToolResult(f"{len(lines)} skills (load one with load_skill):\n" + "\n".join(lines))


def _todos(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ArgError("'todos' must be an array of {id, content, status}")
    out = []
    for i, item in enumerate(value, start=1):
        if not isinstance(item, dict) or not str(item.get("id", "")).strip():
            raise ArgError(f"todos[{i}] must be an object with an 'id'")
        status = item.get("status")
        if status is not None and status not in plans.TODO_STATUSES:
            raise ArgError(f"todos[{i}]: status must be one of "
                           f"{', '.join(plans.TODO_STATUSES)}, got {status!r}")
        content = item.get("content")
        if content is not None and not isinstance(content, str):
            raise ArgError(f"todos[{i}]: 'content' must be a string")
        out.append({"id": str(item["id"]), "content": content, "status": status})
    return out


class CreatePlanTool(BuiltinTool):
    name = "create_plan"
    description = (
        "Write the session's plan to .nyzhi/plans/<session>.plan.md: a name, an overview, the "
        "plan as markdown, and todos. Calling it again replaces the plan and merges todos by id."
    )
    parameters = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "A short title."},
            "overview": {"type": "string", "description": "One or two sentences."},
            "plan": {"type": "string", "description": "The plan, as markdown."},
            "todos": {
                "type": "array",
                "description": "Steps to track; merged by id with the plan's earlier todos.",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": "Stable id, e.g. '1'."},
                        "content": {"type": "string", "description": "What to do."},
                        "status": {"type": "string", "enum": list(plans.TODO_STATUSES),
                                   "description": "Default pending."},
                    },
                    "required": ["id", "content"],
                },
            },
        },
        "required": ["name", "plan"],
    }

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        name, body = req_str(args, "name"), req_str(args, "plan")
        overview = opt_str(args, "overview") or ""
        todos = _todos(args.get("todos"))
        if not ctx.session_id:
            return error("create_plan needs a session id (none in this context)")
        path = plans.plan_path(_root(ctx), ctx.session_id)

        def write() -> list[dict[str, Any]]:
            old, _body = plans.read_plan(path, _root(ctx))
            merged = plans.merge_todos(old.get("todos", []), todos)
            text = plans.render_plan(name, overview, body, merged)
            write_nofollow(path, text.encode("utf-8"))
            return merged

        try:
            merged = await trio.to_thread.run_sync(write)
        except PromptFileRefused as exc:
            return error(str(exc))
        return ToolResult(f"plan written to {path} ({len(merged)} todos)",
                          metadata={"path": str(path), "todos": merged})


class NotepadWriteTool(BuiltinTool):
    name = "notepad_write"
    deferred = True  # a long task's side notes: listed in one line until tool_search loads it
    description = (
        "Add an entry to a plan's notepad in .nyzhi/notepads/<plan>/. Record what you "
        "learned, decided or found wrong, for later sessions and other agents."
    )
    parameters = {
        "type": "object",
        "properties": {
            "plan": {"type": "string", "description": "The notepad (usually the plan's name)."},
            "category": {"type": "string", "enum": list(plans.NOTEPAD_CATEGORIES),
                         "description": "Which of the notepad's files to add to."},
            "content": {"type": "string", "description": "The entry (markdown)."},
        },
        "required": ["plan", "category", "content"],
    }

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        plan, category = req_str(args, "plan"), req_str(args, "category")
        content = req_str(args, "content").strip()
        try:
            path = plans.notepad_path(_root(ctx), plan, category)
        except ValueError as exc:
            return error(str(exc))
        stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")

        def append() -> None:
            old = plans.read_notepad(_root(ctx), path) or f"# {category}\n"
            write_nofollow(path, f"{old.rstrip()}\n\n## [{stamp}]\n{content}\n".encode())

        try:
            await trio.to_thread.run_sync(append)
        except PromptFileRefused as exc:
            return error(str(exc))
        return ToolResult(f"added to {path}", metadata={"path": str(path)})


class NotepadReadTool(BuiltinTool):
    name = "notepad_read"
    deferred = True
    description = (
        "Read a plan's notepad (learnings, decisions, issues), or list the notepads. Read it "
        "before resuming work on a plan to reuse what earlier sessions learned."
    )
    parameters = {
        "type": "object",
        "properties": {"plan": {"type": "string", "description": "Omit to list notepads."}},
    }

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        plan = opt_str(args, "plan")
        root = _root(ctx)
        if plan is None:
            names = plans.list_notepads(root)
            return ToolResult("notepads: " + (", ".join(names) if names else "none yet"))

        def read() -> str:
            parts = []
            for category in plans.NOTEPAD_CATEGORIES:
                path = plans.notepad_path(root, plan, category)
                text = plans.read_notepad(root, path).strip()
                if text:
                    parts.append(text)
            return "\n\n".join(parts)

        try:
            text = await trio.to_thread.run_sync(read)
        except (ValueError, PromptFileRefused) as exc:
            return error(str(exc))
        if not text:
            names = ", ".join(plans.list_notepads(root)) or "none yet"
            return error(f"no notepad {plan!r} (notepads: {names})")
        return ToolResult(text)


TOOLS = (MemoryReadTool, MemoryWriteTool, LoadSkillTool, ListSkillsTool, CreatePlanTool, NotepadWriteTool,
         NotepadReadTool)
