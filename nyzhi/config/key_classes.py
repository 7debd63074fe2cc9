"""What each configuration key may do, and so whether a project layer may set it unapproved.

A repository decides part of what nyz does through its project files (``.nyzhi/config.toml``,
``config.local.toml``, ``.claude/settings*.json``, ``.mcp.json``). Those files are untrusted
until a person approved them, and the boundary is an *allowlist*: ``KEYS`` gives every key of
the schema (``nyzhi.config.schema``, in the regular form of ``nyzhi.config.keys``: free names
as ``NAME``, array entries without an index) one class. Only ``SAFE`` keys (display, prompts,
model choice among the user's own providers, knobs that protect nothing) and limits set in the
tightening direction apply from a project layer unapproved; every other class is used only as
last approved (``nyzhi.config.project_trust``). A key missing here is treated as gated, and
``tests/nyzhi/config/test_key_classes.py`` fails until it is classified, so a new feature
that forgets is refused rather than open.

An entry of a gated class may carry ``safe``: the values (or direction) in which the key only
tightens what the user set (``Lower``, ``Order``, ``Inside``, ``OneOf``). A project value that
passes it is applied unapproved; anything else is gated. The keys Claude Code's files set map
onto schema keys (``CLAUDE_KEYS``, ``MCP_JSON_KEYS``) and take those keys' classes.
"""

from __future__ import annotations

import enum
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nyzhi import records
from nyzhi.config.modes import SandboxLevel, TrustMode


class KeyClass(enum.StrEnum):
    SAFE = "safe"
    RUNS_PROGRAM = "runs a program"
    PICKS_HOST = "chooses a host or URL"
    SETS_ENV = "sets or reads environment variables"
    PATH_OUTSIDE = "chooses a path outside the workspace"
    LOOSENS_LIMIT = "loosens a limit"
    USER_ONLY = "only the user's own config may set it"


@records.frozen
class Lower:
    """A number where lower is tighter. ``unset``: what the user's value means when it is not
    set (``math.inf``: no limit; None: not known here, so no project value counts as tighter).
    ``zero_unlimited``: 0 means no limit (``team.max_concurrent_model_calls``)."""

    unset: float | None = math.inf
    zero_unlimited: bool = False

    def tightens(self, value: Any, user: Any, _root: Path) -> bool:
        def num(v: Any, missing: float | None) -> float | None:
            if v is None:
                return missing
            if isinstance(v, bool) or not isinstance(v, int | float):
                return None
            return math.inf if (self.zero_unlimited and v == 0) else float(v)

        mine, theirs = num(user, self.unset), num(value, None)
        return mine is not None and theirs is not None and theirs <= mine


@records.frozen
class Order:
    """Values from tightest to loosest; a project value no looser than the user's tightens.
    ``unset`` stands for the user's value when none is set (None: not known, only the
    tightest value counts)."""

    values: tuple[Any, ...]
    unset: Any = None

    def tightens(self, value: Any, user: Any, _root: Path) -> bool:
        def rank(v: Any) -> int | None:
            for i, known in enumerate(self.values):
                if type(v) is type(known) and v == known:
                    return i
            return None

        theirs = rank(value)
        if theirs is None:
            return False
        mine = rank(self.unset if user is None else user)
        return theirs == 0 or (mine is not None and theirs <= mine)


@records.frozen
class OneOf:
    """Only these values are harmless (``index.embedding``: the local model)."""

    values: tuple[Any, ...]

    def tightens(self, value: Any, _user: Any, _root: Path) -> bool:
        return isinstance(value, str) and value in self.values


@records.frozen
class Inside:
    """A path (or list of paths) that stays inside the workspace: relative, no ``..`` out of
    it, no ``~``, and no symlink leading out as it stands now."""

    def tightens(self, value: Any, _user: Any, root: Path) -> bool:
        items = value if isinstance(value, list) else [value]
        if not items or not all(isinstance(v, str) and v for v in items):
            return False
        base = os.path.realpath(root)
        for item in items:
            if item.startswith("~") or os.path.isabs(item):
                return False
            real = os.path.realpath(os.path.join(base, item))
            if real != base and not real.startswith(base + os.sep):
                return False
        return True


@records.frozen
class Entry:
    cls: KeyClass
    safe: Lower | Order | OneOf | Inside | None = None
    why: str = ""  # shown in docs/security.md's table when it says more than the class


