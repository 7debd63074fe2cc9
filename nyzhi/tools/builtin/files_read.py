"""Reading and browsing files: read, tail_file, list_dir, directory_tree, file_info.

Line numbers use the original's ``"{n:6}|line"`` format so the model can cite and edit lines it
has read; ``read`` and ``tail_file`` share it.

Every disk access (resolving, stat, reading, listing) runs in a worker thread, so a slow or
hung file system stalls the one call, not the event loop every agent shares.
"""

from __future__ import annotations

import collections
import datetime as dt
import os
import stat
from pathlib import Path
from typing import Any

from nyzhi.config.paths import display_path
from nyzhi.config.textfile import open_regular, read_regular
from nyzhi.provider.images import ImageError, check_dimensions, describe, sniff
from nyzhi.provider.types import ImagePart
from nyzhi.tools import notebook
from nyzhi.tools.base import ToolContext, ToolResult
from nyzhi.tools.builtin.common import (
    BuiltinTool,
    error,
    human_size,
    opt_int,
    req_str,
)
from nyzhi.tools.offload import run_blocking
from nyzhi.tools.paths import check_read, resolve_arg

MAX_LINE_CHARS = 2000
DEFAULT_READ_LIMIT = 2000
BINARY_SNIFF_BYTES = 512
MAX_LIST_ENTRIES = 1000
MAX_TREE_ENTRIES = 2000
TREE_EXCLUDES = frozenset({"node_modules", ".git", "target", "__pycache__", ".venv"})


def numbered(n: int, line: str) -> str:
    line = line.rstrip("\r")
    if len(line) > MAX_LINE_CHARS:
        line = f"{line[:MAX_LINE_CHARS]}… [line truncated, {len(line)} chars]"
    return f"{n:6}|{line}"


def is_binary(head: bytes) -> bool:
    return b"\0" in head[:BINARY_SNIFF_BYTES]


def _existing_file(ctx: ToolContext, raw: Any, arg: str) -> tuple[Path, Path]:
    path = resolve_arg(ctx, raw, arg=arg)
    real = check_read(ctx, path)
    if not real.exists():
        raise FileNotFoundError(2, "file not found", display_path(path, ctx.cwd))
    if real.is_dir():
        raise IsADirectoryError(21, "is a directory (use list_dir or directory_tree)", display_path(path, ctx.cwd))
    return path, real


def split_lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


class ReadTool(BuiltinTool):
    name = "read"
    description = (
        "Read a text file with line numbers ('     N|text'; cite a line as path:N, and leave the "
        "prefix out when you copy text into edit). A longer file ends with the offset to "
        "continue from; lines over 2000 characters are cut. In a large file grep first; for the "
        "end of a log use tail_file. "
        "An image (PNG, JPEG, GIF, WebP) is returned as the image itself, for you to look at; a "
        "Jupyter notebook as its cells, with ids and text outputs. Other binary files and "
        "directories are refused (list_dir shows a directory)."
    )
    parameters = {
        "type": "object",
        "properties": {
            "file_path": {"type": "string", "description": "File to read, relative to the working directory or absolute."},
            "offset": {"type": "integer", "description": "First line to return, 1-based (default 1)."},
            "limit": {"type": "integer", "description": "Maximum lines to return (default 2000)."},
        },
        "required": ["file_path"],
    }

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        offset = opt_int(args, "offset", 1, minimum=1)
        limit = opt_int(args, "limit", DEFAULT_READ_LIMIT, minimum=1)

        seen: dict[str, str] = {}

        def load() -> tuple[Path, bytes]:
            path, real = _existing_file(ctx, args.get("file_path"), "file_path")
            data = read_regular(real)  # a FIFO would block the turn: refused (OSError)
            if ctx.seen is not None:  # the stale-write guard's ledger (nyzhi.tools.ledger)
                seen[str(real)] = ctx.seen.saw(real, data)
            return path, data

        path, data = await run_blocking(load)
        shown = display_path(path, ctx.cwd)
        media_type = sniff(data[:16])
        if media_type is not None:  # the model sees it (if it can: the agent decides)
            try:
                check_dimensions(data, media_type, shown)  # a bomb is never attached
            except ImageError as exc:
                return error(str(exc))
            image = ImagePart(media_type, data)
            return ToolResult(output=f"{shown}: an image ({describe(image)}), attached",
                              metadata={"path": str(path), "image": media_type}, images=(image,))
        if is_binary(data):
            return error(
                f"{shown} looks like a binary file (NUL bytes near the start); read only shows "
                "text files. Use file_info for its size and type, or bash (e.g. `xxd FILE | head`)."
            )
        if notebook.is_notebook_path(path):
            try:
                return _notebook_result(path, shown, data, offset, limit, seen)
            except notebook.NotebookError:
                pass  # not valid: shown as the text it is, for the model to see what is wrong
        lines = split_lines(data.decode("utf-8", errors="replace"))
        total = len(lines)
        if total == 0:
            return ToolResult(output=f"({shown} is empty)", metadata={"total_lines": 0, "seen": seen})
        if offset > total:
            return error(
                f"offset {offset} is past the end of {shown} ({total} lines); use an offset from 1 "
                f"to {total}."
            )
        end = min(total, offset - 1 + limit)
        out = [numbered(i + 1, lines[i]) for i in range(offset - 1, end)]
        if end < total:
            out.append(f"... ({total - end} more lines; continue with offset={end + 1})")
        return ToolResult(
            output="\n".join(out),
            metadata={"path": str(path), "total_lines": total, "first_line": offset, "last_line": end,
                      "seen": seen},
        )


