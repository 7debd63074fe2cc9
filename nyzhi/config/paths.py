"""Where nyzhi keeps user-level files.

Every function reads HOME and the XDG_* variables *at call time* (nothing is cached at import),
so a test isolates itself completely by pointing HOME / XDG_* at a temporary directory. Each
function also takes an optional ``env`` mapping for callers that want to resolve paths for an
environment other than ``os.environ``.

Per the XDG base-directory spec a relative XDG_* value is invalid and ignored.

The functions that locate a file nyz reads a secret from are registered with
``@secret_file`` (``nyzhi.config.secret_files``): the sandbox masks every one of them.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path

from nyzhi.config.secret_files import secret_file

APP = "nyzhi"


def _env(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


def home_dir(env: Mapping[str, str] | None = None) -> Path:
    """$HOME, falling back to the password database only when HOME is unset."""
    home = _env(env).get("HOME")
    return Path(home) if home else Path.home()


def _xdg(var: str, default_rel: str, env: Mapping[str, str] | None) -> Path:
    value = _env(env).get(var)
    if value and os.path.isabs(value):
        return Path(value) / APP
    return home_dir(env) / default_rel / APP


def config_dir(env: Mapping[str, str] | None = None) -> Path:
    """$XDG_CONFIG_HOME/nyzhi, default ~/.config/nyzhi."""
    return _xdg("XDG_CONFIG_HOME", ".config", env)


def data_dir(env: Mapping[str, str] | None = None) -> Path:
    """$XDG_DATA_HOME/nyzhi, default ~/.local/share/nyzhi (sessions, credentials, indexes)."""
    return _xdg("XDG_DATA_HOME", ".local/share", env)


@secret_file("nyz's state directory", name="state_dir")
def state_dir(env: Mapping[str, str] | None = None) -> Path:
    """$XDG_STATE_HOME/nyzhi, default ~/.local/state/nyzhi (logs, history, update checks)."""
    return _xdg("XDG_STATE_HOME", ".local/state", env)


def private_app_dirs(env: Mapping[str, str] | None = None) -> None:
    """Create nyz's data and state dirs owner-only (0700) when they do not exist yet: they hold
    sessions, credentials and logs, and a plain ``mkdir(parents=True)`` under a 022 umask made
    them 755, which ``nyz doctor`` rightly warned about. An existing dir is left as it is (the
    user may have chosen its mode; doctor says how to tighten it)."""
    for path in (data_dir(env), state_dir(env)):
        if path.is_dir():
            continue
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            os.mkdir(path, 0o700)
            os.chmod(path, 0o700)  # mkdir's mode is masked by the umask
        except OSError:
            # best effort: a read-only or full disk is said by what then fails to write
            # there (the session log names the directory and the fix)
            continue


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """$XDG_CACHE_HOME/nyzhi, default ~/.cache/nyzhi (anything safe to delete)."""
    return _xdg("XDG_CACHE_HOME", ".cache", env)


def nyzhi_home(env: Mapping[str, str] | None = None) -> Path:
    """~/.nyzhi, overridable with $NYZHI_HOME: the original's home directory, which
    ``workspace.find_root`` must not mistake for a project's ``.nyzhi``. Nothing is stored
    there: teams and tasks are under data_dir() (``nyzhi.team_files.store``), as is user memory."""
    value = _env(env).get("NYZHI_HOME")
    if value:
        return Path(value)
    return home_dir(env) / ".nyzhi"


@secret_file("nyz's user configuration (it can hold api_key and tokens)",
             name="global_config")
def global_config_path(env: Mapping[str, str] | None = None) -> Path:
    """The global (user) config layer: config_dir()/config.toml."""
    return config_dir(env) / "config.toml"


@secret_file("nyz's saved sessions", name="sessions")
def sessions_dir(env: Mapping[str, str] | None = None) -> Path:
    """data_dir()/sessions."""
    return data_dir(env) / "sessions"


# A unix socket's path holds at most 107 bytes; a live socket is named by a session id (a
# uuid) and ".sock".
_SOCKET_PATH_MAX = 107
_LIVE_SOCKET_NAME = 36 + len(".sock")


@secret_file("the sockets of nyz's live sessions (nyz attach answers approvals on them)",
             name="live_sockets")
def live_sockets_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where running sessions serve ``nyz attach``: ``$XDG_RUNTIME_DIR/nyzhi/live`` when that
    directory is ours, private and short enough to hold a socket's path, else
    ``<tmp>/nyzhi-<uid>/nyzhi/live``. A secret place, so the sandbox masks it: a sandboxed
    command (same uid) that reached a socket could answer its own session's approvals."""
    base = _env(env).get("XDG_RUNTIME_DIR", "")
    if base and os.path.isabs(base) and \
            len(base) + len("/nyzhi/live/") + _LIVE_SOCKET_NAME <= _SOCKET_PATH_MAX:
        try:
            st = os.lstat(base)
        except OSError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() \
                and not st.st_mode & 0o077:
            return Path(base) / APP / "live"
    return Path(tempfile.gettempdir()) / f"{APP}-{os.getuid()}" / APP / "live"


