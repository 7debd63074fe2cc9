"""The stale-write guard: an agent may change a file only as it last saw it.

Write leases stop two writers at the same instant; they do not stop the common lost update:
agent A reads ``app.py``, agent B (or the user's editor, or a formatter hook) changes it, and
A writes its version built on what it read, silently dropping B's change. So every agent keeps
a ledger of what it last saw of each file (the content's SHA-256 and its mtime), recorded by
``read`` and by the agent's own successful writes. Before ``write``, ``edit``, ``multi_edit``
or ``apply_patch`` change an existing file, the file's current bytes must hash to what the
ledger holds:

* never seen (a blind overwrite of an existing file): refused, "read it first";
* changed since: refused, naming who changed it where that is known (the tree-wide record of
  the last write through our tools, kept beside the write leases) or "changed outside nyz";
* new files are exempt.

The check runs in the tool's planning step, which holds the file's write lease and the
transaction lock, so nothing can slip in between the check and the write. The ledger is per
agent (a subagent reads before it writes), part of the state record (compaction keeps it), and
rebuilt on resume from the record and the ``seen`` metadata of later tool results.

``[agent] stale_write_guard = false`` turns the guard off (the context then has no ledger).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from nyzhi import records

#: The tools whose changes to an existing file the guard checks (the issue's list, and the
#: editing tools of issue 36 that change files they were not given whole).
GUARDED_TOOLS = frozenset({
    "write", "edit", "multi_edit", "apply_patch", "batch_apply", "instrument",
    "remove_instrumentation", "notebook_edit",
})


@records.frozen
class SeenFile:
    """One ledger entry as the state record keeps it."""

    path: str
    sha256: str
    mtime_ns: int = 0


class StaleWrite(Exception):
    """The file changed since this agent last saw it, or it never read it. For the model."""


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _mtime_ns(real: Path) -> int:
    try:
        return os.stat(real).st_mtime_ns
    except OSError:
        return 0


class FileLedger:
    """What one agent last saw of each file: real path -> (sha256, mtime_ns)."""

    __slots__ = ("entries",)

    def __init__(self, entries: Mapping[str, tuple[str, int]] | None = None) -> None:
        self.entries: dict[str, tuple[str, int]] = dict(entries or {})

    def saw(self, real: Path | str, data: bytes) -> str:
        """Record that the agent saw (read or wrote) ``data`` as the content of ``real``;
        returns its digest. Safe from a worker thread (one dict assignment)."""
        sha = digest(data)
        self.entries[str(real)] = (sha, _mtime_ns(Path(real)))
        return sha

    def forget(self, real: Path | str) -> None:
        self.entries.pop(str(real), None)

    def merge(self, seen: Mapping[str, Any]) -> None:
        """Apply a tool result's ``seen`` metadata (path -> sha256, None for a deleted file)."""
        for path, sha in seen.items():
            if sha is None:
                self.entries.pop(path, None)
            elif isinstance(sha, str):
                self.entries[path] = (sha, 0)

    def check(self, real: Path, current: bytes, shown: str, last_writer: tuple[str, str] | None,
              me: str) -> None:
        """Raise ``StaleWrite`` unless ``current`` is what this agent last saw of ``real``.
        ``last_writer`` is (agent path, digest) of the last write through our tools."""
        seen = self.entries.get(str(real))
        if seen is None:
            raise StaleWrite(
                f"{shown} already exists and you have not read it: read it first (with read), "
                "then make your change. Nothing was written."
            )
        now = digest(current)
        if seen[0] == now:
            return
        if last_writer is not None and last_writer[1] == now and last_writer[0] != me:
            who = f"by {last_writer[0]}"
        else:
            who = "outside nyz (a command, an editor or a formatter)"
        raise StaleWrite(
            f"{shown} was changed {who} since you last read it, so your change would undo "
            "theirs. Read it again and redo your change on what it holds now. Nothing was "
            "written."
        )

    def snapshot(self) -> tuple[SeenFile, ...]:
        """The ledger as records, for the state record (sorted: stable across runs)."""
        return tuple(SeenFile(p, sha, mtime) for p, (sha, mtime) in sorted(self.entries.items()))

    def restore(self, seen: Iterable[SeenFile]) -> None:
        """Take back what a snapshot held (a resumed agent's ledger)."""
        for item in seen:
            self.entries[item.path] = (item.sha256, item.mtime_ns)


class LastWriters:
    """Tree-wide: the last write through our tools to each real path (agent path, digest), so
    a refusal can name the agent whose change would be lost. Shared like the lease table."""

    __slots__ = ("_by_path",)

    def __init__(self) -> None:
        self._by_path: dict[str, tuple[str, str]] = {}

    def wrote(self, real: Path | str, agent: str, sha: str | None) -> None:
        if sha is None:
            self._by_path.pop(str(real), None)
        else:
            self._by_path[str(real)] = (agent, sha)

    def get(self, real: Path | str) -> tuple[str, str] | None:
        return self._by_path.get(str(real))
