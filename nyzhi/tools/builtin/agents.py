"""The five subagent lifecycle tools (spawn_agent, send_input, wait, close_agent, resume_agent)
and list_roles, the roles spawn_agent's description had no room for.

Names and parameters are the original's. The tools only check arguments and call the runtime's
agent manager (``ctx.agents``, a ``nyzhi.core.runtime.subagents.SubagentManager``; tools sit below
core, so they know it by the ``AgentControl`` protocol) with the calling agent's path; what
they return is JSON the model reads. A refusal (depth or thread limit, unknown id) is an
``AgentControlError`` whose text goes back as the tool's error.

None of them changes the world by itself (what a child does goes through its own gates), so
they need no approval.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from nyzhi.textcut import cut
from nyzhi.tools.base import AgentControlError, ToolContext, ToolResult
from nyzhi.tools.builtin.common import (
    ArgError,
    BuiltinTool,
    error,
    opt_bool,
    opt_int,
    opt_str,
    req_str,
)


class AgentControl(Protocol):
    async def spawn(self, caller: str, message: str, agent_type: str | None = None,
                    model: str | None = None) -> dict[str, Any]: ...

    async def send(self, ident: str, message: str, interrupt: bool = False) -> dict[str, Any]: ...

    async def wait(self, idents: list[str], timeout_ms: int | None = None) -> dict[str, Any]: ...

    async def close(self, ident: str) -> dict[str, Any]: ...

    async def resume(self, ident: str) -> dict[str, Any]: ...

    def list_roles(self, query: str = "") -> dict[str, Any]: ...


NO_MANAGER = "subagents are not available in this run (no agent manager)"


class _AgentTool(BuiltinTool):
    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        manager = getattr(ctx, "agents", None)
        if manager is None:
            return error(NO_MANAGER)
        try:
            data = await self.call(manager, args, ctx)
        except AgentControlError as exc:
            return error(str(exc))
        return ToolResult(json.dumps(data, ensure_ascii=False), metadata={"agents": data})

    async def call(self, manager: AgentControl, args: dict[str, Any],
                   ctx: ToolContext) -> dict[str, Any]:
        raise NotImplementedError


class SpawnAgentTool(_AgentTool):
    name = "spawn_agent"
    # The runtime appends the list of roles (``RoleCatalog.render_list``).
    base_description = (
        "Start a subagent under you, with its own context, on the task in 'message' (write it "
        "so it stands alone: the goal, what you know, what to report back). It runs in the "
        "background; this returns at once with its agent_id. Collect its report with wait; "
        "steer it with send_input; stop it with close_agent. 'agent_type' picks a role "
        "(default: default); 'model' asks for another model."
    )
    description = base_description
    parameters = {
        "type": "object",
        "properties": {
            "message": {"type": "string", "description": "The subagent's task."},
            "agent_type": {"type": "string",
                           "description": "The role's name or file name (see the list)."},
            "model": {"type": "string", "description": "A model for this subagent."},
        },
        "required": ["message"],
    }

    async def call(self, manager: AgentControl, args: dict[str, Any],
                   ctx: ToolContext) -> dict[str, Any]:
        return await manager.spawn(ctx.agent_path, req_str(args, "message"),
                                   opt_str(args, "agent_type"), opt_str(args, "model"))


class SendInputTool(_AgentTool):
    name = "send_input"
    description = (
        "Send a message to a subagent. If it is running, the message is its next input; with "
        "interrupt=true its current turn is cancelled first (its thread is kept). If it has "
        "finished, the message starts a new turn."
    )
    parameters = {
        "type": "object",
        "properties": {
            "id": {"type": "string", "description": "The agent_id (or nickname)."},
            "message": {"type": "string", "description": "The input, standing alone."},
            "interrupt": {"type": "boolean", "description": "Cancel its current turn first."},
        },
        "required": ["id", "message"],
    }

    async def call(self, manager: AgentControl, args: dict[str, Any],
                   ctx: ToolContext) -> dict[str, Any]:
        return await manager.send(req_str(args, "id"), req_str(args, "message"),
                                  opt_bool(args, "interrupt", False))


class WaitTool(_AgentTool):
    name = "wait"
    description = (
        "Wait until the first of the given subagents is finished (at once if one already is) "
        "or the timeout passes (timeout_ms, default 30000, clamped to 10000-300000). Returns "
        "each id's status (pending_init, running, completed, errored, shutdown, idle or "
        "not_found) with its final message or reason, and timed_out."
    )
    parameters = {
        "type": "object",
        "properties": {
            "ids": {"type": "array", "items": {"type": "string", "description": "An agent_id."},
                    "minItems": 1, "description": "The agents to wait for."},
            "timeout_ms": {"type": "integer",
                           "description": "Default 30000, clamped to 10000-300000."},
        },
        "required": ["ids"],
    }

    async def call(self, manager: AgentControl, args: dict[str, Any],
                   ctx: ToolContext) -> dict[str, Any]:
        ids = args.get("ids")
        if isinstance(ids, str):
            ids = [ids]
        if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
            raise ArgError("'ids' must be a non-empty array of agent ids")
        return await manager.wait(ids, opt_int(args, "timeout_ms", 30_000))


class CloseAgentTool(_AgentTool):
    name = "close_agent"
    description = (
        "Stop a subagent and everything under it (its subagents and running commands). Its "
        "thread is kept: resume_agent reopens it."
    )
    parameters = {
        "type": "object",
        "properties": {"id": {"type": "string", "description": "The agent_id to stop."}},
        "required": ["id"],
    }

    async def call(self, manager: AgentControl, args: dict[str, Any],
                   ctx: ToolContext) -> dict[str, Any]:
        return await manager.close(req_str(args, "id"))


class ResumeAgentTool(_AgentTool):
    name = "resume_agent"
    deferred = True  # only for a closed child: listed in one line until loaded
    description = (
        "Reopen a closed, interrupted or finished subagent with its thread intact. Then give "
        "it work with send_input."
    )
    parameters = {
        "type": "object",
        "properties": {"id": {"type": "string", "description": "The agent_id to reopen."}},
        "required": ["id"],
    }

    async def call(self, manager: AgentControl, args: dict[str, Any],
                   ctx: ToolContext) -> dict[str, Any]:
        return await manager.resume(req_str(args, "id"))


class ListRolesTool(_AgentTool):
    name = "list_roles"
    deferred = True  # spawn_agent's description lists the roles that fit its budget
    description = (
        "List the subagent roles spawn_agent accepts, with descriptions: all of them or those "
        "whose name or description contains 'query'. spawn_agent's own list is cut to a "
        "budget; this shows the ones it left out."
    )
    parameters = {
        "type": "object",
        "properties": {"query": {"type": "string", "description": "Words to filter by."}},
    }

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        manager = getattr(ctx, "agents", None)
        if manager is None:
            return error(NO_MANAGER)
        query = opt_str(args, "query") or ""
        data = manager.list_roles(query)
        lines = []
        for role in data["roles"]:
            also = f" (file {role['file_name']}.md)" if role.get("file_name") else ""
            traits = f"{role['max_steps']} steps" + (", read only" if role.get("read_only")
                                                      else "")
            text = cut(str(role["description"]), 300, rstrip=True)
            lines.append(f"- {role['name']}{also}: {text or '(no description)'} ({traits})")
        if not lines:
            return ToolResult(f"no role matches {query!r}")
        return ToolResult(f"{len(lines)} roles (pass the name as spawn_agent's agent_type):\n"
                          + "\n".join(lines),
                          metadata={"roles": [r["name"] for r in data["roles"]]})


TOOLS = (SpawnAgentTool, SendInputTool, WaitTool, CloseAgentTool, ResumeAgentTool,
         ListRolesTool)
