"""Remembered approvals: the tools a user answered "always" for, per workspace, across sessions.

Only used when ``agent.trust.remember_approvals = true``. The file is user state, not project
configuration: it lives in ``paths.approvals_path()`` (``state_dir()/approvals.json``, mode
0600), never in the repository, so a cloned project cannot grant itself approvals. It maps a
workspace's real path to tool names::

    {"version": 1, "workspaces": {"/home/me/proj": ["bash", "write"]},
     "trusted": {"/home/me/proj": {"project": "<sha256>", "mcp:docs": "<sha256>"}}}

``trusted`` is the other kind of approval kept here: a digest of what the user approved of a
project's configuration that runs things (its hooks, MCP servers and security settings,
``nyzhi.config.project_trust``; a ``.mcp.json`` server, ``nyzhi.core.runtime.mcp.trust``). What changed
since is asked about again. It is not gated by ``remember_approvals``: it only ever records a
yes the user gave.

Writes are atomic (temp + fsync + rename) and read-modify-write cycles hold an flock on a
sibling lock file, so two nyz processes answering at once lose neither answer. Everything here
is blocking file I/O: async callers run it in a worker thread.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

from nyzhi.config import paths
from nyzhi.config.fsutil import atomic_write
from nyzhi.oserror import StorageError, relocate_fix

VERSION = 1


def _key(workspace: Path | str) -> str:
    return os.path.realpath(os.fspath(workspace))


def _doc(path: Path) -> dict:
    """The whole stored document; a missing, unreadable or malformed file counts as empty (it
    only ever saves the user a question, so losing it is safe, and the next write replaces it)."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _read(path: Path) -> dict[str, list[str]]:
    spaces = _doc(path).get("workspaces")
    if not isinstance(spaces, dict):
        return {}
    return {
        str(ws): [t for t in tools if isinstance(t, str)]
        for ws, tools in spaces.items()
        if isinstance(tools, list)
    }


def _trusted(path: Path) -> dict[str, dict[str, str]]:
    spaces = _doc(path).get("trusted")
    if not isinstance(spaces, dict):
        return {}
    return {
        str(ws): {k: v for k, v in keys.items() if isinstance(v, str)}
        for ws, keys in spaces.items()
        if isinstance(keys, dict)
    }


def _write(path: Path, workspaces: dict, trusted: dict) -> None:
    body = json.dumps({"version": VERSION, "workspaces": workspaces, "trusted": trusted},
                      indent=2, sort_keys=True)
    atomic_write(path, body.encode() + b"\n", mode=0o600)


def trusted_digest(workspace: Path | str, key: str,
                   env: Mapping[str, str] | None = None) -> str | None:
    """The digest the user approved for ``key`` ("project", "mcp:NAME") in ``workspace``."""
    return _trusted(paths.approvals_path(env)).get(_key(workspace), {}).get(key)


def record_trust(workspace: Path | str, key: str, digest: str,
                 env: Mapping[str, str] | None = None) -> None:
    """Record that the user approved ``digest`` for ``key`` in ``workspace``; StorageError
    (naming the file) when it cannot be written."""
    path = paths.approvals_path(env)
    try:
        with _locked(path):
            trusted = _trusted(path)
            trusted.setdefault(_key(workspace), {})[key] = digest
            _write(path, _read(path), trusted)
    except OSError as exc:
        raise StorageError.wrap(
            exc, "record the approval in", path, relocate_fix(exc, "XDG_STATE_HOME")
        ) from exc


def remembered_tools(workspace: Path | str, env: Mapping[str, str] | None = None) -> frozenset[str]:
    """Tool names approved "always" in ``workspace`` by an earlier session."""
    return frozenset(_read(paths.approvals_path(env)).get(_key(workspace), ()))


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def remember_tool(workspace: Path | str, tool: str, env: Mapping[str, str] | None = None) -> None:
    """Record that ``tool`` is approved "always" in ``workspace`` (idempotent). On a full or
    read-only disk the file keeps what it held and ``StorageError`` says which file and why."""
    path = paths.approvals_path(env)
    try:
        _remember(path, workspace, tool)
    except OSError as exc:
        raise StorageError.wrap(
            exc, "remember the approval in", path, relocate_fix(exc, "XDG_STATE_HOME")
        ) from exc


def _remember(path: Path, workspace: Path | str, tool: str) -> None:
    with _locked(path):
        spaces = _read(path)
        tools = spaces.setdefault(_key(workspace), [])
        if tool in tools:
            return
        tools.append(tool)
        _write(path, spaces, _trusted(path))