def _notebook_result(path: Path, shown: str, data: bytes, offset: int, limit: int,
                     seen: dict[str, str]) -> ToolResult:
    """A notebook's cells (``nyzhi.tools.notebook``), ``limit`` lines of them from ``offset``."""
    lines = notebook.render(data, shown).split("\n")
    total = len(lines)
    if offset > total:
        return error(f"offset {offset} is past the end of {shown}'s cells ({total} lines)")
    end = min(total, offset - 1 + limit)
    out = lines[offset - 1:end]
    if end < total:
        out.append(f"... ({total - end} more lines; continue with offset={end + 1})")
    return ToolResult(output="\n".join(out), metadata={
        "path": str(path), "notebook": True, "total_lines": total, "first_line": offset,
        "last_line": end, "seen": seen})


def _tail(
    ctx: ToolContext, raw: Any, count: int
) -> tuple[Path, tuple[collections.deque[tuple[int, bytes]], int] | None]:
    """The path, and the last ``count`` (line number, raw line) pairs with the line total (None
    if binary). Streams the file so a huge log never sits in memory whole. Blocking."""
    path, real = _existing_file(ctx, raw, "path")
    with os.fdopen(open_regular(real), "rb") as fh:  # a FIFO would block: refused
        if is_binary(fh.read(BINARY_SNIFF_BYTES)):
            return path, None
        fh.seek(0)
        last: collections.deque[tuple[int, bytes]] = collections.deque(maxlen=count)
        n = 0
        for n, line in enumerate(fh, start=1):  # noqa: B007 - n is the line count afterwards
            last.append((n, line))
    return path, (last, n)


class TailFileTool(BuiltinTool):
    name = "tail_file"
    description = (
        "Show the last lines of a text file with line numbers, without loading the whole file: "
        "the quick way to see the end of a log or of a saved long tool output. For any other "
        "range use read with offset and limit."
    )
    parameters = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File to read."},
            "lines": {"type": "integer", "description": "How many lines from the end (default 50, at most 10000)."},
        },
        "required": ["path"],
    }

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        count = opt_int(args, "lines", 50, minimum=1, maximum=10000)
        path, result = await run_blocking(_tail, ctx, args.get("path"), count)
        if result is None:
            return error(
                f"{display_path(path, ctx.cwd)} looks like a binary file; tail_file only shows text files "
                "(file_info gives its size and type)."
            )
        last, n = result
        if not last:
            return ToolResult(output=f"({display_path(path, ctx.cwd)} is empty)", metadata={"total_lines": 0})
        out = [numbered(i, raw.decode("utf-8", "replace").rstrip("\n")) for i, raw in last]
        return ToolResult(output="\n".join(out), metadata={"total_lines": n})


def _existing_dir(ctx: ToolContext, raw: Any, arg: str) -> tuple[Path, Path]:
    path = resolve_arg(ctx, raw if raw not in (None, "") else ".", arg=arg)
    real = check_read(ctx, path)
    if not real.exists():
        raise FileNotFoundError(2, "no such directory", display_path(path, ctx.cwd))
    if not real.is_dir():
        raise NotADirectoryError(20, "not a directory (use read or file_info)", display_path(path, ctx.cwd))
    return path, real


class ListDirTool(BuiltinTool):
    name = "list_dir"
    description = (
        "List one directory: subdirectories as '[DIR] name/', files as '[FILE] name (size)'. "
        "Hidden entries (names starting with '.') are left out, and at most 1000 entries are "
        "shown. Use directory_tree for several levels at once, glob to find files by name below "
        "a directory."
    )
    parameters = {
        "type": "object",
        "properties": {"path": {"type": "string", "description": "Directory to list ('.' for the working directory)."}},
        "required": ["path"],
    }

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        path, lines = await run_blocking(_listing, ctx, args.get("path"))
        total = len(lines)
        if not lines:
            return ToolResult(output=f"({display_path(path, ctx.cwd)} is empty)")
        if total > MAX_LIST_ENTRIES:
            lines = lines[:MAX_LIST_ENTRIES] + [f"... ({total - MAX_LIST_ENTRIES} more entries)"]
        return ToolResult(output="\n".join(lines), metadata={"entries": total})