S = Entry(KeyClass.SAFE)
_RUN = Entry(KeyClass.RUNS_PROGRAM)
_HOST = Entry(KeyClass.PICKS_HOST)
_ENV = Entry(KeyClass.SETS_ENV)
_LOOSE = Entry(KeyClass.LOOSENS_LIMIT)


def _limit(safe: Lower | Order) -> Entry:
    return Entry(KeyClass.LOOSENS_LIMIT, safe)


def _on(default: bool | None) -> Order:
    """A guard: on (True) is the tighter value; ``default`` is the schema's."""
    return Order((True, False), default)


def _off(default: bool | None) -> Order:
    """A permission: off (False) is the tighter value; ``default`` is the schema's."""
    return Order((False, True), default)

# Every key of the schema. An entry of a gated class covers the keys under it too (the whole
# table or array is one unit: a hook without its command means nothing); a SAFE table must
# list its keys one by one, so a key added to it later is not safe by accident.
KEYS: dict[str, Entry] = {
    # [provider]: which of the user's providers and models; never where requests go
    "provider.default": S,
    "provider.NAME.model": S,
    "provider.NAME.temperature": S,
    "provider.NAME.timeout": S,
    "provider.NAME.context_window": S,
    "provider.NAME.max_output_tokens": S,
    "provider.NAME.models.NAME.context_window": S,
    "provider.NAME.models.NAME.max_output_tokens": S,
    "provider.NAME.max_tokens": _limit(Lower()),
    "provider.NAME.api_style": Entry(KeyClass.PICKS_HOST, why="how and where the key is sent"),
    "provider.NAME.base_url": Entry(KeyClass.PICKS_HOST, why="the user's key goes there"),
    "provider.NAME.api_key": Entry(KeyClass.PICKS_HOST,
                                   why="whose account (and logs) the conversation goes to"),
    "provider.NAME.env_var": Entry(KeyClass.SETS_ENV,
                                   why="which variable's secret is sent as the key"),
    "provider.NAME.headers": Entry(KeyClass.PICKS_HOST, why="what goes with every request"),
    "provider.NAME.oauth": Entry(KeyClass.PICKS_HOST, why="where nyz login sends its tokens"),
    "provider.NAME.options": Entry(KeyClass.PICKS_HOST, why="passed through into requests"),
    # legacy [models] (ignored) and the console's display
    "models.max_tokens": S,
    "models.temperature": S,
    "tui.markdown": S,
    "tui.streaming": S,
    "tui.theme": S,
    "tui.accent": S,
    "tui.output_style": S,
    "tui.show_thinking": S,
    "tui.input_mode": S,
    "tui.colors": S,
    "tui.notify.bell": S,
    "tui.notify.desktop": S,
    "tui.notify.min_duration_ms": S,
    # [agent]
    "agent.max_steps": _limit(Lower(100)),
    "agent.max_tokens": _limit(Lower()),
    "agent.thinking": S,
    "agent.custom_instructions": S,
    "agent.auto_compact_threshold": S,
    "agent.compact_instructions": S,
    "agent.enforce_todos": S,
    "agent.auto_simplify": S,
    "agent.auto_commit": _limit(_off(False)),
    "agent.model_profile": S,
    "agent.subagent_model": S,
    "agent.stale_write_guard": _limit(_on(True)),
    "agent.format_on_edit": Entry(KeyClass.RUNS_PROGRAM, Order(("off", "auto"), "off"),
                                  why="runs the project's formatter; off only tightens"),
    "agent.listing_budget_chars": S,
    "agent.autopilot_max_loops": _limit(Lower(2)),
    # [agent.trust]: deny lists are unions across layers (a project adds, never removes)
    "agent.trust.mode": _limit(Order(tuple(m.value for m in TrustMode), TrustMode.OFF.value)),
    "agent.trust.allow_tools": _LOOSE,
    "agent.trust.allow_paths": Entry(KeyClass.PATH_OUTSIDE, why="approves writes there"),
    "agent.trust.deny_tools": S,
    "agent.trust.deny_paths": S,
    "agent.trust.deny_commands": S,
    "agent.trust.auto_approve": _LOOSE,
    "agent.trust.always_ask": S,
    "agent.trust.remember_approvals": _limit(_off(False)),
    "agent.trust.approve_project_config": Entry(KeyClass.USER_ONLY,
                                                why="a project cannot approve itself"),
    "agent.retry.max_retries": _limit(Lower(3)),
    # [agent.background]: more processes or bigger buffers would hold more than the user allowed
    "agent.background.max_processes": _limit(Lower(8)),
    "agent.background.buffer_bytes": _limit(Lower(1 << 20)),
    # [agent.stream]: how much one model answer may carry; a smaller cap only tightens
    "agent.stream.max_answer_chars": _limit(Lower(4_000_000)),
    "agent.stream.max_tool_argument_chars": _limit(Lower(4_000_000)),
    "agent.stream.max_step_tool_argument_chars": _limit(Lower(16_000_000)),
    "agent.retry.initial_backoff_ms": S,
    "agent.retry.max_backoff_ms": S,
    "agent.routing.enabled": S,
    "agent.routing.low_keywords": S,
    "agent.routing.high_keywords": S,
    "agent.verify": _RUN,
    "agent.agents.max_threads": _limit(Lower(4)),
    "agent.agents.max_depth": _limit(Lower(2)),
    "agent.agents.write_lease_wait": S,
    "agent.agents.budget.tokens": _limit(Lower()),
    "agent.agents.budget.usd": _limit(Lower()),
    "agent.agents.budget.time": Entry(KeyClass.LOOSENS_LIMIT),
    "agent.agents.budget.steps": _limit(Lower()),
    # a project's roles: prompts and narrowing, but no more steps, money or writing than the
    # role had (its unset value is not known here: only the tightest counts)
    "agent.agents.roles.NAME.description": S,
    "agent.agents.roles.NAME.config_file": Entry(KeyClass.PATH_OUTSIDE, Inside()),
    "agent.agents.roles.NAME.system_prompt": S,
    "agent.agents.roles.NAME.model": S,
    "agent.agents.roles.NAME.max_steps": _limit(Lower(None)),
    "agent.agents.roles.NAME.read_only": _limit(_on(None)),
    "agent.agents.roles.NAME.allowed_tools": S,
    "agent.agents.roles.NAME.disallowed_tools": S,
    "agent.agents.roles.NAME.mcp_servers": S,
    "agent.agents.roles.NAME.budget.tokens": _limit(Lower(None)),
    "agent.agents.roles.NAME.budget.usd": _limit(Lower(None)),
    "agent.agents.roles.NAME.budget.time": Entry(KeyClass.LOOSENS_LIMIT),
    "agent.agents.roles.NAME.budget.steps": _limit(Lower(None)),
    "agent.agents.roles.NAME.thinking": S,
    "agent.sharing": Entry(KeyClass.PICKS_HOST, why="where sessions would be published"),
    "agent.voice": Entry(KeyClass.SETS_ENV, why="which variable's key is used"),
    # [agent.sandbox]
    "agent.sandbox.level": _limit(Order(tuple(m.value for m in SandboxLevel),  # tight first
                                        SandboxLevel.WORKSPACE_WRITE.value)),
    "agent.sandbox.writable_roots": Entry(KeyClass.PATH_OUTSIDE, Inside()),
    "agent.sandbox.network": _limit(_off(False)),
    "agent.sandbox.fallback": _limit(Order(("refuse", "unsandboxed"), "refuse")),
    "agent.sandbox.hide": S,
    "agent.hooks": _RUN,
    "agent.commands.name": S,
    "agent.commands.prompt": S,
    "agent.commands.description": S,
    # [mcp], [lsp], [[nodes]]: programs and hosts
    # the whole table is gated, each server's keys with it: command, env, url, headers,
    # client_id, client_secret_env (which variable's secret an OAuth login sends)
    "mcp.servers": _RUN,
    "mcp.defer_threshold": S,
    "mcp.startup_timeout": S,
    # "defaults" answers a server's form without a person; "decline" only tightens
    "mcp.elicitation": _limit(Order(("decline", "defaults"), "decline")),
    "lsp.enabled": _limit(_off(True)),
    "lsp.diagnostics_after_edit": S,
    "lsp.diagnostics_wait": S,
    "lsp.idle_timeout": S,
    "lsp.startup_timeout": S,
    "lsp.request_timeout": S,
    "lsp.NAME": Entry(KeyClass.RUNS_PROGRAM, why="a command, and settings such as an "
                      "interpreter path the server runs"),
    "nodes": Entry(KeyClass.RUNS_PROGRAM, why="SSH hosts commands run on"),
    "team.max_concurrent_model_calls": _limit(Lower(16, zero_unlimited=True)),
    "team.proxy_model_calls": _limit(_off(False)),
    # [shell]
    "shell.path": _RUN,
    "shell.startup_commands": _RUN,
    "shell.env": Entry(KeyClass.SETS_ENV, why="PATH with a repository bin/ runs its programs; "
                       "exclude keeps keys out of commands"),
    "shell.sandbox": _LOOSE,  # legacy, ignored
    # [browser], [web_search], [notify] and the rest
    "browser.enabled": _limit(_off(False)),
    "browser.executable": _RUN,
    "browser.executable_path": _RUN,
    "browser.headless": S,
    # the hosts model-directed requests may reach past the SSRF guard (also dropped from a
    # project layer by the loader before anything else: USER_ONLY_TABLES)
    "network.allow_hosts": Entry(KeyClass.USER_ONLY, why="widens what the model may reach"),
    "web_search.backend": Entry(KeyClass.PICKS_HOST, why="which API gets the search key"),
    "web_search.url": _HOST,
    "web_search.max_results": S,
    "memory.auto_memory": S,
    "update.enabled": S,
    "update.check_interval_hours": S,
    "update.release_url": _HOST,
    "index.enabled": S,
    "index.embedding": Entry(KeyClass.PICKS_HOST, OneOf(("auto", "local")),
                             why="a provider name sends the code to its /embeddings API"),
    "index.embedding_model": S,
    "index.auto_context": S,
    "index.auto_context_chunks": S,
    "index.exclude": S,
    "external_notify": _HOST,  # legacy, ignored
    "notify.after": S,
    "notify.approvals": S,
    "notify.bell": S,
    "notify.osc": S,
    "notify.desktop": S,
    "notify.webhook_url": Entry(KeyClass.PICKS_HOST, why="turn text is posted there"),
}

