"""``nyz init``: create ``.nyzhi/`` in the workspace root, never overwriting anything.

The config template is all comments. Lines starting with a single ``# `` are examples that
are valid if uncommented (a test checks this); ``## `` lines are prose.
"""

from __future__ import annotations

import os
from pathlib import Path

from nyzhi import records
from nyzhi.config.modes import SandboxLevel, TrustMode, choices

CONFIG_TEMPLATE = f"""\
## Project configuration for nyzhi. Layers: global (~/.config/nyzhi/config.toml) <
## this file < .nyzhi/config.local.toml (personal, keep out of git). See docs/config.md.
## Uncomment what you need; `nyz config show` prints the merged result.

## Which model service to use (any [provider.NAME] table; built-ins: openai, anthropic,
## gemini, openrouter, groq, together, deepseek, ollama, llama-cpp).
# [provider]
# default = "anthropic"

# [provider.anthropic]
# model = "claude-sonnet-4-5"

## A custom OpenAI-compatible service; its key is read from MY_SERVICE_API_KEY.
# [provider.my-service]
# api_style = "openai"
# base_url = "http://localhost:8000/v1"
# model = "my-model"

# [agent]
# max_steps = 100
# custom_instructions = "Prefer small, reviewed changes."

## {" | ".join(choices(TrustMode))}
# [agent.trust]
# mode = "limited"
# allow_tools = ["read", "grep", "glob"]
# deny_paths = [".env", "secrets/**"]

## {" | ".join(choices(SandboxLevel))}
# [agent.sandbox]
# level = "{SandboxLevel.WORKSPACE_WRITE}"
# network = true

# [[agent.hooks]]
# event = "after_edit"
# command = "ruff format {{file}}"
# pattern = "*.py"
# timeout = 30

## A custom command, run as /audit FILE (also from .nyzhi/commands/*.md).
# [[agent.commands]]
# name = "audit"
# prompt = "Audit $ARGUMENTS for bugs and missing tests."
# description = "Audit code"

## An MCP server: its tools are mcp__files__TOOL, gated like ours (also from .mcp.json).
# [mcp.servers.files]
# command = "npx"
# args = ["-y", "@modelcontextprotocol/server-filesystem", "."]

# [[nodes]]
# name = "build-box"
# host = "build.example.com"
# user = "ci"
"""

RULES_TEMPLATE = """\
# Project rules

Instructions every nyzhi agent in this project follows. Keep them short and concrete:
how to build and test, conventions to respect, things never to do.
"""

# (Not "review": /review is a built-in command, and built-ins win over custom commands.)
EXPLAIN_COMMAND = """\
# Explain code
Explain what $ARGUMENTS does, how it is used and anything surprising in it. Change nothing.
"""

# Run-time files nyz writes under ``.nyzhi/`` (compaction archives, todo lists): they hold
# what a session said and did, so they are never committed (``ignore_runtime_files``).
RUNTIME_IGNORES = ("/context/", "/todos/", "/state/")
_RUNTIME_HEADER = "# run-time files nyz writes here (never commit them)"

GITIGNORE = f"""\
# personal, machine-local files
config.local.toml
local.md

{_RUNTIME_HEADER}
{chr(10).join(RUNTIME_IGNORES)}
"""

FILES: tuple[tuple[str, str], ...] = (
    (".nyzhi/config.toml", CONFIG_TEMPLATE),
    (".nyzhi/rules.md", RULES_TEMPLATE),
    (".nyzhi/commands/explain.md", EXPLAIN_COMMAND),
    (".nyzhi/.gitignore", GITIGNORE),
)
DIRS: tuple[str, ...] = (".nyzhi", ".nyzhi/agents", ".nyzhi/commands", ".nyzhi/skills",
                         ".nyzhi/rules")


@records.frozen
class ScaffoldReport:
    created: tuple[Path, ...]
    skipped: tuple[Path, ...]  # already existed, left untouched


def ignore_runtime_files(under: Path) -> None:
    """Make sure the ``.nyzhi/.gitignore`` of the ``.nyzhi`` folder holding ``under`` (a
    run-time file or folder nyz is about to write) lists ``RUNTIME_IGNORES``, so
    ``git add -A`` (``git_commit``) never stages them. Adds the missing lines once; nothing
    happens outside a ``.nyzhi`` folder, and a failure to write is left to the writer that
    follows (the ignore file is a convenience, not the run-time file itself)."""
    from nyzhi.config.fsutil import atomic_write

    nyzhi = next((p for p in (Path(under), *Path(under).parents) if p.name == ".nyzhi"), None)
    if nyzhi is None:
        return
    path = nyzhi / ".gitignore"
    text = _own_ignore_file(nyzhi, path)
    if text is None:
        return
    have = {line.strip() for line in text.splitlines()}
    missing = [p for p in RUNTIME_IGNORES if p not in have and p.strip("/") not in have
               and p.lstrip("/") not in have]
    if not missing:
        return
    lead = "" if not text or text.endswith("\n") else "\n"
    added = "\n".join((_RUNTIME_HEADER, *missing))
    try:
        atomic_write(path, f"{text}{lead}{chr(10) if text else ''}{added}\n".encode())
    except OSError:
        return


def _own_ignore_file(nyzhi: Path, path: Path) -> str | None:
    """The text of ``.nyzhi/.gitignore`` ("" when absent), or None to leave it alone.

    nyz runs this unsandboxed, so the file is read only when it is a plain file of its own: a
    ``.nyzhi`` folder or ``.gitignore`` that is a symlink (or a hard link to another file) may
    have been planted to make nyz copy what it points at (``/proc/self/environ``) into the
    workspace, where ``git_commit`` would commit it. The read itself refuses a symlink
    (``O_NOFOLLOW``), so one swapped in after the check fails too."""
    import stat

    if os.path.islink(nyzhi):
        return None
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return ""
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            return fh.read(1 << 20).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def scaffold(root: Path) -> ScaffoldReport:
    """Create the ``.nyzhi/`` skeleton under ``root``; existing paths are skipped."""
    created: list[Path] = []
    skipped: list[Path] = []
    for rel in DIRS:
        path = root / rel
        if path.exists():
            skipped.append(path)
        else:
            path.mkdir(parents=True)
            created.append(path)
    for rel, text in FILES:
        path = root / rel
        try:
            with open(path, "x", encoding="utf-8") as fh:  # "x": never clobber
                fh.write(text)
            created.append(path)
        except FileExistsError:
            skipped.append(path)
    return ScaffoldReport(tuple(created), tuple(skipped))


def init_lines(cwd: Path | None = None) -> list[str]:
    """Scaffold the workspace containing ``cwd`` (default: the working directory) and say what
    was created and what was left alone; ``nyz init`` prints it, the ``/init`` command shows
    it."""
    from nyzhi.config.workspace import detect_workspace

    root = detect_workspace(cwd).root
    report = scaffold(root)
    lines = [f"created  {path.relative_to(root)}{'/' if path.is_dir() else ''}"
             for path in report.created]
    lines += [f"exists   {path.relative_to(root)}{'/' if path.is_dir() else ''} (left unchanged)"
              for path in report.skipped]
    if not report.created:
        lines.append(f"nothing to do: .nyzhi/ is already set up in {root}")
    else:
        lines.append(f"initialised .nyzhi/ in {root}")
    return lines
