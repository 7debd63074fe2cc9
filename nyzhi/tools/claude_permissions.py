"""Claude Code's permission rules (``.claude/settings.json``, ``settings.local.json``) as ours.

A project set up for Claude Code keeps its permission rules in ``permissions.allow``,
``permissions.deny`` and ``permissions.ask``: ``Bash``, ``Bash(npm run test:*)``,
``Read(./.env)``, ``Edit(src/**)``, ``WebFetch(domain:example.com)``, ``mcp__github``. They
become the ``[agent.trust]`` rules the gates already enforce (``nyzhi.tools.gates``), added to
the config's own:

==========================  ===================================================================
Claude Code rule            nyzhi
==========================  ===================================================================
deny ``Tool``               ``deny_tools`` (``Edit`` also denies ``multi_edit``, ``apply_patch``)
deny ``Bash(cmd)``          ``deny_commands``: ``cmd`` as a glob per simple command; the
                            prefix form ``cmd:*`` matches ``cmd`` and ``cmd …``
deny ``Read(path)`` and     ``deny_paths`` (they refuse every tool touching the path, and
the other file tools        commands naming it: stricter than Claude Code, which denies only
                            that tool). ``./p`` and ``/p`` are from the project root, ``//p``
                            absolute, ``~/p`` from home; a leading ``**/`` is dropped
allow ``Tool``              ``auto_approve`` (``mcp__server``: every tool of that server)
ask ``Tool``                ``always_ask``
==========================  ===================================================================

Everything else (an ``allow`` or ``ask`` rule with a specifier, ``WebFetch(domain:…)``,
``Bash`` rules in a form we cannot read) cannot be expressed by our gates: it is reported,
naming the file and the rule, once per content of that file (``nyzhi.config.notices_seen``).
Deny rules hold in every run, headless included, because the deny gate does not depend on
who approves.

``read_claude_permissions`` only reads the files; it is kept apart from the mapping so the
sandbox's own handling of ``.claude/settings*.json`` can share it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from nyzhi import records
from nyzhi.tools import claude_names

LISTS = ("allow", "deny", "ask")
_RULE = re.compile(r"^\s*([A-Za-z_][\w-]*)\s*(?:\((.*)\))?\s*$", re.S)
_FILE_TOOLS = frozenset({"read", "write", "edit", "multi_edit", "glob", "grep", "list_dir"})
# Claude Code's Edit covers every tool that edits a file in place (issue 36 added the batch ones).
_FAMILY = {"edit": ("edit", "multi_edit", "apply_patch", "batch_apply", "instrument",
                    "remove_instrumentation", "notebook_edit")}


@records.frozen
class SettingsFile:
    """One Claude Code settings file's permission lists, as read (``text`` for hashing)."""

    path: Path
    text: str
    permissions: dict[str, list[str]]


def read_claude_permissions(workspace_root: Path | str) -> tuple[list[SettingsFile], list[str]]:
    """The ``permissions`` lists of the workspace's Claude Code settings files, and notes for
    files that cannot be read or are not the shape Claude Code writes. A missing file is
    fine: it is another tool's config."""
    from nyzhi.config.claude_settings import read_settings

    found: list[SettingsFile] = []
    files, notes = read_settings(workspace_root)
    for settings in files:
        path, text, data = settings.path, settings.text, settings.data
        perms = data.get("permissions") if isinstance(data, dict) else None
        if perms is None:
            continue
        if not isinstance(perms, dict):
            notes.append(f'{path}: "permissions" should be an object; ignored')
            continue
        lists: dict[str, list[str]] = {}
        for key in LISTS:
            value = perms.get(key, [])
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                notes.append(f"{path}: permissions.{key} should be a list of strings; ignored")
                continue
            lists[key] = value
        found.append(SettingsFile(path, text, lists))
    return found, notes


@records.frozen
class Mapped:
    """Rules in our terms (``TrustPolicy`` fields) and the rules we could not express."""

    deny_tools: tuple[str, ...] = ()
    deny_commands: tuple[str, ...] = ()
    deny_paths: tuple[str, ...] = ()
    auto_approve: tuple[str, ...] = ()
    always_ask: tuple[str, ...] = ()
    unexpressed: tuple[str, ...] = ()
    # ("deny_commands:touch *", "permissions.deny Bash(touch:*)"): each deny rule's origin
    sources: tuple[tuple[str, str], ...] = ()


