"""The methods attrs generates, compiled once and kept beside nyzhi's own bytecode.

attrs writes each class's ``__init__``, ``__eq__``, ``__repr__`` … as Python source and
compiles it while the class is created. ``nyz run`` creates about 280 such classes (its own,
trio's and actors') before its first request, and ``compile`` alone was 25-30 ms of that
path: more than any module. Python keeps compiled bytecode for modules in ``__pycache__``;
this does the same for attrs' generated source, so later starts load code objects instead.

Why it is safe to trust: the cache file lives in the directory where Python keeps nyzhi's own
bytecode (``__pycache__`` next to ``nyzhi/__init__.py``, or under ``PYTHONPYCACHEPREFIX``),
which Python itself loads code from without any check a writer could not pass. Whoever can
write the cache can already write nyzhi's ``.pyc`` (or ``.py``) files, so it adds nothing an
attacker (a sandboxed command, say) could use: a sandbox that leaves nyzhi's installation
writable has lost already, and one that does not cannot write here either. Files that others
than the owner may write (group or world writable, or not ours) are not read.

Why it is correct: an entry is used only for the exact source text and file name attrs asks
to compile (the text is compared, not a hash of it), with the same compiler flags, under the
same Python (the file starts with the interpreter's bytecode magic number). Anything else, or
a file that does not load, is compiled as before. New entries are written atomically (a
temporary file renamed over the old one) when a command ends, and only where Python would
write bytecode (not under ``PYTHONDONTWRITEBYTECODE``): ``make`` prepares it there, as it
compiles the bytecode (``python -m nyzhi.codecache``).

The standard library's ``dataclasses`` does the same (``exec`` of each generated method's
source): urwid creates 13 dataclasses as the console starts, h11 and h2 more, ~9 ms of
compiling in all. Those are kept the same way, in their own groups (``dataclasses.urwid.widget``),
looked up by their exact source text.

Only the command-line entry installs it (``nyzhi.cli.main``); a program embedding nyzhi keeps
attrs and dataclasses as it found them.
"""

from __future__ import annotations

import marshal
import os
import stat
import sys
from types import CodeType
from typing import Any

_FORMAT = 1
_MAX_ENTRIES = 2000  # distinct generated scripts kept per file; the unused go first past this
_PREFIX = "attrs-"

_dir: str | None = None
# One file per group of modules (the first two parts of the class's module: ``nyzhi.core``,
# ``trio._core``, ``lsprotocol.types``), read when a class of the group is first created: a
# command pays for the groups it uses, not for every class the cache holds. In each, attrs'
# file name -> (source, marshalled code), the code unmarshalled only on a hit.
_groups: dict[str, dict[str, tuple[str, bytes]]] = {}
_used: set[str] = set()
_dirty: set[str] = set()
_installed = False
_real_compile = compile


def _magic() -> bytes:
    from importlib.util import MAGIC_NUMBER

    return MAGIC_NUMBER + bytes([_FORMAT])


def cache_dir() -> str | None:
    """Where Python keeps nyzhi's bytecode (the cache's files go there); None when Python
    would keep none (a frozen or zip-imported nyzhi)."""
    import importlib.util

    package = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__init__.py")
    try:
        pyc = importlib.util.cache_from_source(package)
    except NotImplementedError:  # sys.implementation.cache_tag is None
        return None
    return os.path.dirname(pyc)


def _group(filename: str) -> str:
    """``<attrs generated methods nyzhi.core.events.TextDelta>`` -> ``nyzhi.core``."""
    dotted = filename.rstrip(">").rsplit(" ", 1)[-1]
    return _safe(".".join(dotted.split(".")[:2]))


def _safe(group: str) -> str:
    """``group`` as a piece of a file name."""
    return "".join(c if c.isalnum() or c in "._" else "_" for c in group) or "_"


def _file(group: str) -> str:
    assert _dir is not None
    return os.path.join(_dir, f"{_PREFIX}{group}.{sys.implementation.cache_tag}.bin")


def _trusted(path: str) -> bool:
    """Ours, and writable by nobody else: the file and the directory holding it."""
    uid = os.getuid()
    for each in (path, os.path.dirname(path)):
        info = os.stat(each)
        if info.st_uid != uid or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return False
    return True


