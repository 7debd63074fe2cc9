"""The files nyz reads a secret from: one registry, used by the readers and by the sandbox.

The sandbox masks credential files from sandboxed commands and refuses them to the read
tools (``nyzhi.tools.credentials``). A list written by hand next to the masks goes stale the
day a feature starts reading a key from a new file, and that file is then readable from
``bash``. So the *readers* find their files here: a function that says where a secret file
is, decorated with ``@secret_file(what)``, is both what the reader calls to open the file
and an entry of the registry, and the masks are built from every entry (``registered``).
A new reader that finds its file through the registry is masked without anyone listing it.

Two kinds of entry:

* user-level (``secret_file``): ``locate(env)`` gives a path (nyz's auth.json, the user
  config that holds ``api_key``, the state directory, ...);
* per workspace (``workspace_secret``): ``locate(root)`` gives a path inside the workspace
  (``.nyzhi/config.local.toml``, the private layer that may hold keys).

Both kinds take only cheap, side-effect-free locators (they run at every sandboxed command).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

from nyzhi import records

F = TypeVar("F", bound=Callable[..., Path])


@records.frozen
class SecretFile:
    """One registered place: its locator, what it is (shown in refusals) and its kind."""

    name: str
    what: str
    locate: Callable[..., Path]
    per_workspace: bool = False


_REGISTRY: dict[str, SecretFile] = {}
_VERSION = [0]  # bumped on every change: caches keyed on it (``credentials``) see new entries


def secret_file(what: str, *, name: str | None = None) -> Callable[[F], F]:
    """Register a user-level locator ``locate(env: Mapping | None = None) -> Path``."""
    return _register(what, name, per_workspace=False)


def workspace_secret(what: str, *, name: str | None = None) -> Callable[[F], F]:
    """Register a per-workspace locator ``locate(root: Path) -> Path``."""
    return _register(what, name, per_workspace=True)


def _register(what: str, name: str | None, *, per_workspace: bool) -> Callable[[F], F]:
    def decorate(locate: F) -> F:
        key = name or f"{locate.__module__}.{locate.__qualname__}"
        _REGISTRY[key] = SecretFile(key, what, locate, per_workspace)
        _VERSION[0] += 1
        return locate

    return decorate


def unregister(name: str) -> None:
    """Drop an entry (tests that register one of their own)."""
    if _REGISTRY.pop(name, None) is not None:
        _VERSION[0] += 1


def version() -> int:
    return _VERSION[0]


def registered(env: Mapping[str, str] | None = None,
               roots: tuple[Path, ...] = ()) -> list[tuple[Path, str]]:
    """Every registered secret file: (path, what it is), the per-workspace ones for each of
    ``roots``. Importing the modules that hold the built-in readers' locators registers them
    (``nyzhi.config.paths``, ``nyzhi.config.workspace``)."""
    import nyzhi.config.paths
    import nyzhi.config.workspace  # noqa: F401  (their locators register on import)

    out: list[tuple[Path, str]] = []
    for entry in list(_REGISTRY.values()):
        if entry.per_workspace:
            out += [(Path(entry.locate(Path(root))), entry.what) for root in roots]
        else:
            out.append((Path(entry.locate(env)), entry.what))
    return out
