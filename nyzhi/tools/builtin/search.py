"""Searching the tree: grep, glob, fuzzy_find.

ripgrep is used when it is on PATH (it is an order of magnitude faster than any Python walk);
otherwise a pure-Python walker that honours .gitignore gives the same answers. Both engines skip
``.git`` and ignored files; grep, like the original, also skips hidden entries, ``node_modules``
and ``target``. Set ``NYZHI_SEARCH_ENGINE=python`` to force the walker.

Special files: ripgrep skips a FIFO, socket or device it meets as a file to list or search,
but it opens every ignore file (``.gitignore``, ``.ignore``, ``.rgignore``, ``.git/info/exclude``
and the ones above the root) with a blocking ``open``: one FIFO planted as ``.gitignore`` hung
``glob`` for good (and the ``rg`` outlived nyz). So ripgrep runs watched (``run_rg``): blocked
opening a FIFO, it is killed and that call uses the Python walker, which opens without
blocking and skips the file, and the answer says so in one line. A search whose path is itself
a special file is refused.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from pathlib import Path
from typing import Any

import trio

from nyzhi.config.paths import display_path
from nyzhi.config.textfile import file_kind, read_regular
from nyzhi.tools.base import ToolContext, ToolResult
from nyzhi.tools.builtin._proc import run_argv
from nyzhi.tools.builtin.common import ArgError, BuiltinTool, error, opt_int, opt_str, req_str
from nyzhi.tools.ignore import compile_glob, compile_include, walk_files
from nyzhi.tools.offload import run_blocking
from nyzhi.tools.paths import check_read, resolve_arg

MAX_GREP_MATCHES = 500
MAX_GREP_LINE = 500
MAX_GLOB_RESULTS = 1000
GREP_SKIP_DIRS = frozenset({"node_modules", "target"})
_GLOB_CHARS = re.compile(r"[*?\[{]")


def find_rg() -> str | None:
    """The rg binary to use, or None for the Python engine."""
    if os.environ.get("NYZHI_SEARCH_ENGINE", "").lower() == "python":
        return None
    return shutil.which("rg")


def _root(ctx: ToolContext, raw: Any) -> tuple[Path, str]:
    """The search root and how to show it; ``ArgError`` if it does not exist or is a special
    file (reading a FIFO waits for a writer for ever). Blocking (stat)."""
    path = resolve_arg(ctx, raw if raw not in (None, "") else ".", arg="path")
    check_read(ctx, path)
    try:
        mode = path.stat().st_mode
    except OSError:
        raise ArgError(f"path {display_path(path, ctx.cwd)} does not exist; check it with list_dir or "
                       "glob") from None
    if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
        raise ArgError(f"path {display_path(path, ctx.cwd)} is not a regular file or a directory "
                       f"({file_kind(mode)}); not searched")
    return path, display_path(path, ctx.cwd)


FIFO_WAIT = "wait_for_partner"  # the kernel's wait channel of an open(2) of a FIFO
WATCH_EVERY_S = 0.05


class RgStuck(Exception):
    """ripgrep was waiting to open a FIFO (an ignore file): killed; the walker takes over."""


def waiting_on_fifo(pid: int) -> bool:
    """Whether a thread of process ``pid`` is blocked opening a FIFO (``/proc``'s wchan)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/wchan") as fh:
                if fh.read().strip() == FIFO_WAIT:
                    return True
        except OSError:
            continue
    return False


async def run_rg(argv: list[str], cwd: Path, **kw: Any) -> Any:
    """``run_argv`` for ripgrep, watched: ``RgStuck`` (rg killed) when it blocks opening a
    FIFO. ripgrep skips special files it lists or searches, but opens every ignore file
    (``.gitignore``, ``.ignore``, ``.rgignore``, ``.git/info/exclude``) with a blocking
    ``open``; a FIFO planted there hung ``glob`` for good. Watching costs nothing for a run
    shorter than ``WATCH_EVERY_S``, the usual one; a scan of the tree before every call for
    special files cost more than the search itself (670 ms for 32,000 entries)."""
    result: list[Any] = []
    stuck = False
    procs: list[Any] = []
    async with trio.open_nursery() as nursery:

        async def run() -> None:
            result.append(await run_argv(argv, cwd=cwd, started=procs.append, **kw))
            nursery.cancel_scope.cancel()

        async def watch() -> None:
            nonlocal stuck
            while True:
                await trio.sleep(WATCH_EVERY_S)
                if procs and waiting_on_fifo(procs[0].pid):
                    stuck = True
                    nursery.cancel_scope.cancel()  # run_argv kills rg's group on the way out
                    return

        nursery.start_soon(run)
        nursery.start_soon(watch)
    if stuck or not result:
        raise RgStuck()
    return result[0]


def special_note(ctx: ToolContext, found: list[str]) -> str:
    shown = ", ".join(display_path(Path(p), ctx.cwd) for p in found if p) or "an ignore file"
    return (f"[{shown}: not a regular file (a FIFO or the like), so not read as an ignore "
            "file; its rules, if any, were not applied]")


def _clip(line: str) -> str:
    return line if len(line) <= MAX_GREP_LINE else line[:MAX_GREP_LINE] + "…"


# --- grep --------------------------------------------------------------------------------------


async def grep_rg(rg: str, pattern: str, root: Path, shown: str, include: str | None,
                  cwd: Path) -> tuple[list[str], bool]:
    """ripgrep's matches; ``RgStuck`` when it blocked on a special ignore file."""
    argv = [
        rg, "--no-heading", "--with-filename", "--line-number", "--color=never",
        "--no-require-git", "--no-messages", "--max-columns=2000", "--max-columns-preview",
        "--glob=!node_modules/", "--glob=!target/",
    ]
    if include:
        argv.append(f"--glob={include}")
    argv += ["--regexp", pattern, "--", shown]
    res = await run_rg(argv, cwd=cwd, max_lines=MAX_GREP_MATCHES + 1)
    if res.returncode == 2 and not res.stdout and not res.stopped_early:
        raise ArgError(
            f"grep failed: {res.err_text or 'rg exited with status 2'}. If the pattern is the "
            "problem, escape special characters such as ( [ { . * with a backslash."
        )
    lines = res.stdout.decode("utf-8", "replace").split("\n")
    lines = [ln[2:] if ln.startswith("./") else ln for ln in lines if ln]
    truncated = len(lines) > MAX_GREP_MATCHES
    lines = lines[:MAX_GREP_MATCHES]
    # Group by file in path order (rg searches files in parallel); lines within a file stay in order.
    order: dict[str, list[str]] = {}
    for ln in lines:
        order.setdefault(ln.split(":", 1)[0], []).append(_clip(ln))
    return [ln for key in sorted(order) for ln in order[key]], truncated


def grep_python(pattern: str, root: Path, include: str | None, cwd: Path,
                special: list[str] | None = None) -> tuple[list[str], bool]:
    """The fallback engine: whole-file regex search, so only matching lines cost Python time."""
    try:
        rx = re.compile(pattern, re.MULTILINE)
    except re.error as exc:
        raise ArgError(
            f"invalid regex {pattern!r}: {exc}; escape special characters such as ( [ {{ . * "
            "with a backslash to match them literally"
        ) from exc
    inc = compile_include(include) if include else None
    files = [str(root)] if root.is_file() else walk_files(root, skip_dirs=GREP_SKIP_DIRS,
                                                          special=special)
    out: list[str] = []
    for path in files:
        if inc is not None and root.is_dir() and not inc.match(os.path.relpath(path, root)):
            continue
        try:
            data = read_regular(path)  # never blocks on a FIFO swapped in since the walk
        except OSError:
            continue
        if b"\0" in data[:8192]:
            continue  # binary, like rg's default
        text = data.decode("utf-8", "replace")
        shown = display_path(path, cwd)
        last_line = -1
        for m in rx.finditer(text):
            start = text.rfind("\n", 0, m.start()) + 1
            line_no = text.count("\n", 0, start) + 1
            if line_no == last_line:
                continue
            last_line = line_no
            end = text.find("\n", m.start())
            line = text[start : end if end != -1 else len(text)].rstrip("\r")
            out.append(_clip(f"{shown}:{line_no}:{line}"))
            if len(out) > MAX_GREP_MATCHES:
                return out[:MAX_GREP_MATCHES], True
            if m.end() == m.start() and end == -1:
                break
    return out, False


class GrepTool(BuiltinTool):
    name = "grep"
    description = (
        "Search inside files for a regular expression; prints matches as 'path:line:text'. Use "
        "it to find where a name is defined or used; to find files by name, use glob. It "
        "respects .gitignore, skips hidden files, node_modules and target, and stops at 500 "
        "matches (then narrow the pattern, path or include). Example: pattern 'def load_\\w+' "
        "with include '*.py'."
    )
    parameters = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Regular expression; escape ( [ { . * with a backslash to match them literally."},
            "path": {"type": "string", "description": "File or directory to search (default: the working directory)."},
            "include": {"type": "string", "description": "Glob for the file names to search, e.g. '*.py' or '*.{ts,tsx}'."},
        },
        "required": ["pattern"],
    }

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        pattern = req_str(args, "pattern")
        include = opt_str(args, "include")
        root, shown = await run_blocking(_root, ctx, args.get("path"))
        rg = find_rg()
        special: list[str] = []
        stuck = False
        if rg is not None:
            try:
                lines, truncated = await grep_rg(rg, pattern, root, shown, include,
                                                 Path(ctx.cwd))
            except RgStuck:
                stuck, rg = True, None
        if rg is None:
            lines, truncated = await trio.to_thread.run_sync(
                grep_python, pattern, root, include, Path(ctx.cwd), special,
                abandon_on_cancel=True
            )
        lines, withheld = _without_credentials(ctx, lines)
        meta = {"matches": len(lines), "truncated": truncated, "engine": "rg" if rg else "python"}
        if withheld:
            meta["withheld"] = withheld
            lines.append(f"[{len(withheld)} credential file(s) not searched: "
                         f"{', '.join(withheld)}; [agent.trust] allow_paths allows them]")
        note = special_note(ctx, special) if stuck or special else ""
        if note:
            meta["special_ignore_files"] = special
        if not lines:
            where = f" in {shown}" + (f" (files matching {include})" if include else "")
            text = f"No matches for /{pattern}/{where}"
            return ToolResult(output=text + ("\n" + note if note else ""), metadata=meta)
        if note:
            lines.append(note)
        text = "\n".join(lines)
        if truncated:
            text += f"\n... (stopped at {MAX_GREP_MATCHES} matches; narrow the pattern, path or include)"
        return ToolResult(output=text, metadata=meta)


def _without_credentials(ctx: ToolContext, lines: list[str]) -> tuple[list[str], list[str]]:
    """``lines`` minus matches inside credential files (auth.json, ~/.ssh/id_*), and those
    files' names: searching a directory must not read what ``read`` refuses."""
    refuse = getattr(ctx.sandbox, "credential_refusal", None)
    if refuse is None:
        return lines, []
    kept: list[str] = []
    withheld: dict[str, None] = {}
    verdict: dict[str, bool] = {}
    for line in lines:
        name = line.split(":", 1)[0]
        if name not in verdict:
            verdict[name] = bool(refuse(Path(os.path.realpath(Path(ctx.cwd) / name))))
        if verdict[name]:
            withheld[name] = None
        else:
            kept.append(line)
    return kept, list(withheld)


# --- listing files (glob, fuzzy_find) ----------------------------------------------------------


async def list_files(root: Path, *, hidden: bool, prefilter: str | None = None,
                     special: list[str] | None = None) -> list[str]:
    """Paths relative to ``root`` of its non-ignored files (skipping ``.git``), sorted.
    ``special`` collects the ignore files that are not regular files, when the walker read
    them (ripgrep blocked on one, ``run_rg``; ``[""]`` when it was one the walker does not
    read, such as the global excludes file)."""
    rg = find_rg()

    def walk() -> list[str]:
        cut = len(str(root).rstrip("/")) + 1
        return [p[cut:] for p in walk_files(root, hidden=hidden, special=special)]

    if rg is None:
        return await trio.to_thread.run_sync(walk, abandon_on_cancel=True)
    argv = [rg, "--files", "--no-require-git", "--no-messages", "--glob=!.git"]
    if hidden:
        argv.append("--hidden")
    if prefilter and not prefilter.startswith("!"):
        argv.append(f"--glob={prefilter}")
    try:
        res = await run_rg([*argv, "--", "."], cwd=root)
    except RgStuck:
        before = len(special) if special is not None else 0
        files = await trio.to_thread.run_sync(walk, abandon_on_cancel=True)
        if special is not None and len(special) == before:
            special.append("")  # rg's own ignore file (.rgignore, global excludes)
        return files
    if res.returncode == 2 and not res.stdout:
        raise ArgError(f"listing files failed: {res.err_text}")
    return sorted(
        p[2:] if p.startswith("./") else p
        for p in res.stdout.decode("utf-8", "surrogateescape").split("\n") if p
    )


def split_glob(pattern: str) -> tuple[str, str]:
    """Leading literal directories of a glob and the rest: 'src/**/*.py' -> ('src', '**/*.py')."""
    parts = pattern.split("/")
    literal: list[str] = []
    while len(parts) > 1 and not _GLOB_CHARS.search(parts[0]):
        literal.append(parts.pop(0))
    base = "/".join(literal)
    if pattern.startswith("/") and not base:
        base = "/"
    return base, "/".join(parts)


class GlobTool(BuiltinTool):
    name = "glob"
    description = (
        "Find files by name pattern; lists matching paths, sorted. '*' matches within one "
        "directory and '**' across directories: '**/*.py' finds Python files at any depth, "
        "'src/**/test_*.ts' tests under src, '*.{js,ts}' two extensions. To search inside "
        "files, use grep. It respects .gitignore, skips .git and lists at most 1000 paths."
    )
    parameters = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Glob pattern, relative to path."},
            "path": {"type": "string", "description": "Directory to search from (default: the working directory)."},
        },
        "required": ["pattern"],
    }

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        pattern = req_str(args, "pattern")
        base, rest = split_glob(pattern)

        def find_root() -> tuple[Path, bool, bool]:
            root, _ = _root(ctx, args.get("path"))
            return root, root.is_dir(), (root / base).is_dir()

        root, root_is_dir, base_is_dir = await run_blocking(find_root)
        if not root_is_dir:
            return error(
                f"path {display_path(root, ctx.cwd)} is not a directory; glob searches from a directory "
                "(use read or file_info for a file)"
            )
        if base:
            root = root / base
        if not base_is_dir or ".git" in base.split("/"):
            return ToolResult(output=f"No files match {pattern}", metadata={"count": 0})
        rx = compile_glob(rest)
        special: list[str] = []
        files = await list_files(root, hidden=True, prefilter=rest, special=special)
        matched = [p for p in files if rx.match(p)]
        total = len(matched)
        note = "\n" + special_note(ctx, special) if special else ""
        if not matched:
            return ToolResult(output=f"No files match {pattern}{note}", metadata={"count": 0})
        prefix = display_path(root, ctx.cwd)  # once, not per file
        prefix = "" if prefix == "." else prefix.rstrip("/") + "/"
        shown = [prefix + p for p in matched[:MAX_GLOB_RESULTS]]
        text = "\n".join(shown)
        if total > MAX_GLOB_RESULTS:
            text += f"\n... ({total - MAX_GLOB_RESULTS} more files; use a narrower pattern)"
        text += note
        return ToolResult(output=text, metadata={"count": total, "truncated": total > MAX_GLOB_RESULTS})


