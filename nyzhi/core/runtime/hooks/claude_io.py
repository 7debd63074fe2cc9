"""What a Claude Code hook reads on stdin, in Claude Code's shape.

Hooks from ``.claude/settings*.json`` and from plugins were written against Claude Code's
hooks reference, so they get its payload, not nyz's: the common fields (``session_id``,
``transcript_path``, ``cwd``, ``permission_mode``, ``hook_event_name``) and each event's own,
with Claude Code's tool names (``Bash``, ``Read``, ``mcp__server__tool``) and parameter names
(``file_path``, ``old_string``) and absolute paths, through the one table
``nyzhi.tools.claude_names``. A script that checks ``tool_name == "Bash"`` must see ``Bash``:
with nyz's ``bash`` it allows everything.

``tool_response`` is an object as Claude Code's is: ``Bash`` gets ``stdout``, ``stderr``,
``interrupted`` and ``isImage``; file tools ``filePath`` and ``success``; ``Read`` its
``file`` (``filePath``, ``content``); every tool ``output`` (the text the model got) and
``success``. Claude Code's own results carry more (structured patches, line counts) that nyz
does not have; the fields given are the ones its hooks reference documents.

Our own ``[[agent.hooks]]`` keep nyz's payload (``nyzhi.core.runtime.hooks.runner``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nyzhi.config.modes import TrustMode
from nyzhi.tools.claude_names import claude_tool_inputs, claude_tool_name

# nyz's trust mode -> Claude Code's permission_mode (plan mode wins over either).
PERMISSION_MODES = {TrustMode.OFF: "default", TrustMode.LIMITED: "default",
                    TrustMode.AUTOEDIT: "acceptEdits", TrustMode.FULL: "bypassPermissions"}
_TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure",
                          "PermissionRequest"})
_FILE_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})


def claude_bodies(claude_event: str, payload: Mapping[str, Any], common: Mapping[str, Any]
                  ) -> list[dict[str, Any]]:
    """The stdin objects for one Claude hook (one per file for a multi-file edit), built from
    nyz's event ``payload`` and the runner's ``common`` fields."""
    base: dict[str, Any] = {
        "session_id": payload.get("session_id") or common.get("session_id") or "",
        "transcript_path": common.get("transcript_path") or "",
        "cwd": common.get("cwd") or "",
        "permission_mode": common.get("permission_mode") or "default",
        "hook_event_name": claude_event,
    }
    if claude_event not in _TOOL_EVENTS:
        return [{**base, **_event_fields(claude_event, payload)}]
    tool = str(payload.get("tool_name") or "")
    name = claude_tool_name(tool)
    args = payload.get("tool_args", payload.get("tool_input"))
    inputs = claude_tool_inputs(tool, dict(args) if isinstance(args, Mapping) else {},
                                base["cwd"])
    bodies = []
    for tool_input in inputs:
        body = {**base, "tool_name": name, "tool_input": tool_input,
                "tool_use_id": str(payload.get("call_id") or "")}
        if claude_event == "PostToolUse":
            body["tool_response"] = tool_response(name, tool_input, payload)
        elif claude_event == "PostToolUseFailure":
            body["error"] = str(payload.get("error") or payload.get("output") or "")
            body["is_interrupt"] = bool(payload.get("is_interrupt"))
        elif claude_event == "PermissionRequest":
            body["permission_suggestions"] = list(payload.get("permission_suggestions") or [])
        bodies.append(body)
    return bodies


def tool_response(name: str, tool_input: Mapping[str, Any], payload: Mapping[str, Any]
                  ) -> dict[str, Any]:
    """A tool's result as Claude Code's ``tool_response`` object (see the module)."""
    output = str(payload.get("output") or "")
    success = bool(payload.get("success", True))
    response: dict[str, Any] = {"success": success, "output": output}
    if name == "Bash":
        response.update(stdout=output, stderr="", interrupted=False, isImage=False)
    elif name in _FILE_TOOLS:
        response["filePath"] = tool_input.get("file_path") or tool_input.get("notebook_path", "")
    elif name == "Read":
        response.update(type="text", file={"filePath": tool_input.get("file_path", ""),
                                           "content": output})
    return response


def _event_fields(claude_event: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    if claude_event == "UserPromptSubmit":
        return {"prompt": str(payload.get("prompt") or "")}
    if claude_event == "Stop":
        return {"stop_hook_active": bool(payload.get("stop_hook_active")),
                "last_assistant_message": str(payload.get("text") or "")}
    if claude_event in ("SubagentStop", "SubagentStart"):
        agent = str(payload.get("agent") or "")
        out: dict[str, Any] = {"agent_id": agent, "agent_type": agent.rsplit("/", 1)[-1]}
        if claude_event == "SubagentStop":
            out["stop_hook_active"] = bool(payload.get("stop_hook_active"))
            out["agent_transcript_path"] = str(payload.get("agent_transcript_path") or "")
        return out
    if claude_event == "SessionStart":
        return {"source": str(payload.get("source") or "startup"),
                "model": str(payload.get("model") or "")}
    if claude_event == "SessionEnd":
        return {"reason": str(payload.get("reason") or "other")}
    if claude_event == "PreCompact":
        return {"trigger": str(payload.get("trigger") or "auto"),
                "custom_instructions": str(payload.get("custom_instructions") or "")}
    if claude_event == "Notification":
        return {"message": str(payload.get("message") or ""),
                "title": str(payload.get("title") or ""),
                "notification_type": str(payload.get("notification_type") or "")}
    return {k: v for k, v in payload.items() if k not in ("agent",)}
