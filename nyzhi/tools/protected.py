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
* one that does *not* exist yet is stood in for: bubblewrap mounts an empty read-only
  ``tmpfs`` at its place (``--tmpfs P --remount-ro P``), so ``mkdir -p .nyzhi``, ``mv x
  .mcp.json``, ``ln -s`` or a Python ``open`` of ``.claude/settings.json`` all fail as they do
  over an existing one. A mount point must exist in the real directory, so bubblewrap makes it
  there: an empty directory, which git never sees (it tracks no empty directory, and an empty
  ``.git`` is no repository: git goes on looking above it). ``Standins`` removes the empty
  directories again once no sandboxed command of any nyz process still stands on them (a
  shared ``flock`` per directory, held while a command runs; the last one out, which gets the
  lock exclusively, removes what was made). Until then another process sees an empty
  directory where the file would be (``.mcp.json`` is read as absent then). Hooks, MCP
  servers and security settings that appear later still wait for the user's approval
  (``nyzhi.config.project_trust``), and git runs neutralised whatever ``.git`` holds
  (``nyzhi.tools.gitsafe``).
* the file tools (write, edit, patch) may change these paths only with an explicit approval,
  in every trust mode but ``full`` (``protected_kind``, used by the gates).

The user's own configuration is trusted as theirs (their hooks, their git filters such as
git-lfs), which holds only while the sandbox cannot write it: nyz's config and data
directories, ``~/.gitconfig`` and ``~/.config/git`` (``user_config_paths``) are bound read-only
too when they lie under a writable root (a workspace at HOME, a HOME under the temp dir);
made first (empty) if missing, since what does not exist cannot be mounted over. With the
workspace (or a writable root) at HOME or above it, so are the files a login or a new shell
runs (``HOME_STARTUP``: ``~/.bashrc``, ``~/.profile``, ..., stood in for when missing, as above: an empty ``~/.bash_profile`` would hide ``~/.profile``)
and the places ``PATH`` and Python look first (``HOME_DIRS``: ``~/.local/bin``, the user
site-packages under ``~/.local/lib``, made first when missing). The directories between a
writable root and any of these (``~/.config``, ``~/.local``, ...) are mount points too
(bound over themselves, still writable), so that renaming one cannot carry the read-only
part away and leave a fresh, writable one in its place.

nyz's own run-time files under ``.nyzhi`` (plans, notepads, todos, context, the teammates'
worktrees) are not configuration: the tools that keep them write them, and a teammate's
worktree under ``.nyzhi/worktrees`` is bound writable again for the teammate working there.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

PROTECTED: tuple[str, ...] = (".git", ".nyzhi", ".claude", ".mcp.json")
# What a login or a new interactive shell runs, relative to HOME: read-only when HOME lies in
# a writable root, stood in for when missing.
HOME_STARTUP: tuple[str, ...] = (
    ".profile", ".bash_profile", ".bash_login", ".bashrc", ".bash_logout", ".bash_aliases",
    ".zshenv", ".zprofile", ".zshrc", ".zlogin", ".zlogout", ".inputrc", ".pam_environment",
    ".xprofile", ".xsessionrc",
)
# Directories run from (PATH, user site-packages, fish's config, user services, autostart),
# relative to HOME: made (empty) when missing, then bound read-only.
HOME_DIRS: tuple[str, ...] = (
    ".local/bin", ".local/lib", ".config/fish", ".config/systemd", ".config/autostart",
    ".config/environment.d",
)
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


def _under(path: Path | str, root: Path | str) -> bool:
    """``path`` is ``root`` or lies in it (both absolute and normalised; string compare:
    ``Path.is_relative_to`` costs ten times as much, and this runs for every command)."""
    p, r = str(path), str(root)
    return p == r or p.startswith(r if r.endswith("/") else r + "/")


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
    """bwrap options, to come after the writable binds: each ``PROTECTED`` entry of every
    writable root read-only (stood in for when missing), the user's configuration and start-up
    files lying under any writable path (``writable``: the roots and the temp dir) read-only,
    then the teammate's worktree holding ``cwd`` (if any) writable again with its own entries
    read-only."""
    roots = list(roots)
    spots = [*roots, *writable]
    args: list[str] = []
    for root in roots:
        args += _ro_entries(root, spots)
    from nyzhi.config.paths import home_dir

    home = Path(os.path.realpath(home_dir()))
    at_home = any(_under(home, r) for r in roots)
    for user in [*user_config_paths(), *(home / d for d in HOME_DIRS if at_home)]:
        if not any(_under(user, w) for w in spots):
            continue  # read-only already, with the rest of the file system
        if any(_under(r, user) for r in (*roots, cwd)):
            continue  # the work itself lies in there: binding it read-only would stop it
        if _ensure(user):
            args += ["--ro-bind", str(user), str(user)]
    if at_home:  # the workspace (or a writable root) is HOME or holds it
        args += _ro_paths((home / name for name in HOME_STARTUP), spots)
    pins = _pins(_guarded(args), spots)
    # a root below a pin would lose its own mount (and could be renamed away): bound again
    pinned = pins[1::3]
    for root in roots:
        if any(_under(root, pin) for pin in pinned):
            pins += ["--bind", str(root), str(root)]
    args = pins + args
    mate = teammate_root(cwd, roots)
    if mate is not None and mate.is_dir():
        args += ["--bind", str(mate), str(mate), *_ro_entries(mate, spots)]
    return args


