"""Which project-scoped MCP servers the user has approved.

A ``.mcp.json`` in a cloned repository can name any command, so a server declared there is
started only once the user said yes (as Claude Code asks). The approval is recorded per
project root, server name and a fingerprint of the definition: editing the command in the
file asks again. ``--approve-project-config`` (the person running nyz) accepts without
recording; no trust mode does.

The record is the one kept for every approval of project configuration
(``nyzhi.config.approvals``, key ``mcp:NAME``, under XDG state). Approvals recorded by older
versions in ``data_dir()/mcp-trust.json`` are still honoured.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from nyzhi.config import approvals, paths
from nyzhi.config.mcp_sources import ServerEntry

TRUST_FILE = "mcp-trust.json"  # the legacy file, read only


class TrustStore:
    """Approved ``.mcp.json`` servers of one project root."""

    def __init__(self, root: Path, env: Mapping[str, str] | None = None) -> None:
        self.root = str(Path(os.path.realpath(root)))
        self.env = env
        self.legacy_path = paths.mcp_trust_path(env)  # a registered secret file: masked
        self.path = paths.approvals_path(env)

    def _legacy(self) -> dict[str, str]:
        try:
            data = json.loads(self.legacy_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        got = data.get(self.root, {}) if isinstance(data, dict) else {}
        return got if isinstance(got, dict) else {}

    def is_trusted(self, entry: ServerEntry) -> bool:
        if not entry.needs_trust:
            return True
        digest = entry.fingerprint()
        key = f"mcp:{entry.name}"
        return (approvals.trusted_digest(self.root, key, self.env) == digest
                or self._legacy().get(entry.name) == digest)

    def record(self, entry: ServerEntry) -> None:
        approvals.record_trust(self.root, f"mcp:{entry.name}", entry.fingerprint(), self.env)
