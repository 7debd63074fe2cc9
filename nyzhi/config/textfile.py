"""The text of a configuration file, checked before any parser sees it.

Every file that configures nyz (``config.toml`` layers, ``.mcp.json``, ``.claude/settings*.json``)
is read here, so each fails the same way: a ``ConfigError`` naming the file, and the key when
there is one, never a traceback. Two things the parsers do not report well are checked first:

* bytes that are not UTF-8 (a binary file): ``UnicodeDecodeError`` named no file;
* nesting deeper than ``MAX_DEPTH``: ``tomllib``, ``json`` and every recursive function after
  them (validation, merging, ``nyz config show``) recurse once per level, so a deep enough
  file ended in ``RecursionError``. No real configuration nests more than a handful of levels;
* a number of ``MAX_DIGITS`` digits or more, which Python refuses to convert (a ``ValueError``
  from inside the parser). Smaller numbers parse, and the schema's ranges then name the key.

Every file nyz reads that someone else may have put there (a config layer, a prompt file, an
ignore file, a command file) is opened by ``open_regular``: without blocking, and refused
unless it is a regular file. A FIFO planted as ``.gitignore`` or ``.nyzhi/config.toml`` hung
``glob`` and every later start, since ``open`` of a FIFO waits for a writer; a device or a
socket is no configuration either.

The check scans the text outside strings and comments, remembering the key each container is
under, so the error names where it happens (``mcpServers.x.args[0][0]...``). It is skipped
when the file has fewer opening brackets than ``MAX_DEPTH`` and no long run of digits, which
is every ordinary file: reading a config costs no Python-level scan.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from pathlib import Path
from typing import Literal

from nyzhi.config.errors import ConfigError, ConfigProblem

MAX_DEPTH = 64
MAX_DIGITS = sys.int_info.default_max_str_digits or 4300
_LONG_NUMBER = re.compile(rf"[0-9_]{{{MAX_DIGITS}}}")
SHOWN_PARTS = 8  # path parts an error shows before "..."
Syntax = Literal["toml", "json"]


class NotRegularFile(OSError):
    """A path that is there but is not a regular file (a FIFO, a socket, a device)."""

    def __init__(self, path: Path | str, kind: str) -> None:
        super().__init__(f"{path}: not a regular file ({kind}); not read")
        self.path = str(path)
        self.kind = kind
        self.strerror = f"not a regular file ({kind})"


_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "a special file"


def open_regular(path: Path | str, flags: int = 0, dir_fd: int | None = None) -> int:
    """A blocking file descriptor of ``path`` opened for reading, only if it is a regular file.

    ``O_NONBLOCK`` makes the open itself return at once for a FIFO (which would wait for a
    writer); ``fstat`` of what was opened then decides. ``IsADirectoryError`` for a
    directory, ``NotRegularFile`` for the rest, ``OSError`` as ``open`` raises it. ``flags``
    add to the open's (``O_NOFOLLOW``); ``dir_fd`` as for ``os.open``."""
    try:
        fd = os.open(path, _OPEN_FLAGS | flags, dir_fd=dir_fd)
    except OSError:  # a socket cannot be opened at all (ENXIO): say what it is instead
        try:
            mode = os.stat(path, dir_fd=dir_fd,
                           follow_symlinks=not flags & os.O_NOFOLLOW).st_mode
        except OSError:
            mode = stat.S_IFREG
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
            raise NotRegularFile(path, file_kind(mode)) from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(21, "Is a directory", str(path))
        if not stat.S_ISREG(mode):
            raise NotRegularFile(path, file_kind(mode))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_fd(fd: int, limit: int | None = None) -> bytes:
    """All of ``fd`` (at most ``limit`` bytes), read in 1 MiB pieces."""
    chunks = []
    left = limit if limit is not None else -1
    while left and (chunk := os.read(fd, 1 << 20 if left < 0 else min(left, 1 << 20))):
        chunks.append(chunk)
        left = left - len(chunk) if left > 0 else left
    return b"".join(chunks)


def read_regular(path: Path | str, limit: int | None = None) -> bytes:
    """The bytes of ``path`` (at most ``limit``), through ``open_regular``."""
    fd = open_regular(path)
    try:
        return read_fd(fd, limit)
    finally:
        os.close(fd)


def read_regular_text(path: Path | str, errors: str = "replace") -> str:
    """``read_regular`` decoded as UTF-8."""
    return read_regular(path).decode("utf-8", errors)