def _pins(targets: list[Path], spots: list[Path]) -> list[str]:
    """Each directory between a writable spot and a read-only target bound (writable) over
    itself, first: a mount point cannot be renamed or removed, so ``mv ~/.config x`` cannot
    take ``~/.config/nyzhi`` away with it and leave a fresh one to plant in its place."""
    pins: set[str] = set()
    tops = [str(w).rstrip("/") for w in spots]
    for target in map(str, targets):
        spot = max((w for w in tops if _under(target, w or "/")), key=len, default=None)
        if spot is None:
            continue
        spot = spot or "/"
        parent = os.path.dirname(target)
        while len(parent) > len(spot):  # the directories strictly between spot and target
            pins.add(parent)
            parent = os.path.dirname(parent)
    args: list[str] = []
    for pin in sorted(pins, key=lambda p: p.count("/")):
        args += ["--bind", pin, pin]
    return args


def _guarded(protections: list[str]) -> list[Path]:
    """Every path the options ``protections`` make read-only (bound, or stood in for)."""
    return [Path(protections[i + 1]) for i, arg in enumerate(protections)
            if arg in ("--ro-bind", "--remount-ro") and i + 1 < len(protections)]


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


def _ro_entries(root: Path, spots: list[Path]) -> list[str]:
    return _ro_paths((root / name for name in PROTECTED), spots)


def _ro_paths(paths: Iterable[Path], spots: list[Path]) -> list[str]:
    """Each path read-only: bound over itself when it exists, else (when it lies in a
    writable spot, where a command could create it) an empty read-only tmpfs at its place, so
    that it cannot be created either. A symlink counts as where it leads (a dangling one: the
    spot it names, which a write through it would create)."""
    args: list[str] = []
    for path in paths:
        real = os.path.realpath(path)
        if os.path.exists(real):
            args += ["--ro-bind", real, real]
        elif os.path.isdir(os.path.dirname(real)) and any(_under(Path(real), w) for w in spots):
            args += ["--tmpfs", real, "--remount-ro", real]
    return args


class Standins:
    """Holds the stand-ins of one sandboxed command while it runs, and removes the empty
    directories bubblewrap made for them when no other sandboxed command stands on them.

    Per directory that may hold one (the writable roots, a teammate's worktree, HOME), a lock
    file in nyz's state directory (masked from the sandbox): every holder keeps a shared
    ``flock`` from before its command's mounts are worked out until the command has ended,
    and notes the stand-ins of its command line (``note``); on leaving, a holder that gets
    the lock exclusively (nobody else holds it) removes those that are still empty
    directories. A holder killed outright drops its lock with its process; the next one out
    cleans up. Removing a directory another command has mounted over would unmount it there,
    which is why nobody removes one while a command may stand on it. Forgetting ``note``
    leaves empty directories behind, never a path unprotected."""

    def __init__(self, parents: Iterable[Path]) -> None:
        self.parents = list(dict.fromkeys(str(p) for p in parents))
        self._held: dict[str, tuple[int, Path]] = {}
        self._entered = False

    def enter(self, *, blocking: bool = True) -> bool:
        """Take the shared locks; False (nothing taken) when one would wait and not
        ``blocking`` (a clean-up is under way: call again from a worker thread)."""
        if self._entered:
            return True
        if self.parents:
            from nyzhi.config.paths import state_dir

            folder = state_dir() / "standins"
            try:
                folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            except OSError:
                self.parents = []  # no lock: the stand-ins still protect, they are only left
        for parent in self.parents:
            key = hashlib.sha256(os.fsencode(parent)).hexdigest()[:24]
            lock = folder / f"{key}.lock"
            try:
                fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
            except OSError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | (0 if blocking else fcntl.LOCK_NB))
            except BlockingIOError:
                os.close(fd)
                self.__exit__()
                return False
            self._held[parent] = (fd, lock)
        self._entered = True
        return True

    def __enter__(self) -> Standins:
        self.enter()
        return self

    def note(self, argv: Iterable[str]) -> None:
        """Record the stand-ins of the command line ``argv`` (``--remount-ro`` targets of a
        directory held) that do not exist yet: bubblewrap will make them."""
        argv = list(argv)
        found: dict[str, list[str]] = {}
        for i, arg in enumerate(argv[:-1]):
            if arg == "--remount-ro" and not os.path.lexists(argv[i + 1]):
                found.setdefault(os.path.dirname(argv[i + 1]), []).append(argv[i + 1])
        for parent, missing in found.items():
            if parent not in self._held:
                continue
            # one short append per holder: whole lines however holders interleave
            with contextlib.suppress(OSError):
                made = os.open(self._held[parent][1].with_suffix(".made"),
                               os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                try:
                    os.write(made, b"".join(os.fsencode(p) + b"\n" for p in missing))
                finally:
                    os.close(made)

    def __exit__(self, *_exc: object) -> None:
        held, self._held = self._held, {}
        self._entered = False
        for fd, lock in held.values():
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # another command stands on them: the last one out cleans up
                _remove_made(lock.with_suffix(".made"))
            finally:
                os.close(fd)


def _remove_made(made: Path) -> None:
    """Remove the stand-ins ``made`` lists that are still empty directories (not a symlink,
    nothing put in them since), then forget them. The caller holds the lock exclusively."""
    try:
        listed = made.read_bytes().split(b"\n")
    except OSError:
        return
    for raw in dict.fromkeys(listed):
        if not raw:
            continue
        with contextlib.suppress(OSError):  # not empty, gone, or never made: left alone
            os.rmdir(os.fsdecode(raw))
    with contextlib.suppress(OSError):
        made.unlink()
