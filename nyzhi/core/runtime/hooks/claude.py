"""Claude Code hooks from ``<workspace>/.claude/settings.json`` (and ``settings.local.json``).

Event mapping (Claude → nyzhi):

====================  ==================  ==========================================
Claude Code           nyzhi               notes
====================  ==================  ==========================================
PreToolUse            pre_tool_use        matcher → tool pattern (Claude tool names
                                          such as ``Write`` also match ours)
PostToolUse           post_tool_use       matcher → tool pattern
UserPromptSubmit      user_prompt_submit
SessionStart          session_start       matcher (startup/resume/...) ignored
SessionEnd            session_end
Stop                  after_turn          fired inside the main agent's turn; a
                                          block keeps it going (agent_factory)
SubagentStart         subagent_start
SubagentStop          subagent_stop
PostToolUseFailure    post_tool_use_failure  matcher → tool pattern
PermissionRequest     permission_request  matcher → tool pattern; may allow or deny
Notification          notification        matcher → the kind (``permission_prompt``,
                                          ``idle_prompt``, ...)
PreCompact            compact_context     matcher → the trigger (``manual``, ``auto``)
====================  ==================  ==========================================

Skipped with a note: any other event, and hooks whose ``type`` is not ``"command"`` (prompt hooks need a model).
Their payloads and answers are Claude Code's own (``claude_io``, ``claude_out``): its tool and
parameter names, absolute paths, ``tool_response`` as an object.
A missing file is fine; an unreadable or malformed one is reported as a note, never fatal:
it is another tool's config.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nyzhi.core.runtime.hooks.spec import HookConfigError, HookSpec

CLAUDE_EVENTS = {
    "PreToolUse": "pre_tool_use",
    "PostToolUse": "post_tool_use",
    "UserPromptSubmit": "user_prompt_submit",
    "SessionStart": "session_start",
    "SessionEnd": "session_end",
    "Stop": "after_turn",
    "SubagentStart": "subagent_start",
    "SubagentStop": "subagent_stop",
    "PostToolUseFailure": "post_tool_use_failure",
    "PermissionRequest": "permission_request",
    "Notification": "notification",
    "PreCompact": "compact_context",
}
CLAUDE_DEFAULT_TIMEOUT = 60.0
# Events whose matcher filters something (spec.SUBJECT_KEYS); others' matchers are ignored.
_MATCHED = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest",
                      "Notification", "PreCompact"})


def load_claude_hooks(workspace_root: str | Path) -> tuple[list[HookSpec], list[str]]:
    """(specs, notes) from the workspace's Claude Code settings files, in file order."""
    from nyzhi.config.claude_settings import read_settings

    return _hooks_of(*read_settings(workspace_root))


def load_user_claude_hooks(workspace_root: str | Path | None = None,
                           env: Mapping[str, str] | None = None
                           ) -> tuple[list[HookSpec], list[str]]:
    """(specs, notes) from the user's own Claude Code settings (``~/.claude/settings.json``):
    the user wrote them, as they wrote nyz's own config, so no project approval gates them.
    None when that file is the workspace's own ``.claude/settings.json`` (nyz run in the home
    folder): it is read, gated, as the project's."""
    from nyzhi.config.claude_settings import read_user_settings, user_settings_path

    path = user_settings_path(env)
    if workspace_root is not None and os.path.realpath(path) == os.path.realpath(
            Path(workspace_root) / ".claude" / "settings.json"):
        return [], []
    return _hooks_of(*read_user_settings(env))


def _hooks_of(files: list[Any], notes: list[str]) -> tuple[list[HookSpec], list[str]]:
    specs: list[HookSpec] = []
    for settings in files:
        path, data = settings.path, settings.data
        hooks = data.get("hooks") if isinstance(data, dict) else None
        if hooks is None:
            continue
        if not isinstance(hooks, dict):
            notes.append(f"{path}: \"hooks\" should be an object; ignored")
            continue
        got, more = claude_hooks_from_settings(hooks, source=str(path))
        specs += got
        notes += more
    return specs, notes


def claude_hooks_from_settings(hooks: dict[str, Any], *, source: str) -> tuple[list[HookSpec], list[str]]:
    specs: list[HookSpec] = []
    notes: list[str] = []
    for claude_event, groups in hooks.items():
        ours = CLAUDE_EVENTS.get(claude_event)
        if ours is None:
            notes.append(f"{source}: {claude_event} hooks have no nyzhi equivalent; skipped")
            continue
        if not isinstance(groups, list):
            notes.append(f"{source}: hooks.{claude_event} should be a list; skipped")
            continue
        for gi, group in enumerate(groups):
            at = f"{source}: hooks.{claude_event}[{gi}]"
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                notes.append(f"{at}: expected {{\"matcher\", \"hooks\": [...]}}; skipped")
                continue
            matcher = group.get("matcher") or None
            if matcher is not None and not isinstance(matcher, str):
                notes.append(f"{at}.matcher: expected a string; skipped")
                continue
            if claude_event not in _MATCHED:
                matcher = None
            for hi, hook in enumerate(group["hooks"]):
                where = f"{at}.hooks[{hi}]"
                if not isinstance(hook, dict) or hook.get("type", "command") != "command":
                    kind = hook.get("type") if isinstance(hook, dict) else hook
                    notes.append(f"{where}: {kind!r} hooks are not supported; skipped")
                    continue
                command = hook.get("command")
                timeout = hook.get("timeout", CLAUDE_DEFAULT_TIMEOUT)
                if not isinstance(command, str) or not command.strip():
                    notes.append(f"{where}: no command; skipped")
                    continue
                if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
                    notes.append(f"{where}.timeout: expected positive seconds; using 60")
                    timeout = CLAUDE_DEFAULT_TIMEOUT
                try:
                    specs.append(HookSpec(
                        ours, command, tool_pattern=matcher, timeout=float(timeout),
                        source=source, claude_event=claude_event,
                    ))
                except HookConfigError as exc:
                    notes.append(f"{where}: {exc}; skipped")
    return specs, notes
