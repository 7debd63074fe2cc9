"""Credential files: the one list the sandbox masks and the read tools refuse.

Two sources: other programs' credentials (``BUILTIN_HIDE``, where ssh, cloud CLIs and other
agents keep keys) and nyz's own, which are *derived*: every file a nyz reader takes a
secret from is located through the registry ``nyzhi.config.secret_files``, and the masks
are built from it (``nyz_own``), so a new reader is masked without being listed here.

Bubblewrap mounts ``/`` read-only, which keeps a command from *writing* outside the workspace
but not from *reading* ``~/.ssh/id_ed25519`` and printing it into the conversation, where it
goes to the model provider. So every sandboxed command gets these paths masked in its mount
namespace (an empty ``tmpfs`` over a directory, ``/dev/null`` over a file), and the read and
search tools refuse them (``SandboxPolicy.check_read``). Both use ``hidden_paths`` below: one
list, one definition.

``[agent.sandbox] hide`` adds paths (``~`` expanded, relative ones under HOME); it cannot
remove a built-in one, so a project config cannot unmask the user's keys. ``full-access``
commands are not confined and see everything (that level promises nothing here).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from nyzhi import records

# Other programs' credentials, relative to HOME: (path, what it is).
BUILTIN_HIDE: tuple[tuple[str, str], ...] = (
    ("~/.ssh", "the SSH directory (~/.ssh: an SSH private key, config, known hosts)"),
    ("~/.aws", "AWS credentials (~/.aws)"),
    ("~/.config/gcloud", "Google Cloud credentials (~/.config/gcloud)"),
    ("~/.azure", "Azure credentials (~/.azure)"),
    ("~/.kube", "Kubernetes credentials (~/.kube)"),
    ("~/.gnupg", "GnuPG keys (~/.gnupg)"),
    ("~/.netrc", "a .netrc (passwords)"),
    ("~/.docker/config.json", "Docker registry credentials"),
    ("~/.codex/auth.json", "Codex's credentials"),
    ("~/.claude/.credentials.json", "Claude Code's credentials"),
    ("~/.config/gh/hosts.yml", "the GitHub CLI's tokens"),
)


@records.frozen
class Hidden:
    """One masked path: its real location, what it is, and whether it is a directory."""

    path: Path
    what: str
    is_dir: bool


def _home(env: Mapping[str, str] | None) -> Path:
    from nyzhi.config.paths import home_dir

    return home_dir(env)


def _expand(entry: str, home: Path) -> Path:
    if entry == "~" or entry.startswith("~/"):
        return home / entry[2:]
    path = Path(entry)
    return path if path.is_absolute() else home / path


def nyz_own(env: Mapping[str, str] | None = None,
            roots: Iterable[Path] = ()) -> list[tuple[Path, str]]:
    """nyz's own secrets and state: every file a reader registered as holding a secret
    (``nyzhi.config.secret_files``: auth.json, the user config with ``api_key``, the state
    directory with the approvals, the MCP trust file, the sessions, each workspace's private
    config layer), derived from the readers rather than listed here."""
    from nyzhi.config.secret_files import registered

    return registered(env, tuple(roots))


def hidden_paths(extra: Iterable[str] = (), env: Mapping[str, str] | None = None,
                 *, existing_only: bool = True, roots: Iterable[Path] = ()) -> list[Hidden]:
    """Every masked path, resolved (a symlinked ``~/.ssh`` masks its target), de-duplicated.
    With ``existing_only`` (what bubblewrap needs: it cannot mount over a missing path)
    paths that do not exist are left out. ``roots``: the workspaces whose per-workspace
    secret files count."""
    home = _home(env)
    entries = [(_expand(p, home), what) for p, what in BUILTIN_HIDE]
    entries += nyz_own(env, roots)
    entries += [(_expand(p, home), f"a path in [agent.sandbox] hide ({p})") for p in extra]
    out: list[Hidden] = []
    seen: set[Path] = set()
    for path, what in entries:
        real = Path(os.path.realpath(path))
        if real in seen:
            continue
        exists = real.exists()
        if existing_only and not exists:
            continue
        seen.add(real)
        out.append(Hidden(real, what, real.is_dir()))
    return out


def credential_kind(real: Path, extra: Iterable[str] = (),
                    env: Mapping[str, str] | None = None,
                    roots: Iterable[Path] = ()) -> str | None:
    """What credential the resolved path ``real`` is (or lies in), or None. The list is
    resolved once per HOME / XDG setting, workspace and registry version (the search tools
    ask for every file they match)."""
    from nyzhi.config.secret_files import version

    source = os.environ if env is None else env
    key = (tuple(extra), tuple(roots), version(), *(source.get(v) for v in _ENV_KEYS))
    for path, what in _resolved(key):
        if real == path or real.is_relative_to(path):
            return what
    return None


_ENV_KEYS = ("HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME",
             "XDG_RUNTIME_DIR")


@functools.lru_cache(maxsize=16)
def _resolved(key: tuple) -> tuple[tuple[Path, str], ...]:
    extra, roots, _version, *values = key
    env = {k: v for k, v in zip(_ENV_KEYS, values, strict=True) if v is not None}
    if "HOME" not in env:
        env["HOME"] = str(Path.home())
    return tuple((h.path, h.what) for h in hidden_paths(extra, env, existing_only=False,
                                                        roots=roots))