def _path_pattern(spec: str, home: Path) -> str:
    """A Claude Code path specifier as a ``deny_paths`` pattern."""
    spec = spec.strip()
    if spec.startswith("//"):
        return spec[1:]
    if spec.startswith("~/"):
        return str(home / spec[2:])
    spec = spec.removeprefix("./").lstrip("/")
    while spec.startswith("**/"):
        spec = spec[3:]
    return spec.rstrip("/") or "."


def _command_patterns(spec: str) -> tuple[str, ...]:
    """``Bash(spec)`` as ``deny_commands`` globs: ``cmd:*`` is ``cmd`` alone or with
    arguments; anything else is a glob over one simple command."""
    spec = " ".join(spec.split())
    if spec.endswith(":*"):
        prefix = spec[:-2].rstrip()
        return (prefix, f"{prefix} *")
    return (spec,)


def map_rules(kind: str, rules: list[str], *, home: Path) -> Mapped:
    """One list (``allow``, ``deny`` or ``ask``) of Claude Code rules in our terms."""
    out: dict[str, list[str]] = {f.name: [] for f in attrs.fields(Mapped)}
    for rule in rules:
        match = _RULE.match(rule)
        if match is None:
            out["unexpressed"].append(rule)
            continue
        tool, spec = match.group(1), match.group(2)
        spec = None if spec is None or spec.strip() in ("", "*") else spec.strip()
        ours = claude_names.ours(tool)
        if ours is None:
            continue  # a Claude Code tool nyz does not have: nothing to allow or deny
        if ours.startswith("mcp__") and ours.count("__") == 1:
            ours += "__*"  # a whole server
        if spec is None:
            field = {"deny": "deny_tools", "allow": "auto_approve", "ask": "always_ask"}[kind]
            patterns: tuple[str, ...] = _FAMILY.get(ours, (ours,))
        elif kind == "deny" and ours == "bash":
            field, patterns = "deny_commands", _command_patterns(spec)
        elif kind == "deny" and ours in _FILE_TOOLS:
            field, patterns = "deny_paths", (_path_pattern(spec, home),)
        else:
            out["unexpressed"].append(rule)
            continue
        out[field] += patterns
        out["sources"] += [(f"{field}:{p}", f"permissions.{kind} {rule.strip()}")
                           for p in patterns]
    return Mapped(**{k: tuple(dict.fromkeys(v)) for k, v in out.items()})


def claude_permission_rules(
    workspace_root: Path | str, env: Mapping[str, str] | None = None,
) -> tuple[dict[str, tuple[str, ...]], list[str]]:
    """The workspace's Claude Code permission rules as ``TrustPolicy`` additions
    (``{"deny_tools": (...), ...}``), and notices: unreadable files, and (once per file
    content) the rules we cannot express."""
    from nyzhi.config.notices_seen import unseen

    files, notes = read_claude_permissions(workspace_root)
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home())
    added: dict[str, list[str]] = {}
    for settings in files:
        skipped = []
        for kind in LISTS:
            mapped = map_rules(kind, settings.permissions.get(kind, []), home=home)
            for field in ("deny_tools", "deny_commands", "deny_paths", "auto_approve",
                          "always_ask"):
                added.setdefault(field, []).extend(getattr(mapped, field))
            added.setdefault("rule_sources", []).extend(
                (key, f"{settings.path.parent.name}/{settings.path.name} {where}")
                for key, where in mapped.sources)
            skipped += [f"{kind}: {r}" for r in mapped.unexpressed]
        if skipped:
            notes += unseen(settings.path, settings.text, [
                f"{settings.path}: Claude Code permission rules nyz cannot express, not "
                f"applied: {'; '.join(skipped)}"], env)
    return {k: tuple(dict.fromkeys(v)) for k, v in added.items() if v}, notes


def with_claude_permissions(policy: Any, workspace_root: Path | str,
                            env: Mapping[str, str] | None = None, *,
                            allow: bool = True) -> tuple[Any, list[str]]:
    """``policy`` (a ``TrustPolicy``) with the workspace's Claude Code rules added.
    ``allow=False`` (the project's settings are not approved: ``config.project_trust``)
    leaves out the ``allow`` rules, which would approve tools without asking; deny and ask
    rules only tighten and always apply."""
    added, notes = claude_permission_rules(workspace_root, env)
    if not allow:
        added.pop("auto_approve", None)
    if not added:
        return policy, notes
    changes = {k: tuple(dict.fromkeys((*getattr(policy, k), *v))) for k, v in added.items()}
    return attrs.evolve(policy, **changes), notes
