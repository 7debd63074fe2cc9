"""The sandbox: where tools may write, and how shell commands are confined.

Two mechanisms, one policy:

* **Path gates** (``SandboxPolicy.check_write``) for tools that write files themselves. A path is
  resolved to its real location first (symlinks anywhere in it, ``..``, absolute paths; for a
  path that does not exist yet, the nearest existing ancestor) and only then compared with the
  allowed roots, because the string a model writes says nothing about where bytes will land.
* **bubblewrap** (``SandboxPolicy.wrap``) for shell commands, which can write anywhere a path
  gate never sees. Under ``read-only`` and ``workspace-write`` the command runs inside ``bwrap``
  with the root file system mounted read-only and only the allowed roots bound writable.

* **Credential files** (``nyzhi.tools.credentials``: nyz's own auth and state files, ``~/.ssh``,
  cloud and other agents' credentials, plus ``[agent.sandbox] hide``) are masked in the
  bubblewrap mount namespace (``--tmpfs`` over a directory, ``/dev/null`` over a file) and
  refused to the read and search tools (``SandboxPolicy.check_read``, after resolving the
  path) unless ``[agent.trust] allow_paths`` covers them. One list serves both.
* **Configuration that runs things** (``nyzhi.tools.protected``: ``.git``, ``.nyzhi``,
  ``.claude``, ``.mcp.json``) is bound read-only inside the writable workspace, so a sandboxed
  command cannot plant a hook that nyz or git would later run outside the sandbox.
* **Network**: bubblewrap-confined commands run with ``--unshare-net`` unless ``network`` is
  on (``[agent.sandbox] network = true`` or ``nyz run --network``); ``network_hint`` is the
  line a failed connection gets so the model (and the user) know why.

A check and the write that follows it are two system calls: a directory swapped for a symlink in
between defeats any check. Write tools therefore call ``check_write`` again right before writing
and write through ``nyzhi.tools.paths.write_nofollow``, which walks the path with ``O_NOFOLLOW`` so a
component swapped for a symlink makes the write fail.

Error tree::

    SandboxError
    ├── SandboxViolation     a path or operation the policy refuses
    └── SandboxUnavailable   bwrap is needed but missing (and fallback is "refuse")
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Literal

import attrs

from nyzhi import records
from nyzhi.config.modes import SandboxLevel

BWRAP_INSTALL_HINT = (
    "Install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`, Fedora: `dnf install "
    "bubblewrap`), or set the sandbox level to full-access, or allow an unsandboxed fallback."
)


class SandboxError(Exception):
    """Base of sandbox errors; the message is written for the model and the user."""


class SandboxViolation(SandboxError):
    """The policy refuses this write (the message names the path, its real path and the roots)."""


class SandboxUnavailable(SandboxError):
    """The sandbox needs bubblewrap and it is not installed; nothing was run."""


@records.frozen
class WrappedCommand:
    """What to execute for a shell command, and whether it is actually confined.

    ``note`` is non-empty when the command runs unsandboxed by fallback: callers must show it
    to the user and put it in result metadata (never run unsandboxed silently).
    """

    argv: list[str]
    sandboxed: bool
    note: str = ""


def default_shell() -> str:
    """The shell a command string runs in when none is configured."""
    return shutil.which("bash") or "/bin/sh"


def _real(path: Path) -> Path:
    """The real path of ``path``, following every symlink; a missing tail is kept lexically.

    ``os.path.realpath`` resolves the existing prefix (including a dangling final symlink, whose
    target is where a write would land) and appends the missing components.
    """
    return Path(os.path.realpath(path))


def _is_under(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


@records.frozen
class SandboxPolicy:
    """Where writes may go. ``writable_roots`` add to the workspace root under workspace-write.

    ``network`` only affects bubblewrap-confined commands (off: ``--unshare-net``; full-access
    commands are not confined and keep the network); ``allow_temp`` makes the system temp
    directory writable (tools and compilers need scratch space). ``bwrap_path`` None finds
    ``bwrap`` on PATH; a path that does not exist means "missing". ``allow_paths`` (``[agent.trust]
    allow_paths``, relative to the workspace) lifts the credential-file refusal under them.
    """

    level: SandboxLevel = attrs.field(converter=lambda level: SandboxLevel(level))
    workspace_root: Path = attrs.field(converter=records.as_path)
    writable_roots: tuple[Path, ...] = attrs.field(
        default=(), converter=lambda roots: tuple(Path(r) for r in roots)
    )
    network: bool = False
    allow_temp: bool = True
    bwrap_fallback: Literal["refuse", "unsandboxed"] = "refuse"
    bwrap_path: str | None = None
    allow_paths: tuple[str, ...] = attrs.field(default=(), converter=records.as_tuple)
    hide: tuple[str, ...] = attrs.field(default=(), converter=records.as_tuple)  # added to the built-ins
    # The session's shared loopback-only network namespace (``nyzhi.tools.netns``), started
    # at the first confined command; ``netns`` is the argv prefix that enters it, set by
    # ``joined``. Neither is configuration: both are left out of comparisons.
    loopback: Any = attrs.field(default=None, eq=False, repr=False)
    netns: tuple[str, ...] = attrs.field(default=(), eq=False, converter=records.as_tuple)

    # -- path gates ----------------------------------------------------------------------------

    def allowed_roots(self) -> list[Path]:
        """The real directories writes may land in (empty for read-only, unused for full)."""
        if self.level is SandboxLevel.READ_ONLY:
            return []
        roots = [_real(self.workspace_root)]
        roots += [_real(r) for r in self.writable_roots]
        if self.allow_temp:
            roots.append(_real(Path(tempfile.gettempdir())))
        return roots

    def resolve(self, path: str | os.PathLike[str], base: Path | None = None) -> Path:
        """The real absolute path, relative paths taken from ``base`` (default the workspace)."""
        p = Path(os.path.expanduser(os.fspath(path)))
        if not p.is_absolute():
            p = (base or self.workspace_root) / p
        return _real(p)

    def check_write(self, path: str | os.PathLike[str], base: Path | None = None) -> Path:
        """Return the real path a write to ``path`` would touch, or raise ``SandboxViolation``.

        Call it again right before writing (the file system can change after a gate ran).
        """
        try:
            real = self.resolve(path, base)
        except (OSError, RuntimeError) as exc:  # symlink loops, unreadable components
            raise SandboxViolation(f"cannot resolve {os.fspath(path)!r} safely: {exc}") from exc
        if self.level is SandboxLevel.FULL_ACCESS:
            return real
        if self.level is SandboxLevel.READ_ONLY:
            raise SandboxViolation(
                f"write to {os.fspath(path)!r} refused: the sandbox is read-only "
                "(no file may be written; ask the user to switch to workspace-write)"
            )
        roots = self.allowed_roots()
        if any(_is_under(real, root) for root in roots):
            return real
        shown = ", ".join(str(r) for r in roots)
        where = "" if str(real) == os.fspath(path) else f" (resolves to {real})"
        raise SandboxViolation(
            f"write to {os.fspath(path)!r}{where} refused: outside the writable roots [{shown}] "
            "of the workspace-write sandbox"
        )

    def check_read(self, path: str | os.PathLike[str], base: Path | None = None) -> Path:
        """The real path to read. Reads are not confined by level (the levels restrict
        writes), but credential files are refused (``credential_refusal``)."""
        try:
            real = self.resolve(path, base)
        except (OSError, RuntimeError) as exc:
            raise SandboxViolation(f"cannot resolve {os.fspath(path)!r} safely: {exc}") from exc
        refusal = self.credential_refusal(real, shown=os.fspath(path))
        if refusal:
            raise SandboxViolation(refusal)
        return real

    def protected_refusal(self, real: Path) -> str | None:
        """What protected configuration (``nyzhi.tools.protected``) the real path ``real`` is,
        or None: the gates ask before a file tool changes it."""
        from nyzhi.tools.protected import protected_kind

        roots = [_real(self.workspace_root), *(_real(r) for r in self.writable_roots)]
        return protected_kind(real, roots)

    def credential_refusal(self, real: Path, shown: str | None = None) -> str | None:
        """Why reading the real path ``real`` is refused, or None. Also used by search tools
        to drop matches inside files under a directory they were allowed to search."""
        from nyzhi.tools.credentials import credential_kind

        what = credential_kind(real, self.hide, roots=(_real(self.workspace_root),))
        if what is None:
            return None
        ws = self.workspace_root
        # This project's offloaded tool output (already redacted when written) lives in nyz's
        # state directory so that git never sees it; the model reads it back from there.
        from nyzhi.config.paths import tool_results_dir

        if _is_under(real, _real(tool_results_dir(ws))):
            return None
        for allowed in self.allow_paths:
            root = _real(ws / os.path.expanduser(allowed))
            if _is_under(real, root):
                return None
        shown = shown or str(real)
        where = "" if shown == str(real) else f" (resolves to {real})"
        return (
            f"read of {shown!r}{where} refused: it is {what}, and credential files are kept "
            "out of the model's context by default. To allow it, add the path to "
            "[agent.trust] allow_paths."
        )

    # -- bubblewrap ----------------------------------------------------------------------------

    async def joined(self) -> SandboxPolicy:
        """This policy, set to enter the session's shared loopback namespace when a command
        would otherwise get a private one (confined, no network); unchanged when there is no
        such namespace (none configured, or it could not be made: each command then gets its
        own, as before)."""
        if (self.loopback is None or self.network or self.netns
                or self.level is SandboxLevel.FULL_ACCESS or self.find_bwrap() is None):
            return self
        prefix = await self.loopback.prefix()
        return attrs.evolve(self, netns=prefix) if prefix else self

    def find_bwrap(self) -> str | None:
        if self.bwrap_path is not None:
            return self.bwrap_path if os.access(self.bwrap_path, os.X_OK) else None
        return shutil.which("bwrap")

    def wrap(
        self, command: str | list[str], cwd: str | os.PathLike[str], *, shell: str | None = None
    ) -> WrappedCommand:
        """The argv that runs ``command`` (a shell string, run by ``shell`` or bash, or an argv)
        in ``cwd`` under the policy.

        Raises ``SandboxUnavailable`` when confinement is needed, bwrap is missing and the
        fallback is "refuse".
        """
        argv = [shell or default_shell(), "-c", command] if isinstance(command, str) else list(command)
        if self.level is SandboxLevel.FULL_ACCESS:
            return WrappedCommand(argv, sandboxed=False)
        bwrap = self.find_bwrap()
        if bwrap is None:
            if self.bwrap_fallback == "unsandboxed":
                return WrappedCommand(
                    argv,
                    sandboxed=False,
                    note=(
                        f"WARNING: bubblewrap (bwrap) is not installed, so this command ran "
                        f"WITHOUT the {self.level.value} sandbox (configured fallback "
                        f"'unsandboxed'). {BWRAP_INSTALL_HINT}"
                    ),
                )
            raise SandboxUnavailable(
                f"refusing to run the command: the {self.level.value} sandbox needs bubblewrap "
                f"(bwrap), which is not installed. {BWRAP_INSTALL_HINT}"
            )
        return WrappedCommand([*self.netns, bwrap, *self._bwrap_args(Path(cwd)), "--", *argv],
                              sandboxed=True)

    def wrap_command(self, command: str | list[str], cwd: str | os.PathLike[str]) -> list[str]:
        """``wrap(...).argv``: the command line only."""
        return self.wrap(command, cwd).argv

    def _bwrap_args(self, cwd: Path) -> list[str]:
        """bwrap options. Later mounts shadow earlier ones, so the order below matters.

        * ``--unshare-pid`` + ``--die-with-parent``: the command is PID 1's child in its own PID
          namespace; when bwrap dies (we kill its process group on timeout or cancel) the kernel
          kills everything in the namespace, background grandchildren included. The death
          signal is tied to the thread that forked bwrap, so bwrap must be started through
          ``nyzhi.spawn.open_bound_process`` (as ``executors.process`` does), whose thread
          lives until bwrap exits; forked from a trio worker thread it dies after ten seconds.
        * No ``--new-session``: the executor already starts bwrap in a new session without a
          controlling terminal (so TIOCSTI injection is moot), and a second setsid inside would
          only hide the command from our process-group kill.
        """
        ws = _real(self.workspace_root)
        tmp = _real(Path(tempfile.gettempdir()))
        cwd = _real(cwd)
        args = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        args += ["--unshare-pid", "--die-with-parent"]
        if not self.network and not self.netns:  # in the shared namespace: already apart
            args.append("--unshare-net")
        if self.level is SandboxLevel.WORKSPACE_WRITE:
            if self.allow_temp and tmp.is_dir():
                args += ["--bind", str(tmp), str(tmp)]
            for root in [ws, *(_real(r) for r in self.writable_roots)]:
                if root.is_dir():
                    args += ["--bind", str(root), str(root)]
            args += self._protections(ws, cwd)
        else:  # read-only: at most a private scratch temp dir that vanishes with the command
            if self.allow_temp and tmp.is_dir():
                args += ["--tmpfs", str(tmp)]
                # The tmpfs hides whatever lived under the temp dir: show the workspace and the
                # cwd again (read-only) when they live there.
                for keep in (ws, cwd):
                    if keep.is_dir() and _is_under(keep, tmp) and keep != tmp:
                        args += ["--ro-bind", str(keep), str(keep)]
        args += self._masks([ws, cwd, *(_real(r) for r in self.writable_roots)])
        args += ["--chdir", str(cwd)]
        return args

    def standins(self, cwd: str | os.PathLike[str]) -> Any:
        """What to hold while a command ``wrap`` makes for ``cwd`` runs: enter it before
        ``wrap``, ``note`` the command line, leave it when the command has ended. The empty
        directories bubblewrap makes to stand in for missing protected paths are removed
        once no sandboxed command stands on them (``nyzhi.tools.protected.Standins``)."""
        from nyzhi.config.paths import home_dir
        from nyzhi.tools.protected import Standins, teammate_root

        if self.level is not SandboxLevel.WORKSPACE_WRITE:
            return Standins(())
        roots = [_real(self.workspace_root), *(_real(r) for r in self.writable_roots)]
        mate = teammate_root(_real(Path(cwd)), roots)
        return Standins([*roots, *([mate] if mate else []), _real(home_dir())])

    def _protections(self, ws: Path, cwd: Path) -> list[str]:
        """The configuration entries of every writable root, read-only (``nyzhi.tools.protected``)."""
        from nyzhi.tools.protected import bwrap_protections

        roots = [ws, *(_real(r) for r in self.writable_roots)]
        tmp = [_real(Path(tempfile.gettempdir()))] if self.allow_temp else []
        return bwrap_protections([r for r in roots if r.is_dir()], cwd, writable=tmp)

    def _masks(self, keep: list[Path]) -> list[str]:
        """Credential files masked (``nyzhi.tools.credentials``): an empty tmpfs over a
        directory, /dev/null over a file. A masked directory holding the workspace, the cwd
        or a writable root is skipped: masking it would hide the work itself."""
        from nyzhi.tools.credentials import hidden_paths

        args: list[str] = []
        for hidden in hidden_paths(self.hide, roots=keep[:1]):
            if any(_is_under(k, hidden.path) for k in keep):
                continue
            if hidden.is_dir:
                args += ["--tmpfs", str(hidden.path)]
            else:
                args += ["--ro-bind", "/dev/null", str(hidden.path)]
        return args


# What failed name resolution and refused connections look like in common tools' output
# (curl, wget, git, pip, npm, Python, Go, ssh).
_NETWORK_FAILURE = re.compile(
    r"could not resolve|couldn't resolve|temporary failure in name resolution|"
    r"name or service not known|name resolution|getaddrinfo|no address associated|"
    r"network is unreachable|connection refused|failed to connect|couldn't connect|"
    r"unable to connect|dial tcp|nodename nor servname|resolve host",
    re.IGNORECASE,
)


def network_hint(policy: object, output: str, sandboxed: bool) -> str:
    """One line for a tool result when a command confined without network failed to resolve
    or connect (else ""): says the network is off and how to turn it on."""
    if not sandboxed or not isinstance(policy, SandboxPolicy) or policy.network:
        return ""
    if not _NETWORK_FAILURE.search(output):
        return ""
    return (
        f"[note: the network is off in the {policy.level.value} sandbox; to enable it set "
        "[agent.sandbox] network = true or run `nyz run --network`]"
    )
