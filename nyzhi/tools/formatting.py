"""``[agent] format_on_edit = "auto"``: the project's own formatter over the files an edit wrote.

A model writes code that is right but not laid out as the project's formatter would, and the
next ``ruff format`` or ``prettier`` run in CI then fails, or shows a diff the user did not
ask for. With ``auto``, after a file-writing tool (``write``, ``edit``, ``multi_edit``,
``apply_patch``, ``batch_apply``) the formatter the project itself uses runs on the files it
changed:

* Python: ``ruff format`` when the project configures ruff (``[tool.ruff]`` in pyproject.toml,
  ``ruff.toml``), else ``black`` when it configures black (``[tool.black]``);
* JavaScript, TypeScript, JSON, CSS, Markdown, YAML, HTML: ``prettier`` when package.json
  names it or a ``.prettierrc*`` exists (the project's ``node_modules/.bin/prettier`` first);
* Go ``gofmt``, Rust ``rustfmt`` (with Cargo.toml's edition), C and C++ ``clang-format``
  when a ``.clang-format`` exists, shell ``shfmt``.

Only a formatter that is installed runs, and it runs as ``bash`` does: through the agent's
executor, in the sandbox, with the tools' environment; a repository's ``node_modules`` is
code the project wrote, and the sandbox is what keeps it to the workspace. A formatter that
fails changes nothing here and is said in one line. When it changed a file, the tool's result
says so (the model must read the file again before an exact edit), the change log's ``after``
becomes the formatted bytes (``/undo`` of the edit restores what was there before it), and
the stale-write ledger learns the new content (the formatter's change is not a stranger's).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from nyzhi import records
from nyzhi.config.paths import display_path

FORMAT_TIMEOUT_S = 60.0
MODES = ("off", "auto")


@records.frozen
class Formatter:
    name: str  # as the model is told: "ruff format"
    suffixes: frozenset[str]
    binary: str
    args: tuple[str, ...]  # before the file names
    uses: Callable[[Path], bool]  # whether the project (its root) uses this formatter


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
    except OSError:
        return ""


def _ruff(root: Path) -> bool:
    return ("[tool.ruff" in _text(root / "pyproject.toml")
            or (root / "ruff.toml").is_file() or (root / ".ruff.toml").is_file())


def _black(root: Path) -> bool:
    return "[tool.black" in _text(root / "pyproject.toml")


def _prettier(root: Path) -> bool:
    return (re.search(r'"prettier"\s*:', _text(root / "package.json")) is not None
            or any(root.glob(".prettierrc*")) or (root / "prettier.config.js").is_file())


def _clang_format(root: Path) -> bool:
    return (root / ".clang-format").is_file() or (root / "_clang-format").is_file()


def _always(_root: Path) -> bool:
    return True


_WEB = frozenset({".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".json", ".css", ".scss",
                  ".less", ".md", ".yaml", ".yml", ".html", ".vue"})
FORMATTERS: tuple[Formatter, ...] = (
    Formatter("ruff format", frozenset({".py", ".pyi"}), "ruff", ("format", "--"), _ruff),
    Formatter("black", frozenset({".py", ".pyi"}), "black", ("-q", "--"), _black),
    Formatter("prettier", _WEB, "prettier", ("--write", "--log-level", "warn", "--"), _prettier),
    Formatter("gofmt", frozenset({".go"}), "gofmt", ("-w", "--"), _always),
    Formatter("rustfmt", frozenset({".rs"}), "rustfmt", (), _always),
    Formatter("clang-format", frozenset({".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh"}),
              "clang-format", ("-i", "--"), _clang_format),
    Formatter("shfmt", frozenset({".sh", ".bash"}), "shfmt", ("-w", "--"), _always),
)


def _binary(formatter: Formatter, root: Path, path_env: str | None) -> str | None:
    """The formatter's program: the project's own (node_modules, its venv) first, then PATH."""
    for local in (root / "node_modules" / ".bin" / formatter.binary,
                  root / ".venv" / "bin" / formatter.binary):
        if os.access(local, os.X_OK) and local.is_file():
            return str(local)
    return shutil.which(formatter.binary, path=path_env)


def _rust_edition(root: Path) -> tuple[str, ...]:
    match = re.search(r'^\s*edition\s*=\s*"(\d{4})"', _text(root / "Cargo.toml"), re.M)
    return ("--edition", match.group(1)) if match else ()


def plan(root: Path, paths: Sequence[Path], path_env: str | None = None
         ) -> list[tuple[Formatter, str, list[Path]]]:
    """(formatter, its program, the files for it) for the files a project formatter covers."""
    chosen: dict[str, tuple[Formatter, str, list[Path]]] = {}
    for path in paths:
        suffix = path.suffix.lower()
        for formatter in FORMATTERS:
            if suffix not in formatter.suffixes or not formatter.uses(root):
                continue
            program = _binary(formatter, root, path_env)
            if program is None:
                continue  # the next one for this language (black when ruff is not there)
            chosen.setdefault(formatter.name, (formatter, program, []))[2].append(path)
            break
    return list(chosen.values())


async def format_changes(ctx: Any, changes: list[Any]) -> str:
    """Run the project's formatters over the files ``changes`` wrote; the line for the model
    ("" when nothing was formatted). ``changes`` are updated to the formatted bytes."""
    from nyzhi.tools.offload import run_blocking
    from nyzhi.tools.paths import ToolPathError, check_read, read_bytes_nofollow

    def read_back(path: Path) -> tuple[Path, bytes]:
        real = check_read(ctx, path)  # the path check every read asks, symlinks refused
        return real, read_bytes_nofollow(real)

    written = {c.path: c for c in changes if c.kind == "file" and c.after is not None}
    if not written:
        return ""
    root = Path(ctx.workspace_root)
    jobs = await run_blocking(plan, root, list(written), os.environ.get("PATH"))
    if not jobs:
        return ""
    from nyzhi.tools.builtin.bash import pick_executor

    executor, _ = pick_executor(ctx, None)
    said: list[str] = []
    for formatter, program, files in jobs:
        args = list(formatter.args)
        if formatter.binary == "rustfmt":
            args = [*_rust_edition(root), "--"]
        command = shlex.join([program, *args, *(str(p) for p in files)])
        try:
            res = await executor.run(command, cwd=ctx.cwd, timeout=FORMAT_TIMEOUT_S,
                                     sandbox=ctx.sandbox)
        except Exception as exc:  # refused by the sandbox, no shell: the edit stands as written
            said.append(f"{formatter.name} did not run ({str(exc).splitlines()[0]})")
            continue
        if res.exit_code != 0:
            last = next((ln for ln in reversed(res.output.splitlines()) if ln.strip()), "")
            said.append(f"{formatter.name} failed (exit {res.exit_code}"
                        f"{': ' + last.strip()[:200] if last else ''}); the edit stands as written")
            continue
        changed = []
        for path in files:
            try:
                real, now = await run_blocking(read_back, path)
            except (OSError, ValueError, ToolPathError):
                continue
            change = written[path]
            if now != change.after:
                change.after = now
                if ctx.seen is not None:
                    ctx.seen.saw(real, now)
                changed.append(display_path(path, ctx.cwd))
        if changed:
            said.append(f"{formatter.name} reformatted {', '.join(changed)}; read again before "
                        "an exact edit")
    return "; ".join(said)


