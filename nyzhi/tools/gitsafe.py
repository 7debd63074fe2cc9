"""Running ``git`` on the host without running anything a repository's config names.

Why this exists: the sandboxed shell can write files in the workspace, and a repository's
``.git/config``, ``.git/hooks`` and ``.gitattributes`` decide which programs git starts (an
fsmonitor, hooks, clean/smudge filters, external diff and textconv drivers, a pager, an
editor, an SSH command, credential helpers, the ``ext::`` transport, gpg). The git tools,
session start and team worktrees run git *outside* the sandbox, as the user; if they obeyed
such a config, code planted from inside the sandbox would run outside it.

We chose to neutralise those keys on every host git run, rather than running git inside the
sandbox, because:

* it holds wherever git runs: under every sandbox level, without bubblewrap, through
  ``nyz mcp serve``, at session start (before any tool), and on remote nodes (the overrides
  travel in the command line);
* command-line configuration (``-c``) outranks every config file, including files pulled in
  with ``include.path``, so no repository can take it back;
* ``git_commit`` and ``git_checkout`` must write ``.git``, which the sandbox keeps read-only
  (``nyzhi.tools.protected``), so they could not run inside it anyway.

What is overridden (``SAFE_CONFIG``) and why each is enough:

* ``core.fsmonitor=false``; ``core.hooksPath=/dev/null`` (no hook can exist under it, so no
  hook runs, ``pre-commit`` included: ``git_commit`` is our own tool and runs none);
* ``core.pager=cat`` (and ``--no-pager``), ``core.editor``/``sequence.editor`` ``:`` (git
  skips an editor named ``:``), ``GIT_EDITOR``/``GIT_SEQUENCE_EDITOR`` likewise;
* ``diff.external`` empty, and ``--no-ext-diff --no-textconv`` on every diff-producing command
  (``EXT_DIFF_OFF``): per-driver ``diff.<name>.command``/``textconv`` cannot run;
* filter and merge drivers: their names are arbitrary, so each run first lists the drivers
  defined in the *repository's* config (scope local or worktree) and blanks them
  (``driver_overrides``); drivers the user defined in their own global or system config (such
  as git-lfs) keep working;
* transports: ``GIT_ALLOW_PROTOCOL=none`` allows no transport at all (it overrides any
  ``protocol.<name>.allow``), ``GIT_NO_LAZY_FETCH=1`` (partial clones), ``core.sshCommand``,
  ``core.askPass``, ``core.gitProxy`` and ``credential.helper`` cleared: none of the tools
  talks to a remote;
* ``commit.gpgSign``/``tag.gpgSign``/``log.showSignature`` false (no gpg program runs);
* ``safe.bareRepository=explicit``: a bare repository planted in the workspace (``HEAD``,
  ``objects/``, ``config`` at its top) is not picked up by discovery;
* submodules are not entered (``submodule.recurse=false``, ``diff.ignoreSubmodules=all``), since
  a submodule's own config could name other drivers.

``--work-tree`` is pinned to the directory holding the nearest ``.git`` (``find_work_tree``),
so a planted ``core.worktree`` cannot point git's writes (``git_checkout``) or reads
(``git add -A``) outside the workspace.

Cost: the listing is one more ``git config`` run, made only when the repository's own config
file has a ``filter``, ``merge`` or ``include`` section (``needs_listing``: a read of one
small file otherwise); see ``python -m benchmarks sandbox``.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

from nyzhi import spawn

SAFE_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.editor", ":"),
    ("sequence.editor", ":"),
    ("core.sshCommand", "false"),
    ("core.askPass", ""),
    ("core.gitProxy", ""),
    ("core.alternateRefsCommand", ""),
    ("credential.helper", ""),
    ("protocol.allow", "never"),
    ("diff.external", ""),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("log.showSignature", "false"),
    ("safe.bareRepository", "explicit"),
    ("submodule.recurse", "false"),
    ("diff.ignoreSubmodules", "all"),
    ("color.ui", "false"),
)

SAFE_ENV: dict[str, str] = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_EDITOR": ":",
    "GIT_SEQUENCE_EDITOR": ":",
    "GIT_ALLOW_PROTOCOL": "none",
    "GIT_NO_LAZY_FETCH": "1",
    "LC_ALL": "C",
}

# Added to diff, show and log: no external diff program, no textconv driver.
EXT_DIFF_OFF = ("--no-ext-diff", "--no-textconv")

# ``git config`` listing the repository's driver keys, NUL-separated with their scope.
LIST_DRIVERS = ("config", "-z", "--show-scope", "--get-regexp", r"^(filter|merge)\.")
_REPO_SCOPES = frozenset({"local", "worktree"})
_DRIVER_KEYS = {"filter": ("clean", "smudge", "process"), "merge": ("driver",)}


def config_args(extra: Iterable[tuple[str, str]] = ()) -> list[str]:
    """``-c key=value`` for ``SAFE_CONFIG`` then ``extra``."""
    out: list[str] = []
    for key, value in (*SAFE_CONFIG, *extra):
        out += ["-c", f"{key}={value}"]
    return out


def driver_overrides(listing: bytes | str) -> list[tuple[str, str]]:
    """The blanking overrides for every filter and merge driver that ``LIST_DRIVERS`` output
    shows defined in the repository's own config. An empty clean/smudge/process command means
    "no filter" to git; a required filter is made optional so the blank one is not an error."""
    text = listing.decode("utf-8", "surrogateescape") if isinstance(listing, bytes) else listing
    parts = text.split("\0")
    names: dict[str, set[str]] = {}
    for scope, entry in zip(parts[0::2], parts[1::2], strict=False):
        if scope not in _REPO_SCOPES:
            continue
        key = entry.split("\n", 1)[0]
        section, _, rest = key.partition(".")
        name, _, _leaf = rest.rpartition(".")
        if section.lower() in _DRIVER_KEYS and name:
            names.setdefault(section.lower(), set()).add(name)
    out: list[tuple[str, str]] = []
    for section, drivers in sorted(names.items()):
        for name in sorted(drivers):
            out += [(f"{section}.{name}.{leaf}", "") for leaf in _DRIVER_KEYS[section]]
            if section == "filter":
                out.append((f"filter.{name}.required", "false"))
    return out


_DRIVER_SECTION = re.compile(rb"\[\s*(filter|merge|include|includeif)\b", re.IGNORECASE)


def needs_listing(cwd: Path | str) -> bool:
    """Whether the repository holding ``cwd`` may define filter or merge drivers in its own
    config, so that they must be listed (and blanked) before git runs. False only when the
    nearest ``.git`` is a directory whose ``config`` (and ``config.worktree``) we could read
    and that has no ``filter``, ``merge`` or ``include`` section; anything else (a ``.git``
    file, an unreadable config, no repository: git may still find one) lists."""
    top = find_work_tree(cwd)
    if top is None:
        return True
    gitdir = top / ".git"
    if not gitdir.is_dir() or gitdir.is_symlink():
        return True
    for name in ("config", "config.worktree"):
        try:
            data = _read_regular(gitdir / name)
        except FileNotFoundError:
            if name == "config":
                return True
            continue
        except OSError:
            return True
        if _DRIVER_SECTION.search(data):
            return True
    return False


def _read_regular(path: Path) -> bytes:
    """A regular file's bytes; OSError for anything else. Opened without blocking, so a FIFO
    planted as ``.git/config`` cannot hang nyz (git itself may then wait on it, as a child
    of nyz that dies with it)."""
    import stat

    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read()
    finally:
        os.close(fd)


def find_work_tree(cwd: Path | str) -> Path | None:
    """The directory holding the nearest ``.git`` (directory or file) at or above ``cwd``:
    where git's discovery finds the repository and its work tree, whatever ``core.worktree``
    says. None when there is none (git then reports "not a git repository")."""
    here = Path(os.path.abspath(cwd))
    for candidate in (here, *here.parents):
        if os.path.lexists(candidate / ".git"):
            return candidate
    return None


def git_argv(args: Sequence[str], *, cwd: Path | str | None = None,
             drivers: Iterable[tuple[str, str]] = ()) -> list[str]:
    """``git --no-pager [-c …] [--work-tree=…] ARGS``: the neutralised command line.
    ``cwd`` (local runs) pins the work tree; ``drivers`` comes from ``driver_overrides``."""
    argv = ["git", "--no-pager", *config_args(drivers)]
    if cwd is not None:
        top = find_work_tree(cwd)
        if top is not None:
            argv.append(f"--work-tree={top}")
    return [*argv, *args]


def safe_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) with ``SAFE_ENV`` on top. Variables the
    user set themselves (``GIT_SSH_COMMAND``…) are theirs, not the repository's: they stay."""
    return {**(os.environ if base is None else base), **SAFE_ENV}


