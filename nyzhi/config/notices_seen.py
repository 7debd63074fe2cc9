"""Notices about another tool's files, shown once per file content rather than on every run.

A Claude Code project names tools nyz has no equivalent for (``CronCreate``), or permission
rules nyz cannot express (``Bash(npm test:*)`` in ``allow``). Those files belong to the project
and are not wrong; repeating the notice at every start teaches the user to ignore notices. So
each notice is keyed by the file's real path and a hash of its content, saved under the user's
state directory (``$XDG_STATE_HOME/nyzhi/notices-seen.json``): the notice comes back when the
file changes, and not before.

The store is a convenience: a missing, unreadable or malformed file counts as empty, and a
failed write only means the notice is shown again next time.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from nyzhi.config import paths
from nyzhi.config.fsutil import atomic_write

MAX_ENTRIES = 2000  # oldest dropped first: the file stays small whatever the user opens


def store_path(env: Mapping[str, str] | None = None) -> Path:
    return paths.state_dir(env) / "notices-seen.json"


def _read(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): v for k, v in data.items() if isinstance(v, str)}


def content_key(text: str | bytes) -> str:
    data = text.encode("utf-8", "replace") if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()[:32]


def unseen(source: Path | str, content: str | bytes, notices: Iterable[str],
           env: Mapping[str, str] | None = None) -> list[str]:
    """``notices`` about the file ``source`` if this content of it was not noticed before
    (then it is remembered as noticed), else []."""
    return unseen_key(os.path.realpath(os.fspath(source)), content, notices, env)


def unseen_key(key: str, content: str | bytes, notices: Iterable[str],
               env: Mapping[str, str] | None = None) -> list[str]:
    """``notices`` about the thing named ``key`` (a file's real path, or another stable name
    such as a server and model) unless this ``content`` of it was noticed before."""
    notices = list(notices)
    if not notices:
        return []
    digest = content_key(content)
    path = store_path(env)
    seen = _read(path)
    if seen.get(key) == digest:
        return []
    seen.pop(key, None)
    seen[key] = digest
    while len(seen) > MAX_ENTRIES:
        seen.pop(next(iter(seen)))
    try:
        atomic_write(path, (json.dumps(seen, indent=1) + "\n").encode(), mode=0o600)
    except OSError:
        pass  # shown again next time: the only cost of a state dir we cannot write
    return notices
