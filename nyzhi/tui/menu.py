"""What the menu under the input offers for the text typed so far: the slash commands with
their one-line help while a ``/name`` is typed at the start, the workspace's files while an
``@path`` is typed at the end.

The commands come from the one command table (``nyzhi.core.runtime.commands``) and the session's
custom commands; the files from a bounded walk of the workspace, done once per ``@`` word
(``FileIndex``), so a large tree costs one walk and never freezes typing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nyzhi.tui.picker import Choice, matching

WALK_LIMIT = 5000  # entries looked at in one walk of the workspace
FILE_MATCHES = 200  # files offered at most
SKIPPED = frozenset({"node_modules", "__pycache__", "target", "dist", "build", "venv"})

COMMAND, FILE = "command", "file"


def workspace_files(root: Path, limit: int = WALK_LIMIT) -> list[str]:
    """Files and folders under ``root``, workspace-relative (folders end in ``/``), hidden
    ones and build/dependency folders left out, at most ``limit`` entries looked at."""
    found: list[str] = []
    seen = 0
    for top, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED)
        rel = os.path.relpath(top, root)
        prefix = "" if rel == "." else rel + "/"
        for name in [*(d + "/" for d in dirs), *sorted(files)]:
            seen += 1
            if seen > limit:
                return found
            if not name.startswith("."):
                found.append(prefix + name)
    return found


def command_choices(commands: Mapping[str, Any], custom: Mapping[str, Any]) -> list[Choice]:
    """Every command by name with its one-line help; custom ones after, unless a built-in
    hides them (as ``dispatch`` does)."""
    out = [Choice(f"/{n}", c.summary, n) for n, c in sorted(commands.items())]
    out += [Choice(f"/{n}", getattr(c, "description", "") or "custom command", n)
            for n, c in sorted(custom.items()) if n not in commands]
    return out


def menu_query(text: str) -> tuple[str, str] | None:
    """(kind, what is typed of the name) when ``text`` calls for the menu, else None: a
    ``/name`` being typed alone at the start, or an ``@path`` as the last word."""
    if text.startswith("/") and not any(c.isspace() for c in text):
        return COMMAND, text[1:]
    if "\n" in text:
        text = text.rsplit("\n", 1)[1]
    word = text.rpartition(" ")[2]
    if word.startswith("@"):
        return FILE, word[1:]
    return None


def file_choices(files: list[str], query: str) -> list[Choice]:
    return [Choice(f, "", f) for f in (c.label for c in matching(
        [Choice(f) for f in files], query))][:FILE_MATCHES]


def applied(text: str, kind: str, choice: Choice) -> str:
    """The input with the chosen name in place of what was typed of it."""
    if kind == COMMAND:
        return f"/{choice.value} "
    head = text[:max(text.rfind(" "), text.rfind("\n")) + 1]
    return f"{head}@{choice.value}" + ("" if choice.value.endswith("/") else " ")