def run_git(cwd: Path | str, *args: str, timeout: float | None = None,
            env: dict[str, str] | None = None, text: bool = False) -> subprocess.CompletedProcess:
    """Blocking: list the repository's drivers, then run ``git ARGS`` neutralised in ``cwd``.
    For callers outside a tool (session start, team worktrees, the console's /diff)."""
    full_env = safe_env(env)
    drivers: list[tuple[str, str]] = []
    if needs_listing(cwd):
        listed = spawn.run(
            git_argv(LIST_DRIVERS, cwd=cwd), cwd=cwd, capture_output=True, timeout=timeout,
            env=full_env, check=False,
        )
        drivers = driver_overrides(listed.stdout) if listed.returncode == 0 else []
    return spawn.run(  # dies with nyz, SIGKILL included
        git_argv(args, cwd=cwd, drivers=drivers), cwd=cwd, capture_output=True,
        timeout=timeout, env=full_env, check=False, text=text,
    )


def _neutral(setting: str) -> bool:
    """Whether ``key=value`` is one of ours: a ``SAFE_CONFIG`` pair or a blanked driver."""
    key, eq, value = setting.partition("=")
    if not eq:
        return False
    if (key, value) in SAFE_CONFIG:
        return True
    section, _, rest = key.partition(".")
    name, _, leaf = rest.rpartition(".")
    if not name:
        return False
    if section == "filter":
        return (leaf in _DRIVER_KEYS["filter"] and value == "") or (
            leaf == "required" and value == "false")
    return section == "merge" and leaf == "driver" and value == ""


