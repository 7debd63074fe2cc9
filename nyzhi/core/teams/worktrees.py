"""A git worktree per team member (``nyz team start --worktrees``).

Each teammate works in ``.nyzhi/worktrees/<member>`` on branch ``nyz/<team>/<member>``, so
members never edit the same checkout; ``nyz team merge`` brings one member's work back into
the workspace's current branch, and ``nyz team delete`` removes the worktrees (the branches
stay: they hold the work). ``.nyzhi/worktrees/`` is added to the repository's
``info/exclude`` so the worktrees never show up as untracked files of the main checkout.

The ``worktree_create`` and ``worktree_remove`` hooks fire around these (``fire_hook``).
Blocking (git subprocesses): call from a worker thread.
"""

from __future__ import annotations

from pathlib import Path

from nyzhi.teams.names import TeamError
from nyzhi.tools.gitsafe import run_git

WORKTREES = Path(".nyzhi") / "worktrees"
EXCLUDE_LINE = "/.nyzhi/worktrees/"


def branch_of(team: str, member: str) -> str:
    return f"nyz/{team}/{member}"


def _git(cwd: Path, *args: str) -> str:
    """``git ARGS`` neutralised (``nyzhi.tools.gitsafe``): worktrees are written by sandboxed
    teammates, so their config, hooks and attributes must not run anything out here."""
    proc = run_git(cwd, *args, text=True)
    if proc.returncode != 0:
        raise TeamError(f"git {' '.join(args)} failed in {cwd}: "
                        f"{(proc.stderr or proc.stdout).strip()}")
    return proc.stdout


def repo_root(workspace: Path) -> Path:
    try:
        return Path(_git(workspace, "rev-parse", "--show-toplevel").strip())
    except TeamError:
        raise TeamError(f"--worktrees needs a git repository; {workspace} is not in one") from None


def create(workspace: Path, team: str, member: str) -> Path:
    """The member's worktree (made if missing), on its branch (made from HEAD if missing)."""
    root = repo_root(workspace)
    path = root / WORKTREES / member
    if (path / ".git").exists():
        return path
    _exclude(root)
    branch = branch_of(team, member)
    exists = run_git(root, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}").returncode == 0
    path.parent.mkdir(parents=True, exist_ok=True)
    if exists:
        _git(root, "worktree", "add", str(path), branch)
    else:
        _git(root, "worktree", "add", "-b", branch, str(path))
    return path


def remove(workspace: Path, path: Path) -> bool:
    """Remove a worktree (its uncommitted changes too: commit or merge first). False if it
    was already gone."""
    root = repo_root(workspace)
    if not path.exists():
        run_git(root, "worktree", "prune")
        return False
    _git(root, "worktree", "remove", "--force", str(path))
    return True


def merge(workspace: Path, team: str, member: str, path: Path | None) -> str:
    """Commit what the member left uncommitted in its worktree, then merge its branch into
    the workspace's current branch. Returns git's summary; a conflict is a ``TeamError``
    (the merge is left for the user to resolve, as git leaves it)."""
    root = repo_root(workspace)
    if path is not None and path.exists() and _git(path, "status", "--porcelain").strip():
        _git(path, "add", "-A")
        _git(path, *_identity(path), "commit", "-q", "-m", f"nyz team {team}: {member}'s work")
    return _git(root, *_identity(root), "merge", "--no-edit", branch_of(team, member)).strip()


def _identity(cwd: Path) -> list[str]:
    """The user's git identity if they have one; else one for nyz (a commit needs one)."""
    has = run_git(cwd, "config", "user.email").returncode == 0
    return [] if has else ["-c", "user.name=nyz", "-c", "user.email=nyz@localhost"]


def _exclude(root: Path) -> None:
    exclude = Path(_git(root, "rev-parse", "--git-path", "info/exclude").strip())
    if not exclude.is_absolute():
        exclude = root / exclude
    text = exclude.read_text() if exclude.exists() else ""
    if EXCLUDE_LINE not in text.splitlines():
        exclude.parent.mkdir(parents=True, exist_ok=True)
        with open(exclude, "a") as fh:
            fh.write(("" if not text or text.endswith("\n") else "\n") + EXCLUDE_LINE + "\n")
