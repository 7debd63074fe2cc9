"""A project's configuration that runs things is used only as the user last approved it.

A repository (or an agent that wrote into one) decides much of what nyz does through its
project files. Most of that is harmless (a model, a prompt), but some of it runs programs as
the user or loosens the sandbox, and those parts (``GATED``) are only used once the user
approved exactly them:

* hooks: ``[[agent.hooks]]`` in ``.nyzhi/config.toml`` / ``config.local.toml``, and the
  ``hooks`` of ``.claude/settings.json`` / ``settings.local.json``;
* MCP servers: ``[mcp.servers]`` of those layers (``.mcp.json`` servers are asked about one by
  one, ``nyzhi.core.mcp.trust``, in the same record);
* ``[[nodes]]`` (SSH hosts the tools may run on);
* language servers: the ``[lsp.NAME]`` tables (a command to run, and settings such as an
  interpreter path a server runs);
* the security settings ``[agent.sandbox]`` and ``[agent.trust]``, except what can only
  tighten them (``hide``; a ``read-only`` level; ``deny_*``, ``always_ask``,
  ``remember_approvals``), and ``[shell.env] exclude`` (it replaces the list of variables,
  provider keys among them, kept out of commands' environment).

The approval is a SHA-256 digest of those parts, kept per workspace in the user's state
directory (``nyzhi.config.approvals``, never in the repository). While the digest differs
from the approved one (never approved, or changed since), they are left out of the loaded
configuration, with a notice naming the files and how to approve: ``nyz config trust`` (shows
them and asks), or ``--trust full`` (accepts without recording), as a ``.mcp.json`` server.
An interactive session also asks once through the front end's approvals
(``nyzhi.core.assembly.ask_project_trust``); a yes applies from the next session, since the
sandbox, trust and hooks of this one were fixed when it started. Headless, nobody is asked.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from nyzhi import records
from nyzhi.config.claude_settings import SETTINGS_FILES
from nyzhi.config.errors import ConfigError
from nyzhi.config.loader import LoadedConfig, load_config, read_layer
from nyzhi.config.modes import SandboxLevel, TrustMode
from nyzhi.config.textfile import check_nesting, read_regular_text

PROJECT_LAYERS = ("project", "local")
TRUST_KEY = "project"
# Keys under [agent.trust] / [agent.sandbox] that only tighten (or, remember_approvals, only
# keep the user's own answers): never gated.
KEEP_TRUST = ("deny_tools", "deny_paths", "deny_commands", "always_ask", "remember_approvals")
KEEP_SANDBOX = ("hide",)
_NAMES = {"agent.hooks": "hooks", "hooks": "hooks", "mcp.servers": "MCP servers",
          "nodes": "nodes", "lsp": "language servers", "agent.trust": "trust settings", "agent.sandbox": "sandbox settings",
          "shell.env.exclude": "environment settings", "permissions.allow": "permission rules"}


@records.frozen
class ProjectTrust:
    """The outcome for one load: ``approved`` (or nothing gated), what was gated, and the
    notice to show when it was left out."""

    approved: bool
    digest: str | None = None
    parts: dict[str, Any] = attrs.field(factory=dict, eq=False)
    notice: str = ""

    @property
    def claude_hooks(self) -> bool:
        """Whether the hooks of ``.claude/settings*.json`` may run."""
        return self.approved

    @property
    def claude_allow(self) -> bool:
        """Whether the ``permissions.allow`` rules of ``.claude/settings*.json`` may approve
        tools without asking (deny and ask rules only tighten, so they always apply)."""
        return self.approved


def _gated(raw: dict) -> dict[str, Any]:
    """The parts of one project layer's raw TOML that need approval."""
    out: dict[str, Any] = {}
    agent = raw.get("agent") if isinstance(raw.get("agent"), dict) else {}
    if agent.get("hooks"):
        out["agent.hooks"] = agent["hooks"]
    servers = raw.get("mcp", {}).get("servers") if isinstance(raw.get("mcp"), dict) else None
    if servers:
        out["mcp.servers"] = servers
    if raw.get("nodes"):
        out["nodes"] = raw["nodes"]
    servers = _lsp_servers(raw)
    if servers:
        out["lsp"] = servers
    trust = agent.get("trust") if isinstance(agent.get("trust"), dict) else {}
    loose = {k: v for k, v in trust.items() if k not in KEEP_TRUST}
    if loose:
        out["agent.trust"] = loose
    sandbox = agent.get("sandbox") if isinstance(agent.get("sandbox"), dict) else {}
    loose = {k: v for k, v in sandbox.items()
             if k not in KEEP_SANDBOX and not (k == "level" and v == SandboxLevel.READ_ONLY)}
    if loose:
        out["agent.sandbox"] = loose
    shell = raw.get("shell") if isinstance(raw.get("shell"), dict) else {}
    env = shell.get("env") if isinstance(shell.get("env"), dict) else {}
    if "exclude" in env:  # replaces the list that keeps keys out of commands' environment
        out["shell.env.exclude"] = env["exclude"]
    return out


def _lsp_servers(raw: dict) -> dict[str, Any]:
    """The ``[lsp.NAME]`` tables of a layer (``[lsp]``'s own settings are harmless)."""
    lsp = raw.get("lsp") if isinstance(raw.get("lsp"), dict) else {}
    return {k: v for k, v in lsp.items() if isinstance(v, dict)}


