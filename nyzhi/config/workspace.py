"""The project an agent works in: its root, its rules text and a few facts about it.

The root is the nearest ancestor of the working directory holding ``.nyzhi/``, ``.claude/``
or ``.git`` (file or directory: worktrees and submodules have a ``.git`` file); with none of
them the working directory itself is the root. ``~/.nyzhi`` is the user's nyzhi home, not a
project marker, so it is skipped: otherwise every directory under HOME would become "the
home project".

The rules (``load_rules``), in the order they reach the prompt, later ones winning where they
disagree:

1. the user's own rules: ``~/.claude/CLAUDE.md`` and ``~/.codex/AGENTS.md`` (``$CODEX_HOME``
   when set; exactly those two files are added to the prompt-file roots, so a symlink from
   them elsewhere is refused);
2. the project root's first non-empty primary file (``PRIMARY_RULE_FILES``), its first
   non-empty local file (``LOCAL_RULE_FILES``, ``CLAUDE.local.md`` among them), then
   ``.nyzhi/rules/*.md``;
3. the rules of each directory from below the root down to the working directory
   (``SUBDIR_RULE_FILES``, first non-empty per directory), as Codex reads AGENTS.md.

They are read once, when the session starts: a subdirectory the agent moves into later adds
nothing mid-session, so the prompt prefix stays byte-identical (and cached) for the session.

A ``CLAUDE*.md`` file may import others with ``@path`` (relative to the importing file, ``~/``
for the home directory), as Claude Code does, up to ``MAX_IMPORT_HOPS`` hops; an import in a
code span or block is text. An imported file is read through the same check as every prompt
file, and one that is missing or refused is a notice (``Workspace.notices``), not a failure.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import attrs

from nyzhi import records
from nyzhi.config import paths
from nyzhi.config.prompt_files import prompt_roots, read_prompt_file
from nyzhi.config.secret_files import workspace_secret

ConfigSourceKind = Literal["nyzhi", "claude", "cursor", "git", "none"]

PRIMARY_RULE_FILES = ("AGENTS.md", ".nyzhi/rules.md", ".nyzhi/instructions.md", "CLAUDE.md",
                      ".cursorrules")
LOCAL_RULE_FILES = ("NYZHI.local.md", ".nyzhi/local.md", "CLAUDE.local.md")
SUBDIR_RULE_FILES = ("AGENTS.md", "CLAUDE.md")
MAX_IMPORT_HOPS = 5  # Claude Code's limit for @path imports
PROJECT_TYPES = (
    ("Cargo.toml", "rust"),
    ("package.json", "node"),
    ("pyproject.toml", "python"),
    ("setup.py", "python"),
    ("requirements.txt", "python"),
    ("go.mod", "go"),
)


@records.frozen
class Workspace:
    root: Path
    rules_text: str  # the rule files' contents joined by blank lines ("" when none)
    rule_files: tuple[Path, ...]  # the files rules_text came from, in order
    project_type: str | None  # "rust" | "node" | "python" | "go" | None
    config_source: ConfigSourceKind
    git_branch: str | None
    notices: tuple[str, ...] = ()  # rules imports that were missing or refused

    @property
    def nyzhi_dir(self) -> Path:
        return self.root / ".nyzhi"

    @property
    def project_config_path(self) -> Path:
        return self.nyzhi_dir / "config.toml"

    @property
    def local_config_path(self) -> Path:
        return local_layer_path(self.nyzhi_dir.parent)


@workspace_secret("the workspace's private config layer (.nyzhi/config.local.toml, it can "
                  "hold api_key)", name="local_config")
def local_layer_path(root: Path) -> Path:
    """``root/.nyzhi/config.local.toml``: the private layer, which may hold keys (masked)."""
    return Path(root) / ".nyzhi" / "config.local.toml"


def _is_marker_dir(candidate: Path, user_home: Path) -> bool:
    nyzhi = candidate / ".nyzhi"
    if nyzhi.is_dir() and nyzhi.resolve() != user_home.resolve():
        return True
    return (candidate / ".claude").is_dir() or (candidate / ".git").exists()


def find_root(cwd: Path, env: Mapping[str, str] | None = None) -> Path:
    """The nearest ancestor of ``cwd`` (itself included) that marks a project, else ``cwd``."""
    cwd = cwd.resolve()
    user_home = paths.nyzhi_home(env)
    for candidate in (cwd, *cwd.parents):
        if _is_marker_dir(candidate, user_home):
            return candidate
    return cwd


def _read(path: Path, root: Path, roots: tuple[Path, ...] | None = None) -> str:
    """The file's text for the prompt, or "" when it is absent, unreadable or refused
    (``prompt_files``: a symlink out of the workspace is never followed into a prompt)."""
    try:
        return read_prompt_file(path, roots or prompt_roots(root)).strip()
    except OSError:  # absent, a directory, unreadable, or refused (with a notice)
        return ""


_FENCE = re.compile(r"^\s*(```|~~~)")
_IMPORT = re.compile(r"(?:(?<=\s)|^)@((?:~/|\.{1,2}/|/)?[\w.~/-]*\w)")
_CODE_SPAN = re.compile(r"`[^`]*`")


def import_paths(text: str) -> list[str]:
    """The ``@path`` imports of a CLAUDE.md text, in order, outside code blocks and spans."""
    found: list[str] = []
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            found += _IMPORT.findall(_CODE_SPAN.sub("", line))
    return list(dict.fromkeys(found))


@records.define
class _Rules:
    """What ``load_rules`` gathers: (file, text) pieces, and notices about imports."""

    roots: tuple[Path, ...]
    home: Path
    picked: list[tuple[Path, str]] = attrs.field(factory=list)
    notices: list[str] = attrs.field(factory=list)
    seen: set[str] = attrs.field(factory=set)

    @property
    def text(self) -> str:
        return "\n\n".join(t for _, t in self.picked if t)

    @property
    def files(self) -> tuple[Path, ...]:
        return tuple(p for p, _ in self.picked)

    def add(self, path: Path, text: str) -> None:
        self.seen.add(os.path.realpath(path))
        self.picked.append((path, text))
        if path.name.startswith("CLAUDE"):
            self.imports(path, text, 0)

    def imports(self, path: Path, text: str, hops: int) -> None:
        for ref in import_paths(text):
            target = (self.home / ref[2:]) if ref.startswith("~/") else path.parent / ref
            if os.path.realpath(target) in self.seen:
                continue  # a cycle, or a file already in the rules
            if hops + 1 > MAX_IMPORT_HOPS:
                self.notices.append(f"{path}: @{ref} not imported: imports go at most "
                                    f"{MAX_IMPORT_HOPS} hops deep")
                continue
            try:
                body = read_prompt_file(target, self.roots).strip()
            except FileNotFoundError:
                self.notices.append(f"{path}: @{ref} not imported: {target} does not exist")
                continue
            except OSError as exc:  # refused (a link out of the roots), a directory, unreadable
                self.notices.append(f"{path}: @{ref} not imported: {exc}")
                continue
            self.seen.add(os.path.realpath(target))
            self.picked.append((target, body))
            if body:
                self.imports(target, body, hops + 1)


def load_rules(root: Path, cwd: Path | None = None,
               env: Mapping[str, str] | None = None) -> tuple[str, tuple[Path, ...]]:
    """Rules text and the files it came from, in the order of the module docstring."""
    rules = gather_rules(root, cwd, env)
    return rules.text, rules.files


def user_rule_files(env: Mapping[str, str] | None = None) -> tuple[Path, ...]:
    """The user's own rules files: ``~/.claude/CLAUDE.md`` and Codex's ``AGENTS.md`` in
    ``$CODEX_HOME`` (default ``~/.codex``), as Codex finds it."""
    home = paths.home_dir(env)
    codex = (os.environ if env is None else env).get("CODEX_HOME", "")
    codex_home = Path(codex) if os.path.isabs(codex) else home / ".codex"
    return (home / ".claude" / "CLAUDE.md", codex_home / "AGENTS.md")


def gather_rules(root: Path, cwd: Path | None = None,
                 env: Mapping[str, str] | None = None) -> _Rules:
    """Every rules file of the module docstring, in order, with the notices about imports."""
    home = paths.home_dir(env)
    user_files = user_rule_files(env)
    rules = _Rules((*prompt_roots(root, env), *user_files), home)
    for path in user_files:
        text = _read(path, root, rules.roots)
        if text:
            rules.add(path, f"<!-- the user's rules, from {path} -->\n{text}")
    for group in (PRIMARY_RULE_FILES, LOCAL_RULE_FILES):
        for rel in group:
            text = _read(root / rel, root, rules.roots)
            if text:
                rules.add(root / rel, text)
                break
    rules_dir = root / ".nyzhi" / "rules"
    if rules_dir.is_dir():
        for path in sorted(rules_dir.glob("*.md")):
            text = _read(path, root, rules.roots)
            if text:
                rules.add(path, text)
    if cwd is not None and cwd != root and cwd.is_relative_to(root):
        here = root
        for part in cwd.relative_to(root).parts:
            here = here / part
            for name in SUBDIR_RULE_FILES:
                text = _read(here / name, root, rules.roots)
                if text:
                    rel = (here / name).relative_to(root)
                    rules.add(here / name, f"<!-- rules for {rel.parent}/ -->\n{text}")
                    break
    return rules


def _git_branch(root: Path) -> str | None:
    head = _read(root / ".git" / "HEAD", root)  # the branch name goes into the prompt too
    prefix = "ref: refs/heads/"
    if head.startswith(prefix):
        return head[len(prefix):]
    return None


def _config_source(root: Path) -> ConfigSourceKind:
    if (root / ".nyzhi").is_dir():
        return "nyzhi"
    if (root / ".claude").is_dir():
        return "claude"
    if (root / ".cursorrules").exists():
        return "cursor"
    if (root / ".git").exists():
        return "git"
    return "none"


def detect_workspace(cwd: Path | None = None, env: Mapping[str, str] | None = None) -> Workspace:
    """Describe the project containing ``cwd`` (default: the process's working directory)."""
    start = (Path.cwd() if cwd is None else Path(cwd)).resolve()
    root = find_root(start, env)
    rules = gather_rules(root, start, env)
    project_type = next((kind for name, kind in PROJECT_TYPES if (root / name).exists()), None)
    return Workspace(
        root=root,
        rules_text=rules.text,
        rule_files=rules.files,
        project_type=project_type,
        config_source=_config_source(root),
        git_branch=_git_branch(root),
        notices=tuple(rules.notices),
    )
