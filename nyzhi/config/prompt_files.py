"""Reading a file into a prompt: the one check every reader of prompt files goes through.

Rules files (AGENTS.md, CLAUDE.md, .nyzhi/rules…), skills, custom commands, role files, plans,
notepads, memory and ``@file`` mentions all end up in what is sent to the model. A repository
is written by anyone, and so is a file the sandboxed agent planted: ``AGENTS.md`` as a symlink
to ``/proc/self/environ`` would send nyz's environment, API keys included, in the system
prompt; a ``SKILL.md`` symlinked to ``~/.ssh/id_ed25519`` would send the key.

So ``read_prompt_file`` resolves the path first (every symlink in it, chains, a symlinked
parent directory, ``..``, ``/proc/self/root/…``) and reads it only when the real file is

* under one of the allowed roots: the workspace, the user's nyz config folders
  (``config_dir``, ``~/.nyzhi``) and whatever the caller adds (memory: its own files);
* not under ``/proc``, ``/sys`` or ``/dev`` (kernel pseudo-files and devices; ``/dev/shm`` is
  ordinary memory-backed files), whatever the roots say;
* a regular file with one name: a hard link is a second name of a file that may live
  anywhere, and nothing in the link says where;

then checks the opened descriptor again (its real path and type), so a swap between the check
and the open is caught. A refused file raises ``PromptFileRefused`` (an ``OSError``: readers
that skip unreadable files skip it) and the notice is logged once per path for the user.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from nyzhi.config import paths
from nyzhi.config.textfile import NotRegularFile, open_regular, read_fd

log = logging.getLogger(__name__)

PSEUDO_ROOTS = (Path("/proc"), Path("/sys"), Path("/dev"))
_noticed: set[str] = set()


class PromptFileRefused(OSError):
    """A file that must not be read into a prompt; the message says which and why."""


def prompt_roots(workspace_root: Path | str | None,
                 env: Mapping[str, str] | None = None) -> tuple[Path, ...]:
    """The directories prompt files may live in: the workspace, the user's nyz config
    folders and installed plugins (resolved when they are checked)."""
    # installed plugins (nyzhi.config.plugins) are files the user chose to install
    roots = [paths.config_dir(env), paths.nyzhi_home(env), paths.data_dir(env) / "plugins"]
    if workspace_root is not None:
        roots.insert(0, Path(workspace_root))
    return tuple(roots)


def _real_root(root: Path) -> Path:
    """A directory root resolved (a workspace reached through a symlink is still itself); a
    file root (memory's MEMORY.md) only up to its folder, so a link there is not trusted."""
    root = Path(root)
    if os.path.isdir(root):
        return Path(os.path.realpath(root))
    return Path(os.path.realpath(root.parent)) / root.name


def _under(path: Path, root: Path) -> bool:
    # both are real absolute paths: a string prefix at a separator is is_relative_to, without
    # pathlib's parsing (a loader checks every file against every root)
    p, r = str(path), str(root)
    return p == r or p.startswith(r if r.endswith(os.sep) else r + os.sep)


class RealRoots(tuple):  # type: ignore[type-arg]
    """Roots resolved once by ``resolve_roots``: ``read_prompt_bytes`` uses them as they are,
    so a loader reading many files (twenty plugins' agents, skills and commands) pays the
    roots' ``realpath`` once, not once per file. Each file's own path is still resolved and
    its opened descriptor checked, every time."""


def resolve_roots(roots: Iterable[Path]) -> RealRoots:
    """``roots`` resolved as ``read_prompt_bytes`` checks them, for reading many files."""
    return roots if isinstance(roots, RealRoots) else RealRoots(_real_root(r) for r in roots)


def refusal(real: Path, roots: Iterable[Path]) -> str | None:
    """Why the real path ``real`` may not be read into a prompt, or None."""
    if any(_under(real, p) for p in PSEUDO_ROOTS) and not _under(real, Path("/dev/shm")):
        return f"it resolves to {real}, a kernel pseudo-file or device"
    roots = tuple(roots)
    if not any(_under(real, r) for r in roots):
        shown = ", ".join(str(r) for r in roots)
        return (f"it resolves to {real}, outside the workspace and nyz's config folders "
                f"({shown})")
    return None


def _refuse(path: Path, why: str) -> PromptFileRefused:
    advice = ("" if "not a regular file" in why else
              " A symlink or hard link there could carry a secret to the model; copy the file "
              "into the workspace if you mean it.")
    message = f"{path}: not read into the prompt: {why}.{advice}"
    if str(path) not in _noticed:
        _noticed.add(str(path))
        log.warning("%s", message)
    return PromptFileRefused(message)


def read_prompt_bytes(path: Path | str, roots: Iterable[Path], limit: int | None = None) -> bytes:
    """The bytes of ``path`` (at most ``limit``) if it may go into a prompt (see the module
    docstring).

    Raises ``PromptFileRefused`` for a refused file, and ``OSError`` as ``open`` does for a
    missing or unreadable one (``IsADirectoryError`` for a directory)."""
    path = Path(path)
    roots = resolve_roots(roots)
    real = Path(os.path.realpath(path))
    why = refusal(real, roots)
    if why:
        raise _refuse(path, why)
    try:
        fd = open_regular(real)
    except NotRegularFile as exc:
        raise _refuse(path, f"{real} is not a regular file ({exc.kind})") from None
    try:
        st = os.fstat(fd)
        if st.st_nlink > 1:
            raise _refuse(path, f"{real} has {st.st_nlink} hard links (another name may be "
                                "outside the workspace)")
        try:  # what was opened, whatever changed since the check
            opened = Path(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            opened = real
        why = refusal(opened, roots)
        if why:
            raise _refuse(path, why)
        return read_fd(fd, limit)
    finally:
        os.close(fd)


def read_prompt_file(path: Path | str, roots: Iterable[Path], *, errors: str = "replace") -> str:
    """``read_prompt_bytes`` decoded as UTF-8 (``errors`` as for ``bytes.decode``)."""
    return read_prompt_bytes(path, roots).decode("utf-8", errors=errors)
