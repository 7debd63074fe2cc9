"""What a hook is: its event, its command, and when it applies.

Hooks come from ``[[agent.hooks]]`` in nyzhi's config (``hooks_from_config``) and from Claude
Code's ``.claude/settings.json`` (``nyzhi.core.runtime.hooks.claude``). Both become ``HookSpec``s, so
the runner has one model.

Matching:

* ``tool_pattern`` is a regular expression that must match the whole tool name (Claude's
  matcher syntax: ``"write|edit"``, ``"mcp__.*"``). Empty or ``"*"`` matches every tool. It
  filters tool events (pre_tool_use, post_tool_use, post_tool_use_failure,
  permission_request, after_edit) by the tool's name, compact_context by its trigger
  (``manual``/``auto``) and notification by its kind (``SUBJECT_KEYS``); a hook with a
  pattern on another event still fires.
* ``path_patterns``: a hook with patterns only fires when the event concerns a file (tool
  arguments ``path``/``file_path``/``paths``, or ``file_path`` in the payload) and one of
  them matches. A pattern with glob characters (``*?[``) is matched against the path as
  given, relative to the working directory, and its basename (so ``*.py`` matches any Python
  file); a pattern without them matches as a substring (``src/``), as nyzhi's ``pattern``
  always did.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from nyzhi import records
from nyzhi.config.schema_agent import HOOK_EVENT_ALIASES, HOOK_EVENTS
from nyzhi.tools.claude_names import claude_names_for

# The payload field a hook's matcher filters on, per event: the tool's name for tool events
# (Claude Code's names match too), the trigger for compact_context ("manual" or "auto", as
# Claude's PreCompact matcher), the kind for notification (Claude's Notification matcher).
SUBJECT_KEYS = {
    "pre_tool_use": "tool_name", "post_tool_use": "tool_name", "after_edit": "tool_name",
    "post_tool_use_failure": "tool_name", "permission_request": "tool_name",
    "compact_context": "trigger", "notification": "notification_type",
}
TOOL_EVENTS = frozenset(e for e, key in SUBJECT_KEYS.items() if key == "tool_name")
EVENT_ALIASES = HOOK_EVENT_ALIASES
DEFAULT_TIMEOUT = 30.0

class HookConfigError(ValueError):
    """A hook entry is invalid; the message names the entry and the key."""


def _compile(pattern: str | None) -> re.Pattern[str] | None:
    if pattern in (None, "", "*"):
        return None
    return re.compile(pattern)


@records.frozen
class HookSpec:
    """One hook: run ``command`` (``sh -c``) on ``event`` when the matchers fit.

    ``block``: fail closed. A failure (non-zero exit, timeout) of a pre_tool_use or
    user_prompt_submit hook then blocks, not only exit code 2 or a "block" decision.
    ``source`` says where the hook came from (for messages); ``claude_event`` is the Claude
    Code event name for hooks read from ``.claude/settings.json`` (their payload carries it).
    """

    event: str = attrs.field()
    command: str
    tool_pattern: str | None = None
    path_patterns: tuple[str, ...] = attrs.field(default=(), converter=records.as_tuple)
    timeout: float = DEFAULT_TIMEOUT
    block: bool = False
    source: str = "config"
    claude_event: str | None = None
    env: dict[str, str] = attrs.field(factory=dict)  # this hook's own variables (its keys)
    _regex: re.Pattern[str] | None = attrs.field(init=False, repr=False, eq=False)

    @event.validator
    def _check_event(self, _attr: Any, value: str) -> None:
        if value not in HOOK_EVENTS:
            raise HookConfigError(
                f"unknown hook event {value!r}: expected one of {', '.join(HOOK_EVENTS)}"
            )

    def __attrs_post_init__(self) -> None:
        try:
            regex = _compile(self.tool_pattern)
        except re.error as exc:
            raise HookConfigError(f"bad tool pattern {self.tool_pattern!r}: {exc}") from exc
        object.__setattr__(self, "_regex", regex)
        if self.timeout <= 0:
            raise HookConfigError(f"hook timeout must be > 0 seconds, got {self.timeout}")

    def matches(self, subject: str | None, paths: Iterable[str], cwd: str = "") -> bool:
        """Whether the hook applies: ``subject`` is the payload's field the matcher filters on
        for this event (``SUBJECT_KEYS``: the tool's name, the compaction trigger, ...)."""
        if self._regex is not None and self.event in SUBJECT_KEYS:
            if not subject:
                return False
            names = {subject}
            if self.claude_event is not None and self.event in TOOL_EVENTS:
                names.update(claude_names_for(subject))  # nyzhi.tools.claude_names
            if not any(self._regex.fullmatch(n) for n in names):
                return False
        if self.path_patterns:
            paths = list(paths)
            return any(path_matches(p, path, cwd) for p in self.path_patterns for path in paths)
        return True


def path_matches(pattern: str, path: str, cwd: str = "") -> bool:
    if not any(c in pattern for c in "*?["):
        return pattern in path
    candidates = {path, os.path.basename(path)}
    if cwd and os.path.isabs(path):
        rel = os.path.relpath(path, cwd)
        if not rel.startswith(".."):
            candidates.add(rel)
    return any(fnmatch.fnmatchcase(c, pattern) for c in candidates)


_KEYS = {
    "event", "command", "hook_type", "type", "tool_name", "matcher", "tool_pattern", "tools",
    "pattern", "paths", "path_patterns", "timeout", "block", "env",
    # Only meaningful for the original's prompt/agent hooks, which are rejected below; kept
    # so a config written by nyzhi's own schema (all keys) is accepted.
    "prompt", "instructions", "model",
}


def _patterns(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(p.strip() for p in value.split(",") if p.strip())
    if isinstance(value, list | tuple) and all(isinstance(p, str) for p in value):
        return tuple(p.strip() for p in value if p.strip())
    raise HookConfigError(f"{where}: expected a string or a list of strings, got {value!r}")


def hooks_from_config(
    entries: Iterable[Mapping[str, Any]], *, where: str = "agent.hooks"
) -> list[HookSpec]:
    """Specs from ``[[agent.hooks]]`` tables.

    Keys: ``event`` (required), ``command`` (required), ``tool_name`` / ``matcher`` /
    ``tool_pattern`` (regex on the tool name) or ``tools`` (list of names), ``pattern`` (comma
    list, the original nyzhi key) / ``paths`` / ``path_patterns``, ``timeout`` (seconds,
    default 30), ``block`` (bool, fail closed), ``hook_type`` (only ``"command"``), ``env``
    (a table of variables for this hook only: how a hook gets a key the shell policy strips).

    Raises:
        HookConfigError: naming ``agent.hooks[i].key`` and what was expected.
    """
    return [_hook_spec(entry, f"{where}[{i}]") for i, entry in enumerate(entries)]


def _hook_spec(entry: Any, at: str) -> HookSpec:
    """One ``[[agent.hooks]]`` table (``at`` names it in errors) as a spec."""
    _check_entry(entry, at)
    event = entry.get("event")
    if not isinstance(event, str):
        raise HookConfigError(f"{at}.event: required, one of {', '.join(HOOK_EVENTS)}")
    event = EVENT_ALIASES.get(event, event)
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip():
        raise HookConfigError(f"{at}.command: required, a shell command string")
    tool_pattern = _tool_pattern(entry, at)
    paths: tuple[str, ...] = ()
    for key in ("path_patterns", "paths", "pattern"):
        if key in entry:
            paths = _patterns(entry[key], f"{at}.{key}")
            break
    timeout = entry.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise HookConfigError(f"{at}.timeout: expected a positive number of seconds")
    block = entry.get("block", False)
    if not isinstance(block, bool):
        raise HookConfigError(f"{at}.block: expected true or false")
    env = entry.get("env", {})
    if not isinstance(env, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in env.items()
    ):
        raise HookConfigError(f"{at}.env: expected a table of string values")
    try:
        return HookSpec(event, command, tool_pattern, paths, float(timeout), block,
                        env=dict(env))
    except HookConfigError as exc:
        raise HookConfigError(f"{at}: {exc}") from None


def _check_entry(entry: Any, at: str) -> None:
    """A hook entry is a table of known keys, of a kind that runs (commands only)."""
    if not isinstance(entry, Mapping):
        raise HookConfigError(f"{at}: expected a table, got {type(entry).__name__}")
    unknown = sorted(set(entry) - _KEYS)
    if unknown:
        raise HookConfigError(
            f"{at}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(_KEYS))}"
        )
    kind = entry.get("hook_type", entry.get("type", "command"))
    if kind != "command":
        raise HookConfigError(
            f"{at}.hook_type: {kind!r} hooks are not supported; only \"command\" hooks run"
        )


def _tool_pattern(entry: Mapping[str, Any], at: str) -> str | None:
    """The regex on tool names: the first of ``tool_pattern``, ``matcher`` and ``tool_name``,
    or ``tools`` (a list of names, which wins)."""
    tool_pattern = None
    for key in ("tool_pattern", "matcher", "tool_name"):
        if key in entry:
            if not isinstance(entry[key], str):
                raise HookConfigError(f"{at}.{key}: expected a string")
            tool_pattern = entry[key]
            break
    if "tools" in entry:
        names = _patterns(entry["tools"], f"{at}.tools")
        tool_pattern = "|".join(re.escape(n) for n in names) or None
    return tool_pattern
