"""Memory: notes the agent keeps across sessions, as markdown files outside the repository.

Two scopes, both under the user's data directory so a cloned repository can neither read nor
plant them:

- **user** memory, ``data_dir()/MEMORY.md``: one file shared by every project, one
  ``## topic`` section per topic;
- **project** memory, ``project_data_dir(root)/memory/``: one ``<topic>.md`` file per topic and a
  ``MEMORY.md`` index listing the topics with their first line. The index is regenerated from
  the topic files on every write, so it never drifts from them.

Every write replaces its file atomically (temp file, fsync, rename) under a lock file, so two
nyz processes writing at once lose neither note. Everything here is blocking file I/O: async
callers run it in a worker thread.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Literal

from nyzhi import records
from nyzhi.config import paths
from nyzhi.config.fsutil import atomic_write
from nyzhi.config.prompt_files import PromptFileRefused, read_prompt_file
from nyzhi.knowledge.frontmatter import first_prose_line

Scope = Literal["project", "user"]
Mode = Literal["append", "replace"]
SCOPES: tuple[str, ...] = ("project", "user")
MODES: tuple[str, ...] = ("append", "replace")
INDEX = "MEMORY.md"

# What ``prompt_text`` injects at session start: the user file first (at most USER_LINES),
# then the project index, within TOTAL_LINES and TOTAL_CHARS together. Topic bodies are not
# injected: the recall store brings the relevant ones to each message, memory_read the rest.
USER_LINES = 100
TOTAL_LINES = 200
TOTAL_CHARS = 12_000
TOPIC_MAX = 64


class MemoryRequestError(ValueError):
    """A memory request that cannot be done (bad topic, scope or mode); the message says why."""


def topic_slug(topic: str) -> str:
    """The file-safe form of a topic name: lower case, words joined by ``-``."""
    slug = re.sub(r"[^a-z0-9_]+", "-", topic.strip().lower()).strip("-_")[:TOPIC_MAX].strip("-_")
    if not slug or slug == "memory":
        raise MemoryRequestError(
            f"topic {topic!r} is not usable: give a short name of letters and digits "
            "(e.g. 'build', 'conventions'); 'memory' is the index"
        )
    return slug


@records.frozen
class Fact:
    """One entry of a memory file: a paragraph or a list item, with where it came from."""

    scope: str
    topic: str
    text: str
    path: Path


@records.frozen
class MemoryStore:
    """The memory files of one user and one project."""

    user_file: Path
    project_dir: Path  # .../projects/<hash>/memory

    @classmethod
    def for_workspace(cls, root: Path | str, env: Mapping[str, str] | None = None) -> MemoryStore:
        return cls(paths.user_memory_path(env), paths.project_data_dir(root, env) / "memory")

    @property
    def index_file(self) -> Path:
        return self.project_dir / INDEX

    # ---- reading ------------------------------------------------------------------------

    def _read(self, path: Path) -> str:
        """A memory file's text ("" when absent). Memory goes into the prompt, so the file
        must resolve to this store's own files (``config.prompt_files``); a symlink out of
        them is refused with a notice and read as empty."""
        try:
            return read_prompt_file(path, (self.user_file, self.project_dir))
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError, PromptFileRefused):
            return ""

    def topics(self) -> list[str]:
        """Project topics, sorted."""
        try:
            names = os.listdir(self.project_dir)
        except (FileNotFoundError, NotADirectoryError):
            return []
        return sorted(n[:-3] for n in names if n.endswith(".md") and n != INDEX)

    def topic_path(self, topic: str) -> Path:
        return self.project_dir / f"{topic_slug(topic)}.md"

    def read_topic(self, topic: str) -> str | None:
        """A project topic's text, else the user memory's section of that name, else None."""
        text = self._read(self.topic_path(topic))
        if text:
            return text
        section = _sections(self._read(self.user_file)).get(topic_slug(topic))
        return f"## {topic_slug(topic)}\n{section.strip()}\n" if section else None

    def read_user(self) -> str:
        return self._read(self.user_file)

    def read_index(self) -> str:
        return self._read(self.index_file)

    def source_files(self) -> list[Path]:
        """Every memory file that holds facts (the user file and the project topic files)."""
        files = [self.user_file] if self.user_file.is_file() else []
        return files + [self.project_dir / f"{t}.md" for t in self.topics()]

    def facts(self, path: Path) -> list[Fact]:
        """The entries of one memory file (``source_files``), for the recall store."""
        text = self._read(path)
        if path == self.user_file:
            return [
                Fact("user", topic, entry, path)
                for topic, body in _sections(text).items()
                for entry in _entries(body)
            ]
        return [Fact("project", path.stem, entry, path) for entry in _entries(text)]

    def prompt_text(self) -> str:
        """What ``[memory] auto_memory`` puts in the system prompt at session start ("" when
        there is no memory): the user memory, then the project index, capped."""
        blocks: list[str] = []
        left = TOTAL_LINES
        user = self.read_user().strip().splitlines()
        if user:
            shown = user[:USER_LINES]
            blocks.append("## User memory\n" + "\n".join(shown) + _more(len(user) - len(shown)))
            left -= len(shown)
        index = [line for line in self.read_index().strip().splitlines() if line.strip()]
        if index and left > 0:
            shown = index[:left]
            blocks.append("## Project memory\n" + "\n".join(shown) + _more(len(index) - len(shown)))
        text = "\n\n".join(blocks)
        if len(text) > TOTAL_CHARS:
            text = text[:TOTAL_CHARS].rsplit("\n", 1)[0] + "\n… (cut; memory_read shows the rest)"
        return text

    # ---- writing ------------------------------------------------------------------------

    def write(self, topic: str, content: str, *, mode: str = "append",
              scope: str = "project") -> Path:
        """Add ``content`` to ``topic`` (``mode`` "append"), or make it the topic's whole text
        ("replace"). Returns the file written."""
        if mode not in MODES:
            raise MemoryRequestError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        if scope not in SCOPES:
            raise MemoryRequestError(f"scope must be one of {', '.join(SCOPES)}, got {scope!r}")
        slug = topic_slug(topic)
        content = content.strip()
        if not content:
            raise MemoryRequestError("content must not be empty")
        if scope == "user":
            with _locked(self.user_file.parent):
                sections = _sections(self._read(self.user_file))
                old = sections.get(slug, "").strip()
                sections[slug] = content if mode == "replace" or not old else f"{old}\n\n{content}"
                body = "\n\n".join(f"## {t}\n{b.strip()}" for t, b in sections.items() if b.strip())
                atomic_write(self.user_file, (body + "\n").encode(), mode=0o600, dir_mode=0o700)
            return self.user_file
        path = self.project_dir / f"{slug}.md"
        with _locked(self.project_dir):
            old = self._read(path).strip()
            if mode == "replace" or not old:
                text = f"# {slug}\n\n{content}\n"
            else:
                text = f"{old}\n\n{content}\n"
            atomic_write(path, text.encode(), mode=0o600, dir_mode=0o700)
            self._write_index()
        return path

    def clear(self, scope: str = "project") -> list[Path]:
        """Delete the memory of ``scope`` ("project", "user" or "all"); returns what was
        removed."""
        if scope not in (*SCOPES, "all"):
            raise MemoryRequestError(f"scope must be project, user or all, got {scope!r}")
        removed: list[Path] = []
        if scope in ("project", "all"):
            with _locked(self.project_dir):
                for topic in self.topics():
                    path = self.project_dir / f"{topic}.md"
                    path.unlink(missing_ok=True)
                    removed.append(path)
                if self.index_file.exists():
                    self.index_file.unlink()
                    removed.append(self.index_file)
        if scope in ("user", "all") and self.user_file.exists():
            with _locked(self.user_file.parent):
                self.user_file.unlink()
            removed.append(self.user_file)
        return removed

    def _write_index(self) -> None:
        lines = ["# Project memory", "", "Topics (read one with memory_read(topic)):"]
        for topic in self.topics():
            body = self._read(self.project_dir / f"{topic}.md")
            lines.append(f"- {topic}: {first_prose_line(body, 100)}")
        atomic_write(self.index_file, ("\n".join(lines) + "\n").encode(), mode=0o600)


def _more(n: int) -> str:
    return f"\n… ({n} more lines; memory_read shows them)" if n > 0 else ""




def _sections(text: str) -> dict[str, str]:
    """``## topic`` sections of the user file, in order; text before the first heading is
    kept under "notes"."""
    out: dict[str, str] = {}
    current = "notes"
    for line in text.splitlines():
        if line.startswith("## "):
            current = line[3:].strip() or "notes"
            out.setdefault(current, "")
            continue
        out[current] = out.get(current, "") + line + "\n"
    return {k: v for k, v in out.items() if v.strip()}


def _entries(text: str) -> list[str]:
    """Paragraphs and list items, headings left out."""
    out: list[str] = []
    for block in re.split(r"\n\s*\n", text):
        lines = [ln for ln in block.strip().splitlines() if not ln.lstrip().startswith("#")]
        if not lines:
            continue
        if all(re.match(r"\s*([-*+]|\d+[.)])\s", ln) for ln in lines):
            out += [re.sub(r"^\s*([-*+]|\d+[.)])\s+", "", ln).strip() for ln in lines]
        else:
            out.append("\n".join(ln.rstrip() for ln in lines).strip())
    return [e for e in out if e]


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(directory / ".memory.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