def strip_gated(name: str, raw: dict) -> dict:
    """``raw`` without its gated parts when ``name`` is a project layer (a ``layer_filter``)."""
    if name not in PROJECT_LAYERS or not _gated(raw):
        return raw
    raw = copy.deepcopy(raw)
    agent = raw.get("agent") if isinstance(raw.get("agent"), dict) else {}
    agent.pop("hooks", None)
    if isinstance(raw.get("mcp"), dict):
        raw["mcp"].pop("servers", None)
    raw.pop("nodes", None)
    if _lsp_servers(raw):
        raw["lsp"] = {k: v for k, v in raw["lsp"].items() if not isinstance(v, dict)}
    if isinstance(agent.get("trust"), dict):
        agent["trust"] = {k: v for k, v in agent["trust"].items() if k in KEEP_TRUST}
    if isinstance(agent.get("sandbox"), dict):
        agent["sandbox"] = {k: v for k, v in agent["sandbox"].items()
                            if k in KEEP_SANDBOX or (k == "level" and v == SandboxLevel.READ_ONLY)}
    shell = raw.get("shell") if isinstance(raw.get("shell"), dict) else {}
    if isinstance(shell.get("env"), dict):
        shell["env"].pop("exclude", None)
    return raw


def _claude_gated(root: Path) -> dict[str, dict[str, Any]]:
    """Per Claude settings file, what needs approval: its hooks (they run programs) and its
    ``permissions.allow`` rules (they approve tools without asking, as ``auto_approve``)."""
    out: dict[str, dict[str, Any]] = {}
    for name in SETTINGS_FILES:
        path = root / ".claude" / name
        try:
            text = read_regular_text(path)
        except OSError:
            continue
        try:
            check_nesting(text, path, "json")  # hostile nesting: ConfigError, not RecursionError
            data = json.loads(text)
        except (ValueError, ConfigError):
            out[f".claude/{name}"] = {"hooks": text}  # unusable, so unused; a change counts
            continue
        got: dict[str, Any] = {}
        if isinstance(data, dict):
            if data.get("hooks"):
                got["hooks"] = data["hooks"]
            perms = data.get("permissions")
            if isinstance(perms, dict) and perms.get("allow"):
                got["permissions.allow"] = perms["allow"]
        if got:
            out[f".claude/{name}"] = got
    return out


def gated_parts(loaded: LoadedConfig) -> dict[str, Any]:
    """``{file: {part: value}}``: every gated part of the workspace's project files."""
    parts: dict[str, Any] = {}
    for layer in loaded.candidates:
        if layer.name not in PROJECT_LAYERS:
            continue
        try:
            raw = read_layer(layer.path)
        except Exception:  # noqa: BLE001 (load_config already reported a broken layer)
            raw = None
        got = _gated(raw) if isinstance(raw, dict) else {}
        if got:
            parts[str(layer.path)] = got
    for name, got in _claude_gated(loaded.workspace.root).items():
        parts[str(loaded.workspace.root / name)] = got
    return parts


def digest_of(parts: Mapping[str, Any]) -> str:
    data = json.dumps(parts, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8", "surrogateescape")).hexdigest()


def check(loaded: LoadedConfig, env: Mapping[str, str] | None = None) -> ProjectTrust:
    """Whether the gated parts of the loaded workspace are the ones the user approved."""
    from nyzhi.config.approvals import trusted_digest

    parts = gated_parts(loaded)
    if not parts:
        return ProjectTrust(True)
    digest = digest_of(parts)
    if trusted_digest(loaded.workspace.root, TRUST_KEY, env) == digest:
        return ProjectTrust(True, digest, parts)
    files = ", ".join(sorted(parts))
    what = sorted({_NAMES[key] for got in parts.values() for key in got})
    notice = (
        f"the project's {', '.join(what)} in {files} are new or changed since you last "
        "approved them: they are not used in this run. Review and approve them with "
        "`nyz config trust`, or run with --trust full"
    )
    return ProjectTrust(False, digest, parts, notice)


def load_trusted(cwd: Path | None, env: Mapping[str, str] | None = None, *,
                 trust_full: bool = False) -> tuple[LoadedConfig, ProjectTrust]:
    """``load_config`` with the project's gated parts left out unless approved. ``trust_full``
    (``--trust full`` given for this run) accepts them without recording; so does the user's
    own config setting ``agent.trust.mode = "full"`` (a project cannot set that for itself)."""
    loaded = load_config(cwd, env=env)
    verdict = check(loaded, env)
    if verdict.approved:
        return loaded, verdict
    stripped = load_config(cwd, env=env, layer_filter=strip_gated)
    if trust_full or stripped.config.agent.trust.mode is TrustMode.FULL:
        return loaded, ProjectTrust(True, verdict.digest, verdict.parts)
    return stripped, verdict


def approve(loaded: LoadedConfig, env: Mapping[str, str] | None = None, *,
            digest: str | None = None) -> None:
    """Record as approved the gated parts the user was shown (``digest``; default: the current
    ones). Recording the shown digest means a file changed after it was shown is not approved."""
    from nyzhi.config.approvals import record_trust

    digest = digest or check(loaded, env).digest
    if digest is not None:
        record_trust(loaded.workspace.root, TRUST_KEY, digest, env)
