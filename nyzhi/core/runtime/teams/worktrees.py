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

import shlex
import subprocess
from pathlib import Path
from typing import Any

from nyzhi import spawn
from nyzhi.team_files.names import TeamError
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


# ---- a member on another host: a clone on its node ---------------------------------------
#
# A member with a ``node`` cannot use a worktree of the lead's repository: it works in its own
# clone on the node, made by pushing the lead's HEAD there over the same SSH (no URL to
# configure, no access from the node to anywhere). ``nyz team merge`` commits what it left,
# fetches its branch back over SSH and merges it like a local member's. The branch stays on
# the node whatever happens to the lead: ``nyz team status`` lists where.

REMOTE_CHECKOUTS = "nyz-teams"


def remote_path(team: str, member: str) -> str:
    """The member's clone on its node, relative to the node's ``cwd`` (or the login home)."""
    return f"{REMOTE_CHECKOUTS}/{team}/{member}"


def _remote_git(*args: str) -> str:
    """``git ARGS`` for a node's shell, with the same neutralising config as here (the clone
    was written by a sandboxed member: its hooks and drivers must not run for us)."""
    from nyzhi.tools.gitsafe import SAFE_CONFIG

    safe = [arg for k, v in SAFE_CONFIG for arg in ("-c", f"{k}={v}")]
    return shlex.join(["git", *safe, *args])


def _ssh(node: Any, script: str, cwd: str | None = None) -> str:
    """Run ``script`` (sh) on ``node``; its output, or a ``TeamError`` naming the node."""
    argv = node.session_argv(f"sh -c {shlex.quote(script)}", cwd)
    proc = spawn.run(argv, env=node.local_env(), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=300, check=False)
    if proc.returncode != 0:
        raise TeamError(f"on node {node.host}: {(proc.stderr or proc.stdout).strip()} "
                        f"(exit {proc.returncode})")
    return proc.stdout


def _url(node: Any, path: str) -> str:
    where = node.remote_cwd(path)
    return f"ssh://{node.target}/{where.lstrip('/')}" if where.startswith("/") else \
        f"ssh://{node.target}/~/{where}"


def _transfer(root: Path, node: Any, *args: str) -> None:
    """``git push`` or ``git fetch`` between ``root`` and ``node`` over the node's ssh: the
    one transport allowed, its command ours (the repository's config is not asked)."""
    ssh = shlex.join(node.ssh_options())
    argv = ["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false",
            "-c", f"core.sshCommand={ssh}", "-c", "protocol.allow=never",
            "-c", "protocol.ssh.allow=always", "-c", "credential.helper=", *args]
    env = {**node.local_env(), "GIT_TERMINAL_PROMPT": "0"}
    proc = spawn.run(argv, cwd=root, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=600, check=False)
    if proc.returncode != 0:
        raise TeamError(f"git {args[0]} with node {node.host} failed: "
                        f"{(proc.stderr or proc.stdout).strip()}")


def create_remote(workspace: Path, team: str, member: str, node: Any) -> str:
    """The member's clone on ``node`` (made if missing: the lead's HEAD pushed to its branch
    there); an existing clone is left as it is, since its branch holds the member's work."""
    root = repo_root(workspace)
    path = remote_path(team, member)
    made = _ssh(node, f"if [ -d {shlex.quote(path)}/.git ]; then echo exists; else "
                f"mkdir -p {shlex.quote(path)} && {_remote_git('init', '-q', path)}; fi")
    if made.strip() == "exists":
        return path
    branch = branch_of(team, member)
    _transfer(root, node, "push", "-q", _url(node, path), f"HEAD:refs/heads/{branch}")
    _ssh(node, _remote_git("checkout", "-q", branch), path)
    return path


def merge_remote(workspace: Path, team: str, member: str, node: Any, path: str) -> str:
    """``merge`` for a member on ``node``: commit what it left in its clone there, fetch its
    branch into this repository (replacing the local copy of that branch), merge it."""
    root = repo_root(workspace)
    branch = branch_of(team, member)
    message = f"nyz team {team}: {member}'s work"
    commit = _remote_git("-c", "user.name=nyz", "-c", "user.email=nyz@localhost", "commit",
                         "-q", "-m", message)
    _ssh(node, f'if [ -n "$({_remote_git("status", "--porcelain")})" ]; then '
               f"{_remote_git('add', '-A')} && {commit}; fi", path)
    _transfer(root, node, "fetch", "-q", _url(node, path), f"+refs/heads/{branch}:refs/heads/{branch}")
    return _git(root, *_identity(root), "merge", "--no-edit", branch).strip()