def _load(path: str) -> dict[str, tuple[str, bytes]]:
    try:
        if not _trusted(path):
            return {}
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return {}
    magic = _magic()
    if not data.startswith(magic):
        return {}
    try:
        entries = marshal.loads(data[len(magic):])
    except (EOFError, ValueError, TypeError):
        return {}
    return entries if isinstance(entries, dict) else {}


def _entries(group: str) -> dict[str, tuple[str, bytes]]:
    found = _groups.get(group)
    if found is None:
        found = _groups[group] = _load(_file(group))
    return found


def _unsalted(source: str) -> str:
    """The source with attrs' per-class hash salt masked. A generated ``__hash__`` mixes in
    ``hash()`` of a name, which differs in every process (``PYTHONHASHSEED``); the cached code
    keeps the salt of the process that compiled it, which serves the same purpose (a constant
    that differs between classes) just as well."""
    if "hash" not in source:
        return source
    global _SALT
    if _SALT is None:
        import re

        _SALT = re.compile(r"-?\d{12,}")
    return _SALT.sub("<salt>", source)


_SALT: Any = None


def _compile(source: object, filename: object, mode: str, *args: object, **kwargs: object):
    """attrs' ``compile``: the cached code for this exact source and file name, else compiled
    (and remembered). Calls with other arguments than attrs makes go straight through."""
    if (args or kwargs or mode != "exec" or type(source) is not str
            or type(filename) is not str or _dir is None):
        return _real_compile(source, filename, mode, *args, **kwargs)  # type: ignore[call-overload]
    return _cached(_group(filename), filename, source, filename)


def _dataclass_exec(source: object, globals: object = None, locals: object = None, /) -> None:
    """dataclasses' ``exec`` of a generated method's source: the cached code for this exact
    text (the text is the entry's key), grouped by the class's module; anything else is
    executed as given."""
    if type(source) is str and type(globals) is dict and _dir is not None:
        module = globals.get("__name__")
        if type(module) is str:
            group = _safe("dataclasses." + ".".join(module.split(".")[:2]))
            # compiled as dataclasses' own ``exec`` compiles it: without this module's
            # ``from __future__ import annotations`` (the methods' annotations are objects)
            source = _cached(group, source, source, "<string>", dont_inherit=True)
    exec(source, globals, locals)  # type: ignore[arg-type]


def _cached(group: str, key: str, source: str, filename: str, *,
            dont_inherit: bool = False) -> CodeType:
    """The code of ``source`` compiled as ``filename``: from the group's entry ``key`` when it
    holds this exact source (a key that is the source itself holds it by being found), else
    compiled and remembered there. ``dont_inherit``: compiled without this module's future
    flags (attrs' module has the same ones as this, so its source is compiled with them)."""
    entries = _entries(group)
    hit = entries.get(key)
    if hit is not None and (key == source or hit[0] == source or hit[0] == _unsalted(source)):
        try:
            code = marshal.loads(hit[1])
        except (EOFError, ValueError, TypeError):
            code = None
        if type(code) is CodeType:
            _used.add(key)
            return code
    code = _real_compile(source, filename, "exec", dont_inherit=dont_inherit)
    entries[key] = ("" if key == source else _unsalted(source), marshal.dumps(code))
    _used.add(key)
    _dirty.add(group)
    return code


def install() -> None:
    """Serve attrs' compiles from the cache from now on (idempotent). attrs is patched when it
    is imported (at once if it already is), so a command that never creates a class (``nyz
    --help``) pays nothing; classes created before this call were compiled as usual."""
    global _installed, _dir
    if _installed:
        return
    _installed = True
    _dir = cache_dir()
    if _dir is None:
        return
    for name, (attr, patched) in _PATCHES.items():
        if name in sys.modules:
            setattr(sys.modules[name], attr, patched)
        else:
            _PatchFinder.waiting.add(name)
    if _PatchFinder.waiting:
        sys.meta_path.insert(0, _PatchFinder)  # type: ignore[arg-type]


