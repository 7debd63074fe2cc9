"""Which project-scoped MCP servers the user has approved, kept under XDG data.

A ``.mcp.json`` in a cloned repository can name any command, so a server declared there is
started only once the user said yes (as Claude Code asks). The approval is recorded per
project root, server name and a fingerprint of the definition: editing the command in the
file asks again. ``--trust full`` accepts without recording.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from nyzhi.config import paths
from nyzhi.config.fsutil import atomic_write
from nyzhi.config.mcp_sources import ServerEntry

TRUST_FILE = "mcp-trust.json"


class TrustStore:
    """``data_dir()/mcp-trust.json``: ``{"<project root>": {"<server>": "<fingerprint>"}}``."""

    def __init__(self, root: Path, env: Mapping[str, str] | None = None) -> None:
        self.root = str(Path(os.path.realpath(root)))
        self.path = paths.data_dir(env) / TRUST_FILE

    def _read(self) -> dict[str, dict[str, str]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError):
            return {}
        return data if isinstance(data, dict) else {}

    def is_trusted(self, entry: ServerEntry) -> bool:
        if not entry.needs_trust:
            return True
        return self._read().get(self.root, {}).get(entry.name) == entry.fingerprint()

    def record(self, entry: ServerEntry) -> None:
        data = self._read()
        data.setdefault(self.root, {})[entry.name] = entry.fingerprint()
        atomic_write(self.path, json.dumps(data, indent=1, sort_keys=True).encode(),
                     mode=0o600, dir_mode=0o700)
