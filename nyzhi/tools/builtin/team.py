"""The nine team tools: team_create, team_delete, team_list, send_team_message, read_inbox,
task_create, task_update, task_list, spawn_teammate.

Names and parameters are the original's, except that ``team`` is optional everywhere: it
defaults to the calling agent's team (``ctx.team_name``), and the caller is ``ctx.team_member``
(``lead`` when unset). The files are ``nyzhi.team_files``' (blocking, so run in the tool I/O
threads); the runtime's team control (``ctx.teams``, known here only by the ``TeamControl``
protocol, as ``agents.py`` knows the subagent manager) hears about every change so it can bind
the caller, wake in-process members, emit events and fire hooks. Without a runtime every tool
but ``spawn_teammate`` still works on the files alone.

Only ``team_delete`` needs approval (it deletes a team's files); the others change nothing but
the team's own messages and board, like the subagent tools.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from nyzhi import convert
from nyzhi.team_files.errors import TeamError
from nyzhi.team_files.framing import READING
from nyzhi.team_files.names import LEAD, check_name
from nyzhi.team_files.status import TaskStatus
from nyzhi.tools.base import Permission, ToolContext, ToolResult
from nyzhi.tools.builtin.agents import AgentControlError
from nyzhi.tools.builtin.common import ArgError, BuiltinTool, error, opt_str, req_str
from nyzhi.tools.offload import run_blocking

if TYPE_CHECKING:  # the store's classes are built when a team tool first runs
    from nyzhi.team_files.board import TaskChange
    from nyzhi.team_files.inbox import Message
    from nyzhi.team_files.store import TeamConfig, TeamStore

T = TypeVar("T")

NO_RUNTIME = "teammates need the team runtime (nyz team start, or nyz)"
# The tools a teammate uses all the time: always in the prompt, the other five load on demand.
TEAMMATE_TOOLS = ("send_team_message", "read_inbox", "task_list", "task_update")


class TeamControl(Protocol):
    """The runtime's side of the team tools. Each call comes after the files changed (but
    ``team_deleted``: before, so the teammates stop before their files go). A control may
    also carry a ``store`` attribute (a ``TeamStore``) that the tools then use."""

    async def team_created(self, config: TeamConfig, caller_path: str) -> None: ...

    async def team_deleted(self, name: str) -> None: ...

    async def messages_sent(self, team: str, messages: list[Message]) -> None: ...

    async def task_changed(self, team: str, change: TaskChange) -> None: ...

    async def spawn_teammate(self, team: str, name: str, message: str, role: str | None,
                             model: str | None, caller_path: str) -> dict[str, Any]: ...


def task_line(task: Any) -> str:
    """One line per task, whatever its files hold: the subject's line boundaries become
    spaces, and an owner or task id outside its vocabulary shows as ``?`` (the board refuses
    them where they enter, ``nyzhi.team_files.board``; a file edited by hand is not checked)."""
    from nyzhi.team_files.board import check_task_id
    from nyzhi.team_files.names import NAME_RE

    def task_id(value: Any) -> str:
        try:
            return check_task_id(value)
        except TeamError:
            return "?"

    subject = " ".join(str(task.subject).splitlines())
    line = f"#{task_id(task.id)} [{task.status}] {subject}"
    if task.owner:
        owner = task.owner if isinstance(task.owner, str) and NAME_RE.fullmatch(task.owner) \
            else "?"
        line += f" (owner {owner})"
    if task.blocked_by:
        line += f" blocked by {', '.join(task_id(t) for t in task.blocked_by)}"
    return line


def format_messages(messages: list[Message]) -> str:
    from nyzhi.team_files.framing import frame_messages

    return frame_messages(messages)


class _TeamTool(BuiltinTool):
    """A team tool: resolves the team and member, runs store work off the event loop and
    turns a refusal (``TeamError``, or the runtime's ``AgentControlError``) into an error
    result the model can act on."""

    deferred = True  # the prompt budget: only TEAMMATE_TOOLS are always shown
    # Not shown to an agent in no team (schemas, the deferred list): only team_create is,
    # which makes it a lead. All stay reachable through tool_search.
    in_team_only = True

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            return await super().run(args, ctx)
        except (TeamError, AgentControlError) as exc:
            return error(str(exc))

    @staticmethod
    def store(ctx: ToolContext) -> TeamStore:
        from nyzhi.team_files.store import TeamStore

        return getattr(ctx.teams, "store", None) or TeamStore()

    @staticmethod
    def team(args: dict[str, Any], ctx: ToolContext, key: str = "team") -> str:
        name = opt_str(args, key) or ctx.team_name
        if not name:
            raise ArgError(f"no team: pass '{key}' (team_list shows the teams) or create one "
                           "with team_create")
        return check_name("team", name)

    @staticmethod
    def member(ctx: ToolContext) -> str:
        return ctx.team_member or LEAD

    @staticmethod
    async def blocking(fn: Callable[..., T], *args: Any) -> T:
        return await run_blocking(fn, *args)


_TEAM_PARAM = {"type": "string", "description": "The team (default: yours)."}


class TeamCreateTool(_TeamTool):
    name = "team_create"
    in_team_only = False  # how an agent in no team becomes a lead
    description = (
        "Create a team you lead (you are member 'lead'), with named members and their roles. "
        "Then add work with task_create and start each member with spawn_teammate."
    )
    parameters = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The team's name (letters, digits, _.-)."},
            "members": {
                "type": "array",
                "description": "The teammates (you are added as 'lead').",
                "items": {"type": "object", "properties": {
                    "name": {"type": "string", "description": "The member's name."},
                    "role": {"type": "string", "description": "Its role (default: default)."},
                    "model": {"type": "string", "description": "Its model."}},
                    "required": ["name"]},
            },
        },
        "required": ["name"],
    }

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        name = check_name("team", req_str(args, "name"))
        raw = args.get("members") or []
        if not isinstance(raw, list) or not all(
                isinstance(m, dict) and isinstance(m.get("name"), str) for m in raw):
            raise ArgError("'members' must be an array like [{\"name\": \"alice\", "
                           "\"role\": \"worker\"}]")
        from nyzhi.team_files.store import Member, TeamConfig

        members = [Member(m["name"], role=opt_str(m, "role") or "default",
                          model=opt_str(m, "model")) for m in raw]
        config = TeamConfig(name, members=members, cwd=str(ctx.workspace_root))
        config = await self.blocking(self.store(ctx).create, config)
        if ctx.teams is not None:
            await ctx.teams.team_created(config, ctx.agent_path)
        who = ", ".join(f"{m.name} ({m.role})" for m in config.members if m.name != LEAD)
        return ToolResult(f"team '{name}' created; you are 'lead'; members: {who or 'none yet'}",
                          metadata={"team": convert.unstructure(config)})


class TeamDeleteTool(_TeamTool):
    name = "team_delete"
    description = ("Stop a team's teammates and delete the team, its inboxes and its task "
                   "board. This cannot be undone.")
    parameters = {"type": "object",
                  "properties": {"name": {"type": "string",
                                          "description": "The team (default: yours)."}}}
    permission = Permission.NEEDS_APPROVAL

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        name = self.team(args, ctx, "name")
        store = self.store(ctx)
        await self.blocking(store.load, name)  # a clear error before stopping anything
        if ctx.teams is not None:
            await ctx.teams.team_deleted(name)
        await self.blocking(store.delete, name)
        return ToolResult(f"team '{name}' deleted")


class TeamListTool(_TeamTool):
    name = "team_list"
    description = ("List the teams with their members and task counts. Pass a team's name as "
                   "'team' to the other team tools.")

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return ToolResult(await self.blocking(self._render, self.store(ctx)))

    @staticmethod
    def _render(store: TeamStore) -> str:
        lines = []
        for name in store.list():
            try:
                config = store.load(name)
                tasks = [t for t in store.board(name).list() if t.status != TaskStatus.DELETED]
            except TeamError as exc:  # one broken team does not hide the others
                lines.append(f"{name}: unreadable ({exc})")
                continue
            done = sum(t.status == TaskStatus.COMPLETED for t in tasks)
            lines.append(f"{name}: {', '.join(config.names())} ({config.teammate_mode}); "
                         f"tasks {done}/{len(tasks)} completed")
        return "\n".join(lines) or "no teams (team_create makes one)"


class SendTeamMessageTool(_TeamTool):
    name = "send_team_message"
    deferred = False  # a teammate's everyday tool (TEAMMATE_TOOLS)
    description = ("Send a message to a team member by name, or to 'all' (everyone but you). "
                   "It lands in their inbox and wakes them if idle.")
    parameters = {
        "type": "object",
        "properties": {
            "to": {"type": "string", "description": "A member's name, or 'all'."},
            "message": {"type": "string", "description": "The text, standing alone."},
            "team": _TEAM_PARAM,
        },
        "required": ["to", "message"],
    }

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        team = self.team(args, ctx)
        text = args.get("message") if args.get("message") is not None else args.get("text")
        if not isinstance(text, str) or not text.strip():
            raise ArgError("'message' is required: the text to send")
        to = req_str(args, "to")
        from nyzhi.team_files.inbox import deliver, recipients

        store, sender = self.store(ctx), self.member(ctx)
        reached = await self.blocking(recipients, store, team, sender, to)
        sent = await self.blocking(deliver, store, team, sender, to, text)
        if not sent:
            return error(f"team '{team}' has no other member to send to")
        if ctx.teams is not None:
            await ctx.teams.messages_sent(team, sent)
        who = to if to != "all" else f"all ({len(reached)} members)"
        return ToolResult(f"sent to {who}", metadata={"message_ids": [m.id for m in sent]})


class ReadInboxTool(_TeamTool):
    name = "read_inbox"
    deferred = False  # a teammate's everyday tool (TEAMMATE_TOOLS)
    description = ("Read your new team messages, oldest first, and mark them read. New "
                   "messages also reach you before your next step, so call it only to check. "
                   + READING)
    parameters = {"type": "object", "properties": {"team": _TEAM_PARAM}}

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        inbox = self.store(ctx).inbox(self.team(args, ctx), self.member(ctx))
        unread = await self.blocking(inbox.read_unread)
        return ToolResult(format_messages(unread) or "no new messages",
                          metadata={"count": len(unread)})


class TaskCreateTool(_TeamTool):
    name = "task_create"
    description = (
        "Add a task to the team's board. Tasks in blocked_by must complete first (it stays "
        "blocked until they do)."
    )
    parameters = {
        "type": "object",
        "properties": {
            "subject": {"type": "string", "description": "The task in a few words."},
            "description": {"type": "string", "description": "What done means."},
            "active_form": {"type": "string", "description": "Shown while in progress."},
            "blocked_by": {"type": "array", "items": {"type": "string"},
                           "description": "Task ids that must complete first."},
            "team": _TEAM_PARAM,
        },
        "required": ["subject"],
    }

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        team = self.team(args, ctx)
        deps = args.get("blocked_by") or []
        if isinstance(deps, (str, int)):
            deps = [deps]
        if not isinstance(deps, list):
            raise ArgError("'blocked_by' must be an array of task ids like [\"1\", \"2\"]")
        board = self.store(ctx).board(team)
        await self.blocking(self.store(ctx).load, team)  # no board without a team
        task = await self.blocking(board.create, req_str(args, "subject"),
                                   opt_str(args, "description") or "",
                                   [str(d) for d in deps], opt_str(args, "active_form"))
        if ctx.teams is not None:
            from nyzhi.team_files.board import TaskChange

            await ctx.teams.task_changed(team, TaskChange(task))
        return ToolResult(f"created {task_line(task)}", metadata={"task": convert.unstructure(task)})


class TaskUpdateTool(_TeamTool):
    name = "task_update"
    deferred = False  # a teammate's everyday tool (TEAMMATE_TOOLS)
    description = (
        "Change a task's status or owner. Setting in_progress claims it for you; completing "
        "it unblocks the tasks waiting on it."
    )
    parameters = {
        "type": "object",
        "properties": {
            "task_id": {"type": "string", "description": "The task's id."},
            "status": {"type": "string", "enum": list(TaskStatus), "description": "New status."},
            "owner": {"type": "string", "description": "Assign it ('' releases it)."},
            "team": _TEAM_PARAM,
        },
        "required": ["task_id"],
    }

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        team = self.team(args, ctx)
        task_id = args.get("task_id")
        if not isinstance(task_id, (str, int)) or isinstance(task_id, bool) or task_id == "":
            raise ArgError("'task_id' is required: the task's id, like \"3\"")
        status, owner = opt_str(args, "status"), args.get("owner")
        if owner is not None and not isinstance(owner, str):
            raise ArgError("'owner' must be a member's name")
        if status is None and owner is None:
            raise ArgError("pass 'status' or 'owner' (or both)")
        if owner:
            check_name("member", owner)
        await self.blocking(self.store(ctx).load, team)
        board = self.store(ctx).board(team)
        change = await self.blocking(
            lambda: board.update(str(task_id), status=status, owner=owner,
                                 by=self.member(ctx)))
        if ctx.teams is not None:
            await ctx.teams.task_changed(team, change)
        text = f"updated {task_line(change.task)}"
        if change.unblocked:
            text += "\nunblocked: " + "; ".join(task_line(t) for t in change.unblocked)
        return ToolResult(text, metadata={"task": convert.unstructure(change.task),
                                          "unblocked": [t.id for t in change.unblocked]})


class TaskListTool(_TeamTool):
    name = "task_list"
    deferred = False  # a teammate's everyday tool (TEAMMATE_TOOLS)
    description = ("List the team's tasks with status, owner and blockers. Pick a pending "
                   "task and claim it with task_update status in_progress.")
    parameters = {
        "type": "object",
        "properties": {
            "filter": {"type": "string", "enum": list(TaskStatus),
                       "description": "Only this status."},
            "team": _TEAM_PARAM,
        },
    }

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        team = self.team(args, ctx)
        wanted = opt_str(args, "filter")
        await self.blocking(self.store(ctx).load, team)
        tasks = await self.blocking(self.store(ctx).board(team).list, wanted)
        if wanted is None:
            tasks = [t for t in tasks if t.status != TaskStatus.DELETED]
        if not tasks:
            return ToolResult(f"no {wanted + ' ' if wanted else ''}tasks"
                              + ("" if wanted else " (task_create adds one)"))
        done = sum(t.status == TaskStatus.COMPLETED for t in tasks)
        lines = [task_line(t) for t in tasks]
        if wanted is None:
            lines.append(f"({done}/{len(tasks)} completed)")
        return ToolResult("\n".join(lines))


class SpawnTeammateTool(_TeamTool):
    name = "spawn_teammate"
    description = (
        "Start a teammate (added to the team if new) on the task in 'message'. It works "
        "alongside you and talks through send_team_message and the task board."
    )
    parameters = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The member's name."},
            "message": {"type": "string", "description": "Its first task, standing alone."},
            "role": {"type": "string", "description": "A role (default: the member's)."},
            "model": {"type": "string", "description": "A model for it."},
            "team": _TEAM_PARAM,
        },
        "required": ["name", "message"],
    }

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        if ctx.teams is None:
            return error(NO_RUNTIME)
        team = self.team(args, ctx)
        name = check_name("member", req_str(args, "name"))
        if name == LEAD:
            raise ArgError("'lead' is the team's lead; give the teammate another name")
        await self.blocking(self.store(ctx).load, team)
        data = await ctx.teams.spawn_teammate(team, name, req_str(args, "message"),
                                              opt_str(args, "role"), opt_str(args, "model"),
                                              ctx.agent_path)
        return ToolResult(json.dumps(data, ensure_ascii=False), metadata={"teammate": data})


TOOLS = (TeamCreateTool, TeamDeleteTool, TeamListTool, SendTeamMessageTool, ReadInboxTool,
         TaskCreateTool, TaskUpdateTool, TaskListTool, SpawnTeammateTool)