def read_config_text(path: Path, syntax: Syntax) -> str | None:
    """The text of ``path``; None when it does not exist. ``ConfigError`` naming the file when
    it cannot be read, is not a regular file or is not UTF-8, and the file and key when it
    nests too deeply."""
    try:
        data = read_regular(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(ConfigProblem(path, "", "a readable file",
                                        exc.strerror or str(exc))) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(ConfigProblem(path, "", "UTF-8 text",
                                        f"undecodable bytes ({exc.reason} at byte {exc.start})")
                          ) from None
    check_nesting(text, path, syntax)
    return text


def check_nesting(text: str, path: Path | None, syntax: Syntax) -> None:
    """``ConfigError`` naming ``path`` and the key where ``text`` nests deeper than
    ``MAX_DEPTH`` arrays or tables."""
    if text.count("[") + text.count("{") <= MAX_DEPTH and not _LONG_NUMBER.search(text):
        return
    found = _scan(text, syntax == "toml")
    if found is not None:
        where, (expected, what) = found
        raise ConfigError(ConfigProblem(path, _show(where), expected, what))


def _show(parts: list[str | int]) -> str:
    """The path's keys and two levels more, at most ``SHOWN_PARTS`` parts, then "..."."""
    from nyzhi.config.convert import dotted

    named = max((k + 1 for k, p in enumerate(parts[:SHOWN_PARTS]) if isinstance(p, str)),
                default=0)
    cut = min(named + 2, SHOWN_PARTS)
    shown = dotted(tuple(parts[:cut])) or "(file)"
    return shown + ("..." if len(parts) > cut else "")


def _string_end(text: str, i: int, toml: bool) -> tuple[int, str]:
    """The index just past the string starting at ``text[i]``, and its (raw) content."""
    quote = text[i]
    if toml and text.startswith(quote * 3, i):
        delim, start = quote * 3, i + 3
    else:
        delim, start = quote, i + 1
    escapes = quote == '"'  # TOML literal strings ('...') have none; JSON has only "..."
    j = start
    while True:
        k = text.find(delim, j)
        if k < 0:
            return len(text), text[start:]
        if escapes:
            slashes = 0
            while k - 1 - slashes >= start and text[k - 1 - slashes] == "\\":
                slashes += 1
            if slashes % 2:
                j = k + 1
                continue
        if len(delim) == 3:  # """a"""" : the closing delimiter is the last three quotes
            while text.startswith(quote, k + 3):
                k += 1
        return k + len(delim), text[start:k]


def _key_parts(name: str) -> list[str | int]:
    """A TOML key as written (``a.b``, ``"a.b".c``; strings come quoted with ``"``) -> its
    parts."""
    parts: list[str | int] = []
    current, quoted = "", False
    for c in name:
        if c == '"':
            quoted = not quoted
        elif c == "." and not quoted:
            parts.append(current.strip())
            current = ""
        else:
            current += c
    parts.append(current.strip())
    return [p for p in parts if p != ""]


_DEEP = (f"at most {MAX_DEPTH} levels of nested arrays and tables", "deeper nesting")
_LONG = (f"a number of fewer than {MAX_DIGITS} digits", "a longer one")


def _scan(text: str, toml: bool) -> tuple[list[str | int], tuple[str, str]] | None:
    """(key path, (expected, found)) of the first container deeper than ``MAX_DEPTH`` or
    number of ``MAX_DIGITS`` digits; None if there is none.

    ``stack`` holds, per open container, its kind and its current slot (the key being set in
    a table, the index in an array). TOML keys are the text before ``=`` since the statement
    or inline-table entry began; a ``[table]`` or ``[[array]]`` header at the top level names
    the table its keys belong to. JSON keys are the string before ``:``."""
    stack: list[list] = []  # [kind, slot]
    table: list[str | int] = []
    key: list[str | int] = []  # TOML: the top-level key of the current statement
    buf: list[str] = []  # TOML: key text since the statement or entry began
    fresh = True  # TOML: at the start of a top-level line, where "[" begins a table header
    last = ""  # JSON: the last string, which a ':' makes a key
    digits = 0  # the length of the run of digits (and TOML's "_") ending here

    def path() -> list[str | int]:
        if not toml:
            return [slot for _kind, slot in stack]
        parts = [*table, *key]
        for _kind, slot in stack:
            parts += _key_parts(slot) if isinstance(slot, str) else [slot]
        return parts

    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isdigit() or (c == "_" and digits):
            digits += 1
            if digits >= MAX_DIGITS:
                return path(), _LONG
        else:
            digits = 0
        if c in "\"'" and (toml or c == '"'):
            i, content = _string_end(text, i, toml)
            last = content
            buf.append(f'"{content}"')
            fresh = False
            continue
        if toml and c == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if toml and c not in " \t\r\n":
            was_fresh, fresh = fresh, False
        else:
            was_fresh = False
        if c in "[{":
            if toml and not stack and was_fresh and c == "[":
                end = text.find("\n", i)
                header = text[i:n if end < 0 else end].split("#", 1)[0]
                table = _key_parts(header.strip().strip("[]"))
                i = n if end < 0 else end
                continue
            if len(stack) >= MAX_DEPTH:
                return path(), _DEEP
            stack.append([c, "" if c == "{" else 0])
            buf = []
        elif c in "]}":
            if stack:
                stack.pop()
        elif c == "," and stack:
            if stack[-1][0] == "[":
                stack[-1][1] += 1
            buf = []
        elif c == ("=" if toml else ":"):
            name = "".join(buf).strip() if toml else last
            if stack and stack[-1][0] == "{":
                stack[-1][1] = name
            elif not stack:
                key = _key_parts(name)
            buf = []
        elif c == "\n" and toml and not stack:
            buf = []
            fresh = True
        elif toml:
            buf.append(c)
        i += 1
    return None