# What nyz reads from Claude Code's files, as the schema key each means here.
CLAUDE_KEYS: dict[str, str] = {
    "hooks": "agent.hooks",
    "statusLine": "agent.hooks",  # a command run like a hook (nyzhi.core.runtime.status_line)
    "permissions.allow": "agent.trust.auto_approve",
    "permissions.deny": "agent.trust.deny_tools",
    "permissions.ask": "agent.trust.always_ask",
}
MCP_JSON_KEYS: dict[str, str] = {"mcpServers": "mcp.servers"}

NAME = "NAME"
# Every prefix of a key in KEYS (what the walk in project_trust descends through).
PREFIXES: frozenset[tuple[str, ...]] = frozenset(
    tuple(k.split("."))[:i] for k in KEYS for i in range(1, k.count(".") + 2))
# The prefixes that have keys under them (tables and arrays of tables), and the keys listed.
TABLES: frozenset[tuple[str, ...]] = frozenset(p[:-1] for p in PREFIXES if len(p) > 1)
ENTRIES: frozenset[tuple[str, ...]] = frozenset(tuple(k.split(".")) for k in KEYS)
_PARTS: dict[tuple[str, ...], tuple[str, Entry]] = {tuple(k.split(".")): (k, e)
                                                    for k, e in KEYS.items()}