def _listing(ctx: ToolContext, raw: Any) -> tuple[Path, list[str]]:
    """The directory's path and its entries, directories first, hidden ones omitted. Blocking."""
    path, real = _existing_dir(ctx, raw, "path")
    dirs, files = [], []
    with os.scandir(real) as it:
        for entry in it:
            if entry.name.startswith("."):
                continue
            try:
                if entry.is_dir():
                    dirs.append(f"[DIR]  {entry.name}/")
                else:
                    size = entry.stat().st_size if entry.is_file() else 0
                    files.append((entry.name, f"[FILE] {entry.name} ({human_size(size)})"))
            except OSError:
                files.append((entry.name, f"[FILE] {entry.name} (unreadable)"))
    return path, sorted(dirs) + [text for _, text in sorted(files)]


def _tree(real: Path, depth: int) -> tuple[list[str], bool]:
    lines: list[str] = []
    truncated = False

    def walk(directory: Path, prefix: str, level: int) -> None:
        nonlocal truncated
        try:
            entries = sorted(
                (e for e in os.scandir(directory) if e.name not in TREE_EXCLUDES),
                key=lambda e: (not e.is_dir(follow_symlinks=False), e.name),
            )
        except OSError as exc:
            lines.append(f"{prefix}└── [unreadable: {exc.strerror}]")
            return
        for i, entry in enumerate(entries):
            if len(lines) >= MAX_TREE_ENTRIES:
                truncated = True
                return
            last = i == len(entries) - 1
            is_dir = entry.is_dir(follow_symlinks=False)
            lines.append(f"{prefix}{'└── ' if last else '├── '}{entry.name}{'/' if is_dir else ''}")
            if is_dir and level < depth:
                walk(Path(entry.path), prefix + ("    " if last else "│   "), level + 1)

    walk(real, "", 1)
    return lines, truncated


class DirectoryTreeTool(BuiltinTool):
    name = "directory_tree"
    deferred = True  # list_dir and glob answer most questions; listed in one line until loaded
    description = (
        "Show a directory's layout as a tree, to get oriented in an unfamiliar project. Skips "
        "node_modules, .git, target, __pycache__ and .venv, and stops at 2000 entries (then "
        "pick a subdirectory or a smaller depth). To find particular files, glob or grep is "
        "faster."
    )
    parameters = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Root directory ('.' for the working directory)."},
            "depth": {"type": "integer", "description": "Levels to descend (default 3, at most 20)."},
        },
        "required": ["path"],
    }

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        depth = opt_int(args, "depth", 3, minimum=1, maximum=20)

        def tree() -> tuple[Path, tuple[list[str], bool]]:
            path, real = _existing_dir(ctx, args.get("path"), "path")
            return path, _tree(real, depth)

        path, (lines, truncated) = await run_blocking(tree)
        root = display_path(path, ctx.cwd)
        out = [root if root.endswith("/") else root + "/"] + lines
        if truncated:
            out.append(f"... (truncated at {MAX_TREE_ENTRIES} entries; use a smaller depth or a subdirectory)")
        return ToolResult(output="\n".join(out), metadata={"entries": len(lines), "truncated": truncated})


class FileInfoTool(BuiltinTool):
    name = "file_info"
    deferred = True  # seldom needed: listed in one line until tool_search loads it
    description = (
        "Show a path's type (file, directory, or symlink and its target), size, permissions and "
        "modification time, without reading the contents. Use it to check that a path exists or "
        "how big a file is before reading it."
    )
    parameters = {
        "type": "object",
        "properties": {"path": {"type": "string", "description": "File or directory to describe."}},
        "required": ["path"],
    }

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        path = resolve_arg(ctx, req_str(args, "path"), arg="path")
        return await run_blocking(_file_info, ctx, path)


def _file_info(ctx: ToolContext, path: Path) -> ToolResult:
    """lstat (and stat through a symlink) of ``path``, described. Blocking."""
    check_read(ctx, path)
    st = os.lstat(path)
    lines = [f"path: {display_path(path, ctx.cwd)}"]
    if stat.S_ISLNK(st.st_mode):
        lines.append(f"type: symlink -> {os.readlink(path)}")
        try:
            st = os.stat(path)
        except OSError:
            lines.append("target: missing")
            return ToolResult(output="\n".join(lines))
    kind = "directory" if stat.S_ISDIR(st.st_mode) else "file" if stat.S_ISREG(st.st_mode) else "other"
    if not lines[-1].startswith("type:"):
        lines.append(f"type: {kind}")
    else:
        lines.append(f"target type: {kind}")
    lines.append(f"size: {st.st_size} bytes ({human_size(st.st_size)})")
    lines.append(f"permissions: {stat.filemode(st.st_mode)} ({stat.S_IMODE(st.st_mode):o})")
    mtime = dt.datetime.fromtimestamp(st.st_mtime).astimezone()
    lines.append(f"modified: {mtime.isoformat(timespec='seconds')}")
    return ToolResult(output="\n".join(lines), metadata={"size": st.st_size, "type": kind})


TOOLS = (ReadTool, TailFileTool, ListDirTool, DirectoryTreeTool, FileInfoTool)
