"""Path handling shared by the file tools: resolving arguments, the sandbox re-check, and
symlink-safe writes.

Why the care: the gate pipeline checks a call's paths before it runs, but a symlink swapped in
between that check and the write (a rename racing the gate) could redirect the write outside the
workspace. So every write re-resolves its target through the sandbox right before writing, then
opens the resolved parent directory component by component with ``O_NOFOLLOW``; if any component
became a symlink in the meantime the open fails instead of following it. The final rename happens
relative to that directory descriptor, so what we checked is what we write.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any

from nyzhi.config.fsutil import replace_in_dir
from nyzhi.tools.base import ToolContext
from nyzhi.tools.sandbox import SandboxViolation


class ToolPathError(Exception):
    """A path argument the tool cannot use; its message is shown to the model."""


def resolve_arg(ctx: ToolContext, raw: Any, *, arg: str = "file_path") -> Path:
    """The absolute (not symlink-resolved) path for a path argument; relative to ``ctx.cwd``."""
    if not isinstance(raw, str) or not raw.strip():
        raise ToolPathError(f"'{arg}' must be a non-empty path string")
    path = Path(os.path.expanduser(raw))
    if not path.is_absolute():
        path = Path(ctx.cwd) / path
    return Path(os.path.normpath(path))


def check_write(ctx: ToolContext, path: Path) -> Path:
    """The fully resolved path to write, after the sandbox allowed it (``ToolPathError`` if not)."""
    if ctx.sandbox is None:
        return Path(os.path.realpath(path))
    try:
        return Path(ctx.sandbox.check_write(path))
    except SandboxViolation as exc:
        raise ToolPathError(f"sandbox: {exc}") from exc


def check_read(ctx: ToolContext, path: Path) -> Path:
    """The fully resolved path to read, after the sandbox allowed it."""
    if ctx.sandbox is None or not hasattr(ctx.sandbox, "check_read"):
        return Path(os.path.realpath(path))
    try:
        return Path(ctx.sandbox.check_read(path))
    except SandboxViolation as exc:
        raise ToolPathError(f"sandbox: {exc}") from exc


def check_restore(policy: Any, path: Path, *, allow_protected: bool = False,
                  force_hint: str = "") -> Path:
    """The path a restore (``/rewind``, ``nyz rewind``, ``/undo``) may write, else
    ``ToolPathError`` with one line. A restore writes what a journal or the change log
    recorded, which is a real path: it never follows a symlink that appeared since (a
    folder swapped for a link to ``.git/hooks`` would turn a restored file into a hook),
    it stays inside the sandbox's writable roots, and it asks the one protected-path check
    (``nyzhi.tools.protected.protected_kind``) as the tools' gates do: protected
    configuration is restored only when ``allow_protected`` (the user's explicit force)."""
    from nyzhi.tools.protected import protected_kind

    path = Path(path)
    if not path.is_absolute() or os.path.normpath(path) != str(path):
        raise ToolPathError(f"not restored: {path} is not a plain absolute path")
    real = Path(os.path.realpath(path))
    if real != path:
        raise ToolPathError(f"not restored: {path} now leads through a symlink (to {real}); "
                            "restores never follow symlinks")
    if policy is not None and hasattr(policy, "check_write"):
        try:
            policy.check_write(path)
        except SandboxViolation as exc:
            raise ToolPathError(f"not restored: {exc}") from exc
        hit = policy.protected_refusal(path)
    else:  # no roots known: any protected name in the path counts
        from nyzhi.tools.protected import PROTECTED

        hit = protected_kind(path, []) or next(
            (f"{part} (configuration of what nyz or git runs)" for part in path.parts
             if part in PROTECTED), None)
    if hit and not allow_protected:
        how = f"; {force_hint} restores it" if force_hint else "; edit it yourself if you mean to"
        raise ToolPathError(f"not restored: {path} is {hit}, which a restore does not change "
                            f"unless forced{how}")
    return path


# --- symlink-safe directory handles ---------------------------------------------------------

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def open_dir_nofollow(path: Path, *, create: bool = False) -> int:
    """Open the directory ``path`` (absolute, already resolved) refusing symlinks at every
    component. With ``create``, missing components are made. Returns a directory fd."""
    path = Path(path)
    if not path.is_absolute():
        raise ToolPathError(f"internal: expected an absolute path, got {path}")
    fd = os.open("/", _DIR_FLAGS)
    try:
        for part in path.parts[1:]:
            try:
                nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass
                nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise ToolPathError(
                        f"{path}: a component changed into a symlink or non-directory while "
                        "writing; refusing to follow it"
                    ) from exc
                raise
            os.close(fd)
            fd = nfd
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_nofollow(target: Path, data: bytes, *, mode: int | None = None) -> None:
    """Write ``data`` to the resolved ``target`` through the one atomic write
    (``config.fsutil.replace_in_dir``), creating parent directories, never following a
    symlink at any component (the file tools' writes in the workspace)."""
    target = Path(target)
    dfd = open_dir_nofollow(target.parent, create=True)
    try:
        replace_in_dir(dfd, target.name, data, mode=mode)
    finally:
        os.close(dfd)


def unlink_nofollow(target: Path) -> None:
    """Remove the file (or symlink itself) at the resolved ``target``."""
    dfd = open_dir_nofollow(Path(target).parent)
    try:
        os.unlink(Path(target).name, dir_fd=dfd)
    finally:
        os.close(dfd)


def rmdir_nofollow(target: Path) -> None:
    dfd = open_dir_nofollow(Path(target).parent)
    try:
        os.rmdir(Path(target).name, dir_fd=dfd)
    finally:
        os.close(dfd)


def mkdir_nofollow(target: Path) -> None:
    """``mkdir -p`` of the resolved ``target`` without following symlinks."""
    os.close(open_dir_nofollow(Path(target), create=True))


def read_bytes_nofollow(target: Path) -> bytes:
    """Read the regular file at resolved ``target`` (refusing a symlink swapped in, and a FIFO
    or other special file: ``NotRegularFile``, an ``OSError``, where a FIFO would block)."""
    from nyzhi.config.textfile import open_regular

    dfd = open_dir_nofollow(Path(target).parent)
    try:
        fd = open_regular(Path(target).name, os.O_NOFOLLOW, dir_fd=dfd)
    finally:
        os.close(dfd)
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


def file_mode(path: Path) -> int | None:
    try:
        return stat.S_IMODE(os.lstat(path).st_mode)
    except OSError:
        return None
