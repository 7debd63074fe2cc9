"""The project an agent works in: its root, its rules text and a few facts about it.

The root is the nearest ancestor of the working directory holding ``.nyzhi/``, ``.claude/``
or ``.git`` (file or directory: worktrees and submodules have a ``.git`` file); with none of
them the working directory itself is the root. ``~/.nyzhi`` is the user's nyzhi home, not a
project marker, so it is skipped: otherwise every directory under HOME would become "the
home project".
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from nyzhi import records
from nyzhi.config import paths
from nyzhi.config.prompt_files import prompt_roots, read_prompt_file

ConfigSourceKind = Literal["nyzhi", "claude", "cursor", "git", "none"]

PRIMARY_RULE_FILES = ("AGENTS.md", ".nyzhi/rules.md", ".nyzhi/instructions.md", "CLAUDE.md",
                      ".cursorrules")
LOCAL_RULE_FILES = ("NYZHI.local.md", ".nyzhi/local.md")
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

    @property
    def nyzhi_dir(self) -> Path:
        return self.root / ".nyzhi"

    @property
    def project_config_path(self) -> Path:
        return self.nyzhi_dir / "config.toml"

    @property
    def local_config_path(self) -> Path:
        return self.nyzhi_dir / "config.local.toml"


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


def _read(path: Path, root: Path) -> str:
    """The file's text for the prompt, or "" when it is absent, unreadable or refused
    (``prompt_files``: a symlink out of the workspace is never followed into a prompt)."""
    try:
        return read_prompt_file(path, prompt_roots(root)).strip()
    except OSError:  # absent, a directory, unreadable, or refused (with a notice)
        return ""


def load_rules(root: Path) -> tuple[str, tuple[Path, ...]]:
    """Rules in order: the first non-empty primary file, the first non-empty local file,
    then ``.nyzhi/rules/*.md`` sorted by name. Returns (text, files used)."""
    picked: list[tuple[Path, str]] = []
    for group in (PRIMARY_RULE_FILES, LOCAL_RULE_FILES):
        for rel in group:
            text = _read(root / rel, root)
            if text:
                picked.append((root / rel, text))
                break
    rules_dir = root / ".nyzhi" / "rules"
    if rules_dir.is_dir():
        for path in sorted(rules_dir.glob("*.md")):
            text = _read(path, root)
            if text:
                picked.append((path, text))
    return "\n\n".join(t for _, t in picked), tuple(p for p, _ in picked)


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
    root = find_root(Path.cwd() if cwd is None else Path(cwd), env)
    rules_text, rule_files = load_rules(root)
    project_type = next((kind for name, kind in PROJECT_TYPES if (root / name).exists()), None)
    return Workspace(
        root=root,
        rules_text=rules_text,
        rule_files=rule_files,
        project_type=project_type,
        config_source=_config_source(root),
        git_branch=_git_branch(root),
    )