def entry_for(form: tuple[str, ...]) -> tuple[str, Entry] | None:
    """The entry classifying the key ``form`` (the key itself or a gated table above it)."""
    for i in range(1, len(form) + 1):
        found = _PARTS.get(form[:i])
        if found is not None and (i == len(form) or found[1].cls is not KeyClass.SAFE):
            return found
    return None


def class_of(key: str) -> KeyClass | None:
    found = entry_for(tuple(key.split(".")))
    return found[1].cls if found else None


def user_only_tables(keys: Mapping[str, Entry]) -> tuple[str, ...]:
    """The top-level tables every key of which is ``USER_ONLY`` (``[network]``): the loader
    drops a project layer's copy whole, a typo under it too, before anything else reads it.
    Derived from the one table, so a new user-only table is dropped without a second list."""
    tops: dict[str, bool] = {}
    for key, entry in keys.items():
        if "." in key:
            top = key.split(".", 1)[0]
            tops[top] = tops.get(top, True) and entry.cls is KeyClass.USER_ONLY
    return tuple(sorted(top for top, only in tops.items() if only))


def safe_keys() -> list[str]:
    return [k for k, e in KEYS.items() if e.cls is KeyClass.SAFE]


def tightening_keys() -> Mapping[str, Entry]:
    return {k: e for k, e in KEYS.items() if e.safe is not None}


# Tables only the user's own config may hold (``nyzhi.config.loader`` drops a project's copy).
USER_ONLY_TABLES: tuple[str, ...] = user_only_tables(KEYS)
