"""``mcp-auth.json``: OAuth logins of remote MCP servers (``nyz mcp login NAME``).

Format (version 1)::

    {"version": 1,
     "servers": {"linear": {"url": "https://mcp.linear.app/mcp",
                            "tokens": {"access_token": "...", "refresh_token": "...", ...},
                            "expires_at": 1700000000.0,
                            "client": {"client_id": "...", ...}}}}

A login is bound to the server's URL: when the configured URL changes the old tokens are not
sent to the new one (they read as no login). ``expires_at`` is absolute (the token's
``expires_in`` is relative to when it was issued), so a restarted nyz refreshes an expired
token before using it. The file is mode 0600 in a 0700 directory, replaced atomically
(``nyzhi.config.fsutil``), masked from the sandbox (``paths.mcp_auth_path`` is a registered
secret file), and its token values are redacted (``secret_values``, read by the redactor).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import time
from collections.abc import Iterator, Mapping
from typing import Any

from nyzhi.config import paths
from nyzhi.config.fsutil import atomic_write

MAX_BYTES = 1 << 20  # bounded: a login is a few hundred bytes


class McpTokenStoreError(Exception):
    """mcp-auth.json exists but cannot be used (its contents are never included)."""


def _load(env: Mapping[str, str] | None) -> dict[str, Any]:
    path = paths.mcp_auth_path(env)
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise McpTokenStoreError(f"cannot read {path}: {exc.strerror}") from None
    if len(raw) > MAX_BYTES:
        raise McpTokenStoreError(f"{path} is larger than {MAX_BYTES} bytes; remove it and log in again")
    try:
        data = json.loads(raw)
    except ValueError:
        raise McpTokenStoreError(f"{path} is not valid JSON; remove it and log in again") from None
    servers = data.get("servers") if isinstance(data, dict) else None
    return {k: v for k, v in (servers or {}).items() if isinstance(v, dict)}


@contextlib.contextmanager
def _locked(env: Mapping[str, str] | None) -> Iterator[dict[str, Any]]:
    """Read-modify-write under an flock so two nyz processes do not lose each other's logins."""
    path = paths.mcp_auth_path(env)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        servers = _load(env)
        yield servers
        body = json.dumps({"version": 1, "servers": servers}, indent=2) + "\n"
        atomic_write(path, body.encode(), mode=0o600, dir_mode=0o700, what="MCP logins")


def login_of(name: str, url: str, env: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """The stored login of server ``name`` if it was made for ``url``."""
    entry = _load(env).get(name)
    return entry if entry and entry.get("url") == url else None


def forget(name: str, env: Mapping[str, str] | None = None) -> bool:
    """Remove ``name``'s login (``nyz mcp logout``); whether there was one."""
    with _locked(env) as servers:
        return servers.pop(name, None) is not None


def secret_values(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Every token and client secret stored, by a name for the redactor."""
    try:
        servers = _load(env)
    except McpTokenStoreError:
        return {}
    out: dict[str, str] = {}
    for name, entry in servers.items():
        tokens = entry.get("tokens") or {}
        client = entry.get("client") or {}
        for label, value in (("access", tokens.get("access_token")),
                             ("refresh", tokens.get("refresh_token")),
                             ("client secret", client.get("client_secret"))):
            if isinstance(value, str) and value:
                out[f"mcp-auth.json {name} {label}"] = value
    return out


class McpTokenStorage:
    """The SDK's ``TokenStorage`` for one server, backed by mcp-auth.json.

    ``on_secret`` (name, value) is told every token value loaded or stored, so a running
    session's redactor knows a token the moment nyz has it."""

    def __init__(self, name: str, url: str, env: Mapping[str, str] | None = None,
                 on_secret: Any = None) -> None:
        self.name, self.url, self.env = name, url, env
        self.on_secret = on_secret

    def _tell(self, tokens: dict[str, Any]) -> None:
        if self.on_secret is None:
            return
        for key in ("access_token", "refresh_token"):
            if tokens.get(key):
                self.on_secret(f"mcp-auth.json {self.name} {key}", tokens[key])

    def expires_at(self) -> float | None:
        entry = login_of(self.name, self.url, self.env) or {}
        value = entry.get("expires_at")
        return float(value) if isinstance(value, int | float) else None

    async def get_tokens(self) -> Any:
        from mcp.shared.auth import OAuthToken
        from pydantic import ValidationError

        entry = login_of(self.name, self.url, self.env) or {}
        if not isinstance(entry.get("tokens"), dict):
            return None
        try:
            tokens = OAuthToken.model_validate(entry["tokens"])
        except ValidationError:
            return None
        self._tell(entry["tokens"])
        return tokens

    async def set_tokens(self, tokens: Any) -> None:
        data = tokens.model_dump(mode="json", exclude_none=True)
        self._tell(data)
        with _locked(self.env) as servers:
            entry = self._entry(servers)
            entry["tokens"] = data
            entry["expires_at"] = (time.time() + tokens.expires_in) if tokens.expires_in else None

    async def get_client_info(self) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull
        from pydantic import ValidationError

        entry = login_of(self.name, self.url, self.env) or {}
        if not isinstance(entry.get("client"), dict):
            return None
        try:
            return OAuthClientInformationFull.model_validate(entry["client"])
        except ValidationError:
            return None

    async def set_client_info(self, client_info: Any) -> None:
        with _locked(self.env) as servers:
            self._entry(servers)["client"] = client_info.model_dump(mode="json", exclude_none=True)

    def get_metadata(self) -> dict[str, Any] | None:
        """The authorization server's metadata as found at login (its token endpoint)."""
        value = (login_of(self.name, self.url, self.env) or {}).get("server_metadata")
        return value if isinstance(value, dict) else None

    def set_metadata(self, metadata: dict[str, Any]) -> None:
        with _locked(self.env) as servers:
            self._entry(servers)["server_metadata"] = metadata

    def wanted_scope(self) -> str | None:
        """The wider scope a server asked for mid-session (403 ``insufficient_scope``), which
        the next ``nyz mcp login`` requests: a session cannot log a person in itself."""
        value = (login_of(self.name, self.url, self.env) or {}).get("wanted_scope")
        return value if isinstance(value, str) else None

    def set_wanted_scope(self, scope: str | None) -> None:
        with _locked(self.env) as servers:
            entry = self._entry(servers)
            if scope:
                entry["wanted_scope"] = scope[:4096]
            else:
                entry.pop("wanted_scope", None)

    def clear_client(self) -> None:
        """Drop the registered client (a new login registers its own redirect port), and the
        tokens too when they lack a scope a server asked for (``wanted_scope``): the login
        must then authorize anew rather than reuse them."""
        with _locked(self.env) as servers:
            entry = servers.get(self.name)
            if entry is not None:
                entry.pop("client", None)
                if entry.get("wanted_scope"):
                    entry.pop("tokens", None)
                    entry.pop("expires_at", None)

    def _entry(self, servers: dict[str, Any]) -> dict[str, Any]:
        entry = servers.get(self.name)
        if not entry or entry.get("url") != self.url:
            entry = servers[self.name] = {"url": self.url}
        return entry
