"""Reading a Claude Code hook's answer as Claude Code does (its hooks reference).

Exit 2 means, by event: PreToolUse, the call is refused and stderr is the reason the model
reads; PostToolUse / PostToolUseFailure, stderr is fed to the model (the tool already ran);
UserPromptSubmit, the prompt is refused; Stop, the agent does not stop and goes on with
stderr as its next instruction; PermissionRequest, the call is denied. On the other events
stderr is only shown to the person.

Exit 0 with a JSON object on stdout: ``continue: false`` ends the turn (``stopReason`` for the
person, it wins over any decision); ``decision: "block"`` with ``reason`` (refuse the prompt;
feed the reason to the model after a tool; keep a Stop going; PreToolUse's older spelling of
deny, as ``"approve"`` is of allow); ``hookSpecificOutput`` with ``permissionDecision``
(``allow``, ``deny``, ``ask``) and ``permissionDecisionReason``, ``updatedInput`` (PreToolUse;
PermissionRequest's ``decision.updatedInput``), ``additionalContext`` (context for the model on
UserPromptSubmit and SessionStart, after the result on PostToolUse); ``suppressOutput``;
``systemMessage`` (a warning for the person). Plain stdout of UserPromptSubmit and
SessionStart is context, as in Claude Code. Any other exit: a warning, never a block.
"""

from __future__ import annotations

import json
from typing import Any

from nyzhi.core.runtime.hooks.verdict import Verdict

_CONTEXT = frozenset({"UserPromptSubmit", "SessionStart"})
_AFTER_TOOL = frozenset({"PostToolUse", "PostToolUseFailure"})


def claude_verdict(claude_event: str, exit_code: int, stdout: str, stderr: str,
                   label: str) -> Verdict:
    """The verdict of a Claude hook that exited 0 or 2 (other exits are the runner's)."""
    if exit_code == 2:
        reason = stderr.strip() or f"blocked by {label}"
        if claude_event in ("PreToolUse", "UserPromptSubmit", "Stop", "PermissionRequest"):
            return Verdict(blocked=True, message=reason)
        if claude_event in _AFTER_TOOL:
            return Verdict(feedback=reason)
        return Verdict(warnings=(f"{label}: {reason}",))
    text = stdout.strip()
    data = _json_object(text)
    if data is None:
        return Verdict(context=text if text and claude_event in _CONTEXT else "")
    specific = data.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    warnings = (str(data["systemMessage"]),) if data.get("systemMessage") else ()
    suppress = data.get("suppressOutput") is True
    if data.get("continue") is False:
        reason = str(data.get("stopReason") or f"stopped by {label}")
        return Verdict(blocked=claude_event in ("PreToolUse", "UserPromptSubmit"),
                       message=reason, stop=True, stop_reason=reason, suppress=suppress,
                       warnings=warnings)
    decision = str(data.get("decision") or "").lower()
    reason = str(data.get("reason") or "")
    context = str(specific.get("additionalContext") or "")
    common = {"suppress": suppress, "warnings": warnings}
    if claude_event == "PreToolUse":
        permission = str(specific.get("permissionDecision") or "").lower()
        if not permission and decision in ("approve", "block"):  # the older spelling
            permission = "allow" if decision == "approve" else "deny"
        why = str(specific.get("permissionDecisionReason") or reason)
        updated = specific.get("updatedInput")
        updated = updated if isinstance(updated, dict) else None
        if permission == "deny":
            return Verdict(blocked=True, message=why or f"denied by {label}", **common)
        return Verdict(approved=permission == "allow", ask=permission == "ask",
                       message=why if permission == "ask" else "", updated_input=updated,
                       **common)
    if claude_event == "PermissionRequest":
        nested = specific.get("decision") if isinstance(specific.get("decision"), dict) else {}
        behavior = str(nested.get("behavior") or "").lower()
        updated = nested.get("updatedInput")
        return Verdict(blocked=behavior == "deny", approved=behavior == "allow",
                       message=str(nested.get("message") or ""),
                       updated_input=updated if isinstance(updated, dict) else None, **common)
    if claude_event in _AFTER_TOOL:
        feedback = "\n".join(t for t in (reason if decision == "block" else "", context) if t)
        return Verdict(feedback=feedback, **common)
    if claude_event in ("Stop", "SubagentStop") and decision == "block":
        return Verdict(blocked=True, message=reason or f"{label} asked to go on", **common)
    if claude_event == "UserPromptSubmit" and decision == "block":
        return Verdict(blocked=True, message=reason or f"blocked by {label}", **common)
    return Verdict(context=context if claude_event in _CONTEXT else "", **common)


def _json_object(text: str) -> dict[str, Any] | None:
    if not text.startswith("{"):
        return None
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None
