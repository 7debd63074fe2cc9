"""Files that configure what nyz (or git) runs: read-only to sandboxed commands, and written
by the file tools only with the user's approval.

A sandboxed command may write anywhere in the workspace. If that included
``.nyzhi/config.toml`` (hooks, MCP servers), ``.claude/settings.json`` (hooks), ``.mcp.json``
or ``.git`` (hooks, fsmonitor, filters), code planted by the agent would run *outside* the
sandbox, as the user, the next time nyz or git starts. So:

* bubblewrap binds each of ``PROTECTED`` that exists in a writable root read-only over the
  writable bind (``bwrap_protections``). A mount point cannot be renamed or removed (EBUSY),
  and a hard link across mounts fails (EXDEV), so neither ``mv .nyzhi x`` nor ``ln`` gets
  around it. The whole ``.claude`` directory is bound, not only its settings files, because
  renaming an unprotected parent would otherwise swap the protected file for a new one.
* one that does *not* exist yet cannot be mounted over without bubblewrap creating it in the
  user's workspace, so a sandboxed command can create it. That is covered where it matters:
  hooks, MCP servers and security settings that appeared or changed since the user last
  approved them are not used until approved (``nyzhi.config.project_trust``); and git runs
  neutralised whatever ``.git`` holds (``nyzhi.tools.gitsafe``).
* the file tools (write, edit, patch) may change these paths only with an explicit approval,
  in every trust mode but ``full`` (``protected_kind``, used by the gates).

The user's own configuration is trusted as theirs (their hooks, their git filters such as
git-lfs), which holds only while the sandbox cannot write it: nyz's config and data
directories, ``~/.gitconfig`` and ``~/.config/git`` (``user_config_paths``) are bound read-only
too when they lie under a writable root (a workspace at HOME, a HOME under the temp dir);
made first (empty) if missing, since what does not exist cannot be mounted over.

nyz's own run-time files under ``.nyzhi`` (plans, notepads, todos, context, the teammates'
worktrees) are not configuration: the tools that keep them write them, and a teammate's
worktree under ``.nyzhi/worktrees`` is bound writable again for the teammate working there.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

PROTECTED: tuple[str, ...] = (".git", ".nyzhi", ".claude", ".mcp.json")
RUNTIME_DIRS: tuple[str, ...] = ("plans", "notepads", "todos", "context", "worktrees")
WORKTREES = Path(".nyzhi") / "worktrees"


def user_config_paths() -> list[Path]:
    """The user's configuration that nyz and git trust as the user's own (resolved)."""
    from nyzhi.config import paths

    config = paths.config_dir()
    # the state dir holds the approvals (project trust): created before the sandbox starts,
    # then masked, so a sandboxed command cannot make one up when it does not exist yet
    found = [config, paths.data_dir(), paths.state_dir(), paths.home_dir() / ".gitconfig",
             config.parent / "git"]
    return [Path(os.path.realpath(p)) for p in found]


def _under(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def teammate_root(cwd: Path, roots: Iterable[Path]) -> Path | None:
    """``<root>/.nyzhi/worktrees/<member>`` when ``cwd`` lies in a teammate's worktree."""
    for root in roots:
        base = root / WORKTREES
        if cwd != base and _under(cwd, base):
            return base / cwd.relative_to(base).parts[0]
    return None


def protected_kind(real: Path, roots: Iterable[Path]) -> str | None:
    """Which protected configuration the resolved path ``real`` is, or lies in, relative to
    the nearest of ``roots`` (workspace roots; a teammate's worktree counts as one), or None."""
    roots = list(roots)
    for user in user_config_paths():
        if _under(real, user):
            return f"{user} (your own configuration, which nyz and git trust)"
    mate = teammate_root(real, roots)
    candidates = [*roots, *([mate] if mate else [])]
    best = max((r for r in candidates if _under(real, r)), key=lambda r: len(r.parts),
               default=None)
    if best is None or real == best:
        return None
    parts = real.relative_to(best).parts
    if parts[0] not in PROTECTED:
        return None
    if parts[0] == ".nyzhi" and len(parts) > 1 and parts[1] in RUNTIME_DIRS:
        return None
    return f"{parts[0]} (configuration of what nyz or git runs)"


def bwrap_protections(roots: Iterable[Path], cwd: Path,
                      writable: Iterable[Path] = ()) -> list[str]:
    """bwrap options, to come after the writable binds: each existing ``PROTECTED`` entry of
    every writable root read-only, the user's configuration lying under any writable path
    (``writable``: the roots and the temp dir) read-only, then the teammate's worktree
    holding ``cwd`` (if any) writable again with its own entries read-only."""
    roots = list(roots)
    args: list[str] = []
    for root in roots:
        args += _ro_entries(root)
    spots = [*roots, *writable]
    for user in user_config_paths():
        if any(_under(r, user) for r in (*roots, cwd)):
            continue  # the work itself lies in there: binding it read-only would stop it
        if any(_under(user, w) for w in spots) and _ensure(user):
            args += ["--ro-bind", str(user), str(user)]
    mate = teammate_root(cwd, roots)
    if mate is not None and mate.is_dir():
        args += ["--bind", str(mate), str(mate), *_ro_entries(mate)]
    return args


def _ensure(path: Path) -> bool:
    """Make a missing piece of the user's configuration exist (an empty directory, or an empty
    ``.gitconfig``, which git reads as no settings) so that it can be bound read-only: else a
    sandboxed command could create it, holding a hook or a filter nyz and git would trust."""
    if os.path.lexists(path):
        return os.path.exists(path)
    try:
        if path.name == ".gitconfig":
            path.touch(mode=0o600, exist_ok=True)
        else:
            path.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError:
        return False
    return True


def _ro_entries(root: Path) -> list[str]:
    args: list[str] = []
    for name in PROTECTED:
        path = root / name
        if os.path.lexists(path):
            real = os.path.realpath(path)
            if not os.path.exists(real):
                continue  # a dangling symlink: nothing to read, and bwrap cannot bind it
            args += ["--ro-bind", real, real]
    return args