def fuzzy_score(query: str, path: str) -> float | None:
    """Higher is better; None if ``query``'s characters do not appear in order in ``path``."""
    q, p = query.lower(), path.lower()
    base_start = p.rfind("/") + 1
    score = 0.0
    pos = -1
    prev = -2
    for ch in q:
        pos = p.find(ch, pos + 1)
        if pos == -1:
            return None
        if pos == prev + 1:
            score += 5
        if pos == 0 or p[pos - 1] in "/_-. ":
            score += 8
        if pos >= base_start:
            score += 2
        prev = pos
    name = p[base_start:]
    if q in name:
        score += 25 + (15 if name.startswith(q) else 0)
    elif q in p:
        score += 10
    return score - len(p) / 20


class FuzzyFindTool(BuiltinTool):
    name = "fuzzy_find"
    deferred = True  # glob and grep cover most searches: listed in one line until loaded
    description = (
        "Find files whose path contains the query's characters in order, best matches first: "
        "'usrctl' finds user_controller.py. Use it when you know roughly what a file is called; "
        "glob is better for exact patterns. It searches from the working directory and "
        "respects .gitignore."
    )
    parameters = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Approximate file name or path."},
            "max_results": {"type": "integer", "description": "How many paths to return (default 20, at most 200)."},
        },
        "required": ["query"],
    }

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        query = req_str(args, "query").strip().replace(" ", "")
        if not query:
            raise ArgError("'query' must contain non-space characters")
        limit = opt_int(args, "max_results", 20, minimum=1, maximum=200)
        root = Path(ctx.cwd)
        special: list[str] = []
        files = await list_files(root, hidden=False, special=special)
        rx = re.compile(".*?".join(re.escape(c) for c in query), re.IGNORECASE)
        scored = []
        for rel in files:
            if rx.search(rel):
                s = fuzzy_score(query, rel)
                if s is not None:
                    scored.append((-s, rel))
        scored.sort()
        if not scored:
            return ToolResult(output=f"No files match '{query}'", metadata={"count": 0})
        return ToolResult(output="\n".join(rel for _, rel in scored[:limit]), metadata={"count": len(scored)})


TOOLS = (GrepTool, GlobTool, FuzzyFindTool)
