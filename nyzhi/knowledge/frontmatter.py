"""The front matter of skill and command files: ``---`` lines around ``key: value`` pairs.

Only the flat subset those files use is read (``name``, ``description``, ``argument-hint``…):
one ``key: value`` per line, values optionally quoted. Pulling in a YAML parser for two keys
would cost every start-up an import; a file whose front matter is richer still loads, with the
keys this reader cannot parse left out.
"""

from __future__ import annotations

import re

_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)\s*:\s*(.*)$")


def split_front_matter(text: str) -> tuple[dict[str, str], str]:
    """(front matter keys, body). Text without a leading ``---`` line has no front matter."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return {}, text
    for end in range(1, len(lines)):
        if lines[end].strip() in ("---", "..."):
            break
    else:
        return {}, text  # never closed: treat it all as body
    meta: dict[str, str] = {}
    for line in lines[1:end]:
        match = _KEY.match(line.strip())
        if match:
            meta[match.group(1).lower()] = _unquote(match.group(2).strip())
    return meta, "".join(lines[end + 1:])


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def first_prose_line(body: str, limit: int = 120) -> str:
    """The first non-empty line that is not a heading, cut to ``limit`` characters; a leading
    ``# heading`` is used only when there is nothing else."""
    heading = ""
    for line in body.splitlines():
        text = line.strip()
        if not text:
            continue
        if text.startswith("#"):
            heading = heading or text.lstrip("#").strip()
            continue
        return _cut(text, limit)
    return _cut(heading, limit)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