def strip_safe_prefix(args: Sequence[str]) -> list[str]:
    """``args`` (git's, after the program name) without the prefix ``git_argv`` puts in front
    (``--no-pager``, our own ``-c`` overrides, one ``--work-tree``): what a command classifier
    such as the monitored executor's should judge. Anything else is left in place."""
    rest = list(args)
    if rest[:1] == ["--no-pager"]:
        rest = rest[1:]
    while len(rest) >= 2 and rest[0] == "-c" and _neutral(rest[1]):
        rest = rest[2:]
    if rest and rest[0].startswith("--work-tree="):
        rest = rest[1:]
    return rest


# Transports a clone may use (``clone``): never ``ext::`` (it runs a command) nor ssh (its
# command is the user's to set; core.sshCommand stays disabled).
CLONE_PROTOCOLS = "file:https:http:git"


def clone(url: str, dest: Path | str, *, ref: str = "", sha: str = "",
          timeout: float = 300.0) -> str | None:
    """Blocking: clone ``url`` into ``dest`` under the same rules as every host git run (no
    hooks, no fsmonitor, no repository filters: a fresh clone has no repository config to
    define one, and submodules are not fetched), on the transports of ``CLONE_PROTOCOLS``
    only; then check out ``ref`` or ``sha``. Returns None, or why it failed in one line."""
    extra = [("protocol.allow", "user"), ("protocol.file.allow", "always"),
             ("protocol.https.allow", "always"), ("protocol.http.allow", "always"),
             ("protocol.git.allow", "always"), ("protocol.ext.allow", "never")]
    env = {**safe_env(), "GIT_ALLOW_PROTOCOL": CLONE_PROTOCOLS, "GIT_PROTOCOL_FROM_USER": "0"}
    argv = ["git", "--no-pager", *config_args(extra), "clone", "-q", "--no-recurse-submodules"]
    if ref and not sha:
        argv += ["--branch", ref]
    argv += ["--", url, str(dest)]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=timeout, env=env, check=False,
                              text=True)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"git clone {url}: {exc}"
    if done.returncode != 0:
        return f"git clone {url}: {(done.stderr.strip().splitlines() or ['failed'])[-1]}"
    if sha:
        done = run_git(dest, "checkout", "-q", "--detach", sha, timeout=timeout, text=True)
        if done.returncode != 0:
            return f"{url}: commit {sha} not found ({done.stderr.strip()[-200:]})"
    return None