def checkpoints_dir(env: Mapping[str, str] | None = None) -> Path:
    """state_dir()/checkpoints: the files nyz's tools changed, as they were before each prompt
    (``nyzhi.core.runtime.checkpoints``), kept out of the workspace and its git history."""
    return state_dir(env) / "checkpoints"


@secret_file("nyz's credentials file (auth.json)", name="auth")
def auth_path(env: Mapping[str, str] | None = None) -> Path:
    """data_dir()/auth.json: stored credentials (mode 0600, directory 0700)."""
    return data_dir(env) / "auth.json"


@secret_file("nyz's MCP OAuth tokens (mcp-auth.json)", name="mcp_auth")
def mcp_auth_path(env: Mapping[str, str] | None = None) -> Path:
    """data_dir()/mcp-auth.json: OAuth tokens of remote MCP servers (``nyz mcp login``)."""
    return data_dir(env) / "mcp-auth.json"


@secret_file("nyz's MCP trust file", name="mcp_trust")
def mcp_trust_path(env: Mapping[str, str] | None = None) -> Path:
    """data_dir()/mcp-trust.json: the legacy record of approved ``.mcp.json`` servers."""
    return data_dir(env) / "mcp-trust.json"


def approvals_path(env: Mapping[str, str] | None = None) -> Path:
    """Tools approved "always" per workspace (``agent.trust.remember_approvals``)."""
    return state_dir(env) / "approvals.json"


def _project_key(workspace_root: Path | str) -> str:
    """The first 16 hex digits of the SHA-256 of the workspace root's absolute,
    symlink-resolved path, so one project gets one directory however it is reached."""
    resolved = os.path.realpath(os.path.abspath(os.fspath(workspace_root)))
    return hashlib.sha256(resolved.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def project_data_dir(workspace_root: Path | str, env: Mapping[str, str] | None = None) -> Path:
    """data_dir()/projects/<hash>: per-project data (the semantic index, project memory)."""
    return data_dir(env) / "projects" / _project_key(workspace_root)


def tool_results_dir(workspace_root: Path | str, env: Mapping[str, str] | None = None) -> Path:
    """state_dir()/tool-results/<hash>: the full text of tool outputs too long for the thread.

    Run-time files, kept out of the workspace so ``git add -A`` never commits them (they
    were under ``.nyzhi/context/tool-results/``); the read, tail_file and grep tools read them
    from here."""
    return state_dir(env) / "tool-results" / _project_key(workspace_root)


def user_memory_path(env: Mapping[str, str] | None = None) -> Path:
    """data_dir()/MEMORY.md: the user's memory, shared by every project."""
    return data_dir(env) / "MEMORY.md"


def display_path(path: str | os.PathLike[str], root: str | os.PathLike[str] | None, *,
                 real_root: bool = False) -> str:
    """``path`` as a person (or the model) reads it: relative to ``root`` when it lies under
    it, else as given; ``real_root`` compares with ``root``'s real path (for paths that were
    resolved, as a lease's or a checkpoint's are). The one display-path helper."""
    if root is None:
        return str(path)
    base = Path(os.path.realpath(root)) if real_root else Path(root)
    try:
        return str(Path(path).relative_to(base))
    except ValueError:
        return str(path)
