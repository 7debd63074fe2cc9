"""Input history kept across sessions in ``$XDG_STATE_HOME/nyzhi/history``.

One JSON string per line (an entry may span lines), appended with one ``write`` and fsynced, so
two consoles writing at once interleave whole entries and a crash loses at most the last one.
A line that does not decode (a torn write) is skipped when loading.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

MAX_ENTRIES = 1000


def history_path() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(state) / "nyzhi" / "history"


class History:
    """Entries oldest first; ``older``/``newer`` walk them from the draft being typed."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or history_path()
        self.entries: list[str] = self._load()
        self.pos = len(self.entries)
        self.draft = ""

    def _load(self) -> list[str]:
        try:
            raw = self.path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return []
        entries = []
        for line in raw[-MAX_ENTRIES:]:
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, str) and value:
                entries.append(value)
        return entries

    def add(self, entry: str) -> None:
        self.pos = len(self.entries)
        if not entry.strip() or (self.entries and self.entries[-1] == entry):
            return
        self.entries.append(entry)
        self.pos = len(self.entries)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, (json.dumps(entry, ensure_ascii=False) + "\n").encode())
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError:
            pass  # history is a convenience: a read-only state dir must not break the console

    def older(self, current: str) -> str | None:
        if self.pos == len(self.entries):
            self.draft = current
        if self.pos == 0:
            return None
        self.pos -= 1
        return self.entries[self.pos]

    def search(self, query: str, before: int) -> int | None:
        """The index of the newest entry before ``before`` containing ``query`` (Ctrl-R)."""
        for i in range(min(before, len(self.entries)) - 1, -1, -1):
            if query in self.entries[i]:
                return i
        return None

    def newer(self) -> str | None:
        if self.pos >= len(self.entries):
            return None
        self.pos += 1
        return self.draft if self.pos == len(self.entries) else self.entries[self.pos]
