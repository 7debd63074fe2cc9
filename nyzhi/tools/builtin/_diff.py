"""Unified diffs for previews and results, and lossless text decoding for edits.

Edits decode with ``surrogateescape`` so a file with a stray non-UTF-8 byte round-trips byte for
byte instead of being "fixed" by the editor.
"""

from __future__ import annotations

import difflib

RESULT_DIFF_LINES = 50  # in a tool's result, like the original's edit preview
PREVIEW_DIFF_LINES = 200  # in an approval request; the front end may clip further


def decode(data: bytes | None) -> str:
    return "" if data is None else data.decode("utf-8", "surrogateescape")


def encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def unified(label: str, before: bytes | None, after: bytes | None, *, max_lines: int | None = None) -> str:
    """A unified diff of one file (``/dev/null`` sides for creation and deletion)."""
    a = decode(before).splitlines(keepends=True)
    b = decode(after).splitlines(keepends=True)
    lines = []
    for line in difflib.unified_diff(
        a, b,
        fromfile="/dev/null" if before is None else f"a/{label}",
        tofile="/dev/null" if after is None else f"b/{label}",
        n=3,
    ):
        if line.endswith("\n"):
            lines.append(line[:-1])
        else:
            lines.append(line)
            lines.append("\\ No newline at end of file")
    if max_lines is not None and len(lines) > max_lines:
        lines = lines[:max_lines] + [f"... ({len(lines) - max_lines} more diff lines)"]
    return "\n".join(lines)
