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
    number of ``MAX_DIGITS`` digits; None if there is none."""
    return _Scanner(text, toml).scan()


class _Scanner:
    """One pass over a TOML or JSON text for ``_scan``, keeping only where it is.

    ``stack`` holds, per open container, its kind and its current slot (the key being set in
    a table, the index in an array). TOML keys are the text before ``=`` since the statement
    or inline-table entry began; a ``[table]`` or ``[[array]]`` header at the top level names
    the table its keys belong to. JSON keys are the string before ``:``."""

    def __init__(self, text: str, toml: bool) -> None:
        self.text = text
        self.toml = toml
        self.stack: list[list] = []  # [kind, slot]
        self.table: list[str | int] = []
        self.key: list[str | int] = []  # TOML: the top-level key of the current statement
        self.buf: list[str] = []  # TOML: key text since the statement or entry began
        self.fresh = True  # TOML: at the start of a top-level line, where "[" begins a header
        self.last = ""  # JSON: the last string, which a ':' makes a key
        self.digits = 0  # the length of the run of digits (and TOML's "_") ending here

    def path(self) -> list[str | int]:
        if not self.toml:
            return [slot for _kind, slot in self.stack]
        parts = [*self.table, *self.key]
        for _kind, slot in self.stack:
            parts += _key_parts(slot) if isinstance(slot, str) else [slot]
        return parts

    def scan(self) -> tuple[list[str | int], tuple[str, str]] | None:
        text, toml = self.text, self.toml
        i, n = 0, len(text)
        while i < n:
            c = text[i]
            if c.isdigit() or (c == "_" and self.digits):
                self.digits += 1
                if self.digits >= MAX_DIGITS:
                    return self.path(), _LONG
            else:
                self.digits = 0
            if c in "\"'" and (toml or c == '"'):
                i, content = _string_end(text, i, toml)
                self.last = content
                self.buf.append(f'"{content}"')
                self.fresh = False
                continue
            if toml and c == "#":
                i = self._line_end(i)
                continue
            if toml and c not in " \t\r\n":
                was_fresh, self.fresh = self.fresh, False
            else:
                was_fresh = False
            if c in "[{":
                if toml and not self.stack and was_fresh and c == "[":
                    i = self._header(i)
                    continue
                if len(self.stack) >= MAX_DEPTH:
                    return self.path(), _DEEP
                self.stack.append([c, "" if c == "{" else 0])
                self.buf = []
            else:
                self._take(c)
            i += 1
        return None

    def _line_end(self, i: int) -> int:
        end = self.text.find("\n", i)
        return len(self.text) if end < 0 else end

    def _header(self, i: int) -> int:
        """A top-level ``[table]`` or ``[[array]]`` header names the table its keys belong
        to; returns where its line ends."""
        end = self._line_end(i)
        header = self.text[i:end].split("#", 1)[0]
        self.table = _key_parts(header.strip().strip("[]"))
        return end

    def _take(self, c: str) -> None:
        """Any other character: a closing, a separator (the next slot), the end of a key, a
        TOML line's end, or more of a TOML key's text."""
        stack, toml = self.stack, self.toml
        if c in "]}":
            if stack:
                stack.pop()
        elif c == "," and stack:
            if stack[-1][0] == "[":
                stack[-1][1] += 1
            self.buf = []
        elif c == ("=" if toml else ":"):
            name = "".join(self.buf).strip() if toml else self.last
            if stack and stack[-1][0] == "{":
                stack[-1][1] = name
            elif not stack:
                self.key = _key_parts(name)
            self.buf = []
        elif c == "\n" and toml and not stack:
            self.buf = []
            self.fresh = True
        elif toml:
            self.buf.append(c)