# The module whose generated source is compiled -> the builtin it calls, and its replacement.
_PATCHES: dict[str, tuple[str, Any]] = {
    "attr._make": ("compile", _compile), "dataclasses": ("exec", _dataclass_exec)}


class _PatchFinder:
    """Finds ``attr._make`` and ``dataclasses`` once each, through the finders after it, so
    that each module is patched right after it executes and before any class is created with
    it."""

    waiting: set[str] = set()

    @classmethod
    def find_spec(cls, name: str, path: object, target: object = None) -> object:
        if name not in cls.waiting:
            return None
        cls.waiting.discard(name)
        if not cls.waiting:
            sys.meta_path.remove(cls)  # type: ignore[arg-type]
        for finder in sys.meta_path:
            if finder is cls:
                continue
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _PatchingLoader(spec.loader, *_PATCHES[name])
                return spec
        return None


class _PatchingLoader:
    """The real loader of a patched module; after executing the module, points its
    ``compile`` (attrs) or ``exec`` (dataclasses) at the cache. Everything else is the real
    loader's."""

    def __init__(self, inner: object, attr: str, patched: Any) -> None:
        self._inner = inner
        self._attr = attr
        self._patched = patched

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)

    def create_module(self, spec: object) -> object:
        return self._inner.create_module(spec)  # type: ignore[attr-defined]

    def exec_module(self, module: object) -> None:
        self._inner.exec_module(module)  # type: ignore[attr-defined]
        setattr(module, self._attr, self._patched)


def save(*, force: bool = False) -> None:
    """Write the groups that gained classes since they were read, if any did and Python would
    write bytecode here (``force`` for ``make``'s warm-up, which compiles bytecode too).
    Never raises: a cache that cannot be written is only slower.

    Why not ``nyzhi.config.fsutil.atomic_write``, the one atomic write: this module sits under
    every layer (``nyzhi.cli.main`` installs it before any attrs class exists, and it imports
    nothing of nyzhi's, so it can never be the first importer of a module whose classes it
    should cache), and what it writes needs none of that write's guarantees: no fsync (a
    cache lost to a crash is rebuilt: ``_load`` refuses a torn file by its magic and
    ``marshal``), no protected-path check (it writes beside nyzhi's own bytecode, never in
    a workspace), no user-facing error. What it shares: a temp file created exclusively and
    never through a symlink, renamed over the old file, removed when anything fails."""
    if not _dirty or _dir is None or (sys.dont_write_bytecode and not force):
        return
    try:
        os.makedirs(_dir, exist_ok=True)
    except OSError:
        return
    while _dirty:
        group = _dirty.pop()
        entries = _groups[group]
        if len(entries) > _MAX_ENTRIES:
            unused = [name for name in entries if name not in _used]
            for name in unused[: len(entries) - _MAX_ENTRIES]:
                del entries[name]
        path = _file(group)
        tmp = f"{path}.{os.getpid()}-{os.urandom(4).hex()}.tmp"
        try:  # exclusive and never through a symlink, as the one atomic write's temp file
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                         | getattr(os, "O_CLOEXEC", 0), 0o644)
            with os.fdopen(fd, "wb") as fh:
                fh.write(_magic() + marshal.dumps(entries))
            os.replace(tmp, path)
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _warm() -> int:
    """``python -m nyzhi.codecache``: import every module of nyzhi and actors (and trio,
    httpx) so the classes they create are compiled and the cache written, as ``make``
    compiles the bytecode. Modules that do not import here (an optional dependency
    missing) are skipped."""
    import importlib
    import pkgutil

    install()
    import httpcore  # noqa: F401  (httpx imports it with its first client: h11's dataclasses)
    import httpx  # noqa: F401
    import trio  # noqa: F401

    import actors
    import nyzhi

    for package in (nyzhi, actors):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if ".testing" in info.name or info.name.endswith("__main__"):
                continue
            try:
                importlib.import_module(info.name)
            except Exception:  # noqa: BLE001 (an optional dependency; that module is skipped)
                continue
    save(force=True)
    return 0


if __name__ == "__main__":
    from nyzhi.codecache import _warm  # the module's own copy, the one nyzhi.cli installs

    raise SystemExit(_warm())
