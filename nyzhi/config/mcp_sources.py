"""Where MCP servers are declared: ``[mcp.servers.NAME]`` and a project's ``.mcp.json``.

``.mcp.json`` is Claude Code's project file (``{"mcpServers": {NAME: {...}}}``); reading it
lets a repository set up for Claude Code work here unchanged. Its values may use ``${VAR}``
and ``${VAR:-default}``, expanded from the environment when the file is read. A server in
the config wins over a ``.mcp.json`` server of the same name.

``.mcp.json`` servers are *project-scoped*: a cloned repository could name any command, so
the runtime asks once before starting one (see ``nyzhi.core.runtime.mcp.trust``). Config servers are
trusted like the rest of the config (a project ``.nyzhi/config.toml`` can already run hooks).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import attrs

from nyzhi import records
from nyzhi.config.errors import ConfigError, ConfigProblem
from nyzhi.config.schema import Config, McpHttpServer, McpServer, McpStdioServer

MCP_JSON = ".mcp.json"
Source = Literal["config", "mcp.json"]

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@records.frozen
class ServerEntry:
    """One declared server: its name, definition and where it was declared."""

    name: str
    server: McpServer
    source: Source = "config"
    file: Path | None = None  # the .mcp.json it came from

    @property
    def needs_trust(self) -> bool:
        return self.source == "mcp.json"

    def fingerprint(self) -> str:
        """A digest of the definition: an approval covers this exact command, not a later
        edit of the file that swaps it for another."""
        data = json.dumps(attrs.asdict(self.server), sort_keys=True, default=list)
        return hashlib.sha256(f"{type(self.server).__name__}:{data}".encode()).hexdigest()[:32]

    def describe(self) -> str:
        s = self.server
        if isinstance(s, McpStdioServer):
            return " ".join([s.command, *s.args])
        return s.url


def expand_vars(text: str, env: Mapping[str, str], missing: list[str]) -> str:
    """``${VAR}`` / ``${VAR:-default}`` from ``env``; unset names without a default are
    collected in ``missing`` (and expand to "")."""

    def sub(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        value = env.get(name)
        if value is None or (value == "" and default is not None):
            if default is None:
                missing.append(name)
                return ""
            return default
        return value

    return _VAR.sub(sub, text)


def _problem(file: Path, key: str, expected: str, found: str, hint: str = "") -> ConfigProblem:
    return ConfigProblem(file, key, expected, found, hint)


def _strings(value: Any, key: str, file: Path, problems: list[ConfigProblem]) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        problems.append(_problem(file, key, "an array of strings", type(value).__name__))
        return []
    return list(value)


def _table(value: Any, key: str, file: Path, problems: list[ConfigProblem]) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        problems.append(_problem(file, key, "an object of strings", type(value).__name__))
        return {}
    return dict(value)


def _one(name: str, raw: Any, file: Path, env: Mapping[str, str],
         problems: list[ConfigProblem]) -> McpServer | None:
    key = f"mcpServers.{name}"
    if not isinstance(raw, dict):
        problems.append(_problem(file, key, "an object", type(raw).__name__))
        return None
    missing: list[str] = []

    def x(text: str) -> str:
        return expand_vars(text, env, missing)

    kind = raw.get("type", "stdio" if "command" in raw else "http")
    server: McpServer | None = None
    if kind == "stdio" and isinstance(raw.get("command"), str):
        server = McpStdioServer(
            command=x(raw["command"]),
            args=tuple(x(a) for a in _strings(raw.get("args", []), f"{key}.args", file, problems)),
            env={k: x(v) for k, v in _table(raw.get("env", {}), f"{key}.env", file, problems).items()},
            cwd=x(raw["cwd"]) if isinstance(raw.get("cwd"), str) else None,
        )
    elif kind in ("http", "streamable-http", "streamable_http") and isinstance(raw.get("url"), str):
        headers = _table(raw.get("headers", {}), f"{key}.headers", file, problems)
        server = McpHttpServer(url=x(raw["url"]), headers={k: x(v) for k, v in headers.items()})
    elif kind == "sse":
        problems.append(_problem(file, f"{key}.type", '"stdio" or "http"', '"sse"',
                                 "the legacy SSE transport is not supported; use streamable http"))
    else:
        problems.append(_problem(file, key, 'a "command" (stdio) or a "url" (http) string',
                                 f"type {kind!r} with keys {sorted(raw)}"))
    for var in dict.fromkeys(missing):
        problems.append(_problem(file, key, f"the environment variable {var} to be set",
                                 "it unset", f"set {var} or write ${{{var}:-default}}"))
    return server


def _standin(file: Path) -> bool:
    """An empty directory where ``.mcp.json`` would be: what a sandboxed command running now
    stands on (``nyzhi.tools.protected``), read as no file."""
    try:
        return file.is_dir() and not file.is_symlink() and not any(file.iterdir())
    except OSError:
        return False


def read_mcp_json(root: Path, env: Mapping[str, str] | None = None) -> list[ServerEntry]:
    """The servers of ``root/.mcp.json`` (none if the file is absent); ConfigError naming
    the file and key on anything malformed."""
    env = os.environ if env is None else env
    from nyzhi.config.textfile import read_config_text

    file = Path(root) / MCP_JSON
    if _standin(file):
        return []
    text = read_config_text(file, "json")
    if text is None:
        return []
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(_problem(file, "", "valid JSON", f"a syntax error: {exc}")) from None
    except ValueError as exc:  # an integer of more digits than Python converts
        raise ConfigError(_problem(file, "", "valid JSON", f"a value it cannot hold: {exc}")
                          ) from None
    servers = data.get("mcpServers", {}) if isinstance(data, dict) else None
    return servers_from(servers, file, env)


def servers_from(servers: Any, file: Path,
                 env: Mapping[str, str] | None = None) -> list[ServerEntry]:
    """The servers of an ``mcpServers`` object read from ``file`` (a ``.mcp.json``, or a
    plugin's ``plugin.json``, whose ``mcpServers`` has the same shape); ConfigError naming
    the file and key on anything malformed."""
    env = os.environ if env is None else env
    if not isinstance(servers, dict):
        raise ConfigError(_problem(file, "mcpServers", "an object of servers",
                                   type(servers).__name__))
    problems: list[ConfigProblem] = []
    out = []
    for name, raw in servers.items():
        server = _one(name, raw, file, env, problems)
        if server is not None:
            out.append(ServerEntry(name, server, "mcp.json", file))
    if problems:
        raise ConfigError(problems)
    return out


def declared_servers(config: Config, root: Path,
                     env: Mapping[str, str] | None = None) -> list[ServerEntry]:
    """Every server to run: the config's, then ``.mcp.json``'s not shadowed by a config one."""
    entries = [ServerEntry(name, server) for name, server in config.mcp.servers.items()]
    taken = {e.name for e in entries}
    entries += [e for e in read_mcp_json(root, env) if e.name not in taken]
    return entries
