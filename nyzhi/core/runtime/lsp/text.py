"""URIs and positions: LSP counts lines from 0 and columns in UTF-16 code units; the tools
speak 1-based lines and columns in characters, as ``read`` shows them. No ``lsprotocol`` here.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlparse


def uri_of(path: Path) -> str:
    return Path(os.path.realpath(path)).as_uri()


def path_of(uri: str) -> Path:
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        raise ValueError(f"not a file URI: {uri}")
    return Path(os.path.realpath(unquote(parsed.path)))


def utf16_column(line: str, column: int) -> int:
    """The 0-based UTF-16 offset of the 1-based character ``column`` in ``line``."""
    prefix = line[: max(column - 1, 0)]
    return len(prefix.encode("utf-16-le")) // 2


def char_column(line: str, utf16: int) -> int:
    """The 1-based character column of the 0-based UTF-16 offset ``utf16`` in ``line``."""
    units = 0
    for i, ch in enumerate(line):
        if units >= utf16:
            return i + 1
        units += 2 if ord(ch) > 0xFFFF else 1
    return len(line) + 1


def offset_of(text: str, line: int, utf16: int) -> int:
    """The index into ``text`` of an LSP position (0-based line, UTF-16 offset)."""
    lines = text.splitlines(keepends=True)
    if line >= len(lines):
        return len(text)
    start = sum(len(x) for x in lines[:line])
    body = lines[line].rstrip("\r\n")
    return start + char_column(body, utf16) - 1


def line_at(text: str, line: int) -> str:
    lines = text.splitlines()
    return lines[line] if 0 <= line < len(lines) else ""
