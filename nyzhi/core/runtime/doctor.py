"""``nyz doctor`` and ``/doctor``: is this machine ready for nyz, and if not, what to do.

One ``Check`` per thing nyz depends on, each with a status (``ok``, ``warn``: nyz works
without it, with less; ``fail``: something the configuration asks for cannot work) and, when
not ok, the fix. The checks are real: the sandbox check runs ``true`` under bubblewrap
through ``SandboxPolicy.wrap`` (the argv every sandboxed command gets), and ``online`` makes
one authenticated model-list request per provider (``refresh_models``), the cheapest call
every API offers.

Configuration is loaded as a run loads it (``load_trusted``: a project's unapproved gated
parts left out), so the doctor reports what ``nyz run`` would use.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nyzhi import records, spawn

OK, WARN, FAIL = "ok", "warn", "fail"
# Language servers nyz's code intelligence starts by default, by language: any one will do.
LANGUAGE_SERVERS: dict[str, tuple[str, ...]] = {
    "python": ("basedpyright-langserver", "pyright-langserver", "pylsp"),
    "typescript": ("typescript-language-server",),
    "go": ("gopls",),
    "rust": ("rust-analyzer",),
    "c/c++": ("clangd",),
}
# How to ask a language server its version: a server that is on PATH but does not run (a
# rustup proxy without the rust-analyzer component, a broken install) fails this. Servers not
# listed (basedpyright, pyright: node scripts that would start serving) are only looked up.
VERSION_ARGS: dict[str, tuple[str, ...]] = {
    "rust-analyzer": ("--version",), "gopls": ("version",), "clangd": ("--version",),
    "typescript-language-server": ("--version",), "pylsp": ("--version",),
}
VERSION_TIMEOUT_S = 5.0
# What fixes a server that does not run, where the usual cause is known.
NOT_RUNNING_FIX = {"rust-analyzer": "rustup component add rust-analyzer"}
LOW_DISK = 1 << 30  # below this much free space: a warning
NO_DISK = 100 << 20  # below this: a failure (sessions, indexes and tool output need room)


@records.frozen
class Check:
    name: str
    status: str
    detail: str
    fix: str = ""

    def line(self) -> str:
        mark = {OK: "ok  ", WARN: "warn", FAIL: "FAIL"}[self.status]
        text = f"{mark}  {self.name:<22} {self.detail}"
        return f"{text}\n      fix: {self.fix}" if self.fix and self.status != OK else text


def failed(checks: list[Check]) -> bool:
    return any(c.status == FAIL for c in checks)


def verdict(checks: list[Check]) -> str:
    """The last line of ``nyz doctor`` and ``/doctor``: failures first, and never "all checks
    passed" beside warnings (a user read that as nothing to fix)."""
    bad = sum(c.status == FAIL for c in checks)
    warned = sum(c.status == WARN for c in checks)
    if bad:
        tail = f", {warned} warning{'s' * (warned != 1)}" if warned else ""
        return f"{bad} check{'s' * (bad != 1)} failed{tail}"
    if warned:
        return f"passed with {warned} warning{'s' * (warned != 1)}"
    return "all checks passed"


def run_checks(cwd: Path, env: Mapping[str, str] | None = None, *,
               online: bool = False) -> list[Check]:
    """Every check, in the order they are shown."""
    from nyzhi.config import Config, ConfigError
    from nyzhi.config.project_trust import load_trusted

    env = os.environ if env is None else env
    checks: list[Check] = []
    try:
        loaded, _verdict = load_trusted(cwd, env)
        config = loaded.config
        root = loaded.workspace.root
        checks.append(Check("config", OK, f"{len(loaded.warnings)} warning(s)"
                            if loaded.warnings else "loaded"))
    except ConfigError as exc:
        config, root = Config(), cwd
        checks.append(Check("config", FAIL, str(exc).splitlines()[0],
                            "correct the file and key named above (`nyz config` shows them)"))
    providers = provider_checks(config, env, online=online)
    checks += providers
    checks.append(sandbox_check(config, Path(root)))
    checks += tool_checks(config, env)
    checks += web_checks(config, env)
    checks.append(offline_model_check(have_provider=any(c.status == OK for c in providers)))
    checks += mcp_login_checks(config, Path(root), env, online=online)
    checks += permission_checks(env)
    checks.append(disk_check(env))
    return checks


def mcp_login_checks(config: Any, root: Path, env: Mapping[str, str], *,
                     online: bool) -> list[Check]:
    """Each url MCP server's OAuth login (``nyz mcp login``). A stored login is judged offline
    (expired without a refresh token: a warning); whether a server without one wants one is
    only known by asking it, so that is checked ``online`` (an unauthenticated request
    answered 401)."""
    import time

    from nyzhi.auth.mcp_tokens import McpTokenStoreError, login_of
    from nyzhi.config.mcp_sources import declared_servers
    from nyzhi.config.schema import McpStdioServer

    try:
        entries = declared_servers(config, root, env)
    except Exception:  # noqa: BLE001 - a broken .mcp.json is the config check's to report
        return []
    checks = []
    for entry in entries:
        server = entry.server
        if isinstance(server, McpStdioServer) or any(
                k.lower() == "authorization" for k in server.headers):
            continue
        label, fix = f"mcp {entry.name}", f"nyz mcp login {entry.name}"
        try:
            stored = login_of(entry.name, server.url, env)
        except McpTokenStoreError as exc:
            checks.append(Check(label, FAIL, str(exc), fix))
            continue
        if stored is not None:
            tokens = stored.get("tokens") or {}
            expires = stored.get("expires_at")
            if isinstance(expires, int | float) and expires < time.time() \
                    and not tokens.get("refresh_token"):
                checks.append(Check(label, WARN, "needs login: the stored token expired", fix))
            else:
                checks.append(Check(label, OK, "logged in (OAuth)"))
        elif online:
            if _wants_login(server.url):
                checks.append(Check(label, WARN, "needs login: the server answers 401", fix))
            else:
                checks.append(Check(label, OK, "no login needed"))
    return checks


def _wants_login(url: str) -> bool:
    """Whether an unauthenticated MCP ``initialize`` to ``url`` is answered 401."""
    import httpx

    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "nyz-doctor", "version": "0"}}}
    try:
        response = httpx.post(url, json=body, timeout=10, headers={
            "Accept": "application/json, text/event-stream"})
    except httpx.HTTPError:
        return False
    return response.status_code == 401


# ---- providers ------------------------------------------------------------------------------


def _provider_names(config: Any, env: Mapping[str, str]) -> list[str]:
    """The configured providers: ``[provider] default``, every ``[provider.NAME]``, and each
    built-in one with a key found (environment or auth.json)."""
    from nyzhi.auth import collect_accounts
    from nyzhi.config.presets import BUILTIN_PROVIDERS

    names = [n for n in (config.provider.default, *config.provider.entries) if n]
    for name in BUILTIN_PROVIDERS:
        if name not in names:
            try:
                accounts, _, _ = collect_accounts(name, config.provider.get(name), env=env)
            except Exception:  # noqa: BLE001 - an unreadable auth.json is its own check
                accounts = []
            if accounts:
                names.append(name)
    return list(dict.fromkeys(names))


def provider_checks(config: Any, env: Mapping[str, str], *, online: bool) -> list[Check]:
    from nyzhi.core.runtime.assembly import RuntimeConfigError, provider_spec

    names = _provider_names(config, env)
    if not names:
        return [Check("providers", WARN, "none configured: nyz uses its offline model",
                      "set ANTHROPIC_API_KEY (or another provider's key), or run `nyz login`")]
    checks = []
    for name in names:
        label = f"provider {name}"
        try:
            spec = provider_spec(name, config, env)
        except RuntimeConfigError as exc:
            checks.append(Check(label, FAIL, str(exc).split(":", 1)[0], str(exc)))
            continue
        account = spec.key.current_account()
        where = (f"key from {account.origin or account.source}" if account is not None
                 else "no key (none required)")
        detail = f"{where} · {spec.base_url}"
        if online:
            error = _online(spec)
            if error:
                checks.append(Check(label, FAIL, f"{where} · the API refused or failed: {error}",
                                    f"check the key (`nyz whoami`) and [provider.{name}] "
                                    "base_url; `nyz login` stores a new key"))
                continue
            detail += " · authenticated call ok"
        checks.append(Check(label, OK, detail))
    return checks


def _online(spec: Any) -> str:
    """'' when the provider answered its model list, else why not."""
    import trio

    from nyzhi.core.errors import describe_error
    from nyzhi.provider.models import refresh_models

    async def call() -> None:
        with trio.fail_after(20):
            await refresh_models(spec, register_unknown=False)

    try:
        trio.run(call)
    except Exception as exc:  # refused, 401, a timeout: the line says which
        return describe_error(exc) or type(exc).__name__
    return ""


# ---- tools --------------------------------------------------------------------------------


def sandbox_check(config: Any, root: Path) -> Check:
    """``true`` under bubblewrap, through the policy the bash tool uses."""
    import attrs

    from nyzhi.config.modes import SandboxLevel
    from nyzhi.core.runtime.assembly import sandbox_policy
    from nyzhi.tools.sandbox import BWRAP_INSTALL_HINT, SandboxUnavailable

    policy = sandbox_policy(config, root)
    level = policy.level
    # what bash would run at workspace-write, refusing rather than falling back
    policy = attrs.evolve(policy, level=SandboxLevel.WORKSPACE_WRITE, bwrap_fallback="refuse")
    needed = level is not SandboxLevel.FULL_ACCESS
    bad = FAIL if needed else WARN
    try:
        with policy.standins(root) as held:  # the stand-ins bwrap makes are removed after
            wrapped = policy.wrap(["true"], root)
            held.note(wrapped.argv)
            proc = spawn.run(wrapped.argv, cwd=root, capture_output=True, timeout=30,
                             check=False)
    except SandboxUnavailable:
        return Check("sandbox (bwrap)", bad, "bwrap not found on PATH", BWRAP_INSTALL_HINT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Check("sandbox (bwrap)", bad, f"bwrap could not run: {exc}", BWRAP_INSTALL_HINT)
    if proc.returncode != 0:
        why = proc.stderr.decode(errors="replace").strip().splitlines()
        return Check("sandbox (bwrap)", bad,
                     f"a sandboxed `true` failed: {why[-1] if why else proc.returncode}",
                     "allow unprivileged user namespaces (sysctl "
                     "kernel.unprivileged_userns_clone=1 / apparmor_restrict_unprivileged_userns"
                     "=0), or set [agent.sandbox] level = \"full-access\"")
    return Check("sandbox (bwrap)", OK, f"a sandboxed `true` ran ({wrapped.argv[0]}; "
                 f"configured level {level.value})")


def _which(name: str, env: Mapping[str, str]) -> str | None:
    return shutil.which(name, path=env.get("PATH", os.defpath))


def tool_checks(config: Any, env: Mapping[str, str]) -> list[Check]:
    checks = []
    git = _which("git", env)
    checks.append(Check("git", OK, git) if git else Check(
        "git", FAIL, "not found on PATH (/diff, undo in repositories, deepinit need it)",
        "install git (Debian/Ubuntu: `apt-get install git`)"))
    rg = _which("rg", env)
    checks.append(Check("ripgrep (rg)", OK, rg) if rg else Check(
        "ripgrep (rg)", WARN, "not found: grep falls back to a slower scan in Python",
        "install ripgrep (Debian/Ubuntu: `apt-get install ripgrep`)"))
    node = _which("node", env)
    wants_node = sorted(
        name for name, server in config.mcp.servers.items()
        if os.path.basename(getattr(server, "command", "") or "") in ("node", "npx", "npm"))
    if node:
        checks.append(Check("node (MCP servers)", OK, node))
    elif wants_node:
        checks.append(Check("node (MCP servers)", FAIL,
                            f"not found, and MCP server(s) {', '.join(wants_node)} need it",
                            "install Node.js (https://nodejs.org, or your package manager)"))
    else:
        checks.append(Check("node (MCP servers)", WARN,
                            "not found: MCP servers started with npx/node will not run",
                            "install Node.js if you add such servers"))
    for language, names in LANGUAGE_SERVERS.items():
        found = next(((n, p) for n, p in ((n, _which(n, env)) for n in names) if p), None)
        if found is None:
            checks.append(Check(
                f"lsp {language}", WARN, "no language server on PATH (" + ", ".join(names) + ")",
                f"install {names[0].removesuffix('-langserver')} for code intelligence in "
                f"{language}"))
            continue
        name, path = found
        broken = _does_not_run(path, VERSION_ARGS.get(name), env)
        checks.append(Check(f"lsp {language}", OK, path) if broken is None else Check(
            f"lsp {language}", WARN, f"{path} is on PATH but does not run: {broken}",
            NOT_RUNNING_FIX.get(name, f"reinstall {name}")))
    return checks


def _does_not_run(path: str, args: tuple[str, ...] | None, env: Mapping[str, str]) -> str | None:
    """Why ``path args`` (its version command) fails, or None when it answers (or when the
    server has no version command to ask)."""
    if args is None:
        return None
    import subprocess

    try:
        proc = spawn.run([path, *args], capture_output=True, stdin=subprocess.DEVNULL,
                              env=dict(env), timeout=VERSION_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return f"its version command did not answer within {VERSION_TIMEOUT_S:.0f} s"
    except OSError as exc:
        return exc.strerror or str(exc)
    if proc.returncode == 0:
        return None
    text = (proc.stderr or proc.stdout).decode("utf-8", "replace")
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return f"exit {proc.returncode}" + (f" ({line[:200]})" if line else "")


def web_checks(config: Any, env: Mapping[str, str]) -> list[Check]:
    """``web_search`` (offered only when ``[web_search]`` names a usable backend) and the
    browser the browser tools start."""
    from nyzhi.tools.builtin.web_search import search_tool
    from nyzhi.tools.cdp import BrowserUnavailable, find_browser

    checks = []
    backend = config.web_search.backend
    if not backend:
        checks.append(Check(
            "web_search", WARN, "no backend configured: the tool is not offered",
            'add [web_search] backend = "searxng" and url = "http://HOST:PORT" (keyless, '
            'self-hosted), or backend = "brave" / "tavily" / "exa" with its key '
            "(BRAVE_API_KEY, … or `nyz login brave`)"))
    else:
        tool, notice = search_tool(config, env)
        checks.append(Check("web_search", OK, f"{backend}") if tool is not None else Check(
            "web_search", FAIL, notice or f"{backend}: not usable",
            "fix the [web_search] key named above"))
    browser = config.browser
    try:
        exe = find_browser(browser.executable or browser.executable_path, env.get("PATH"))
        checks.append(Check("browser", OK, exe))
    except BrowserUnavailable as exc:
        if browser.executable or browser.executable_path:  # asked for, and not there
            checks.append(Check("browser", FAIL, str(exc).split(";")[0],
                                "set [browser] executable to a Chromium or Chrome binary"))
        else:
            why, _, fix = str(exc).partition(": ")
            checks.append(Check("browser", WARN, why + ": the browser_* tools cannot run", fix))
    return checks


def offline_model_check(*, have_provider: bool) -> Check:
    from nyzhi.provider.llama_server import find_default_model, unavailable_reason

    reason = unavailable_reason()
    if reason is None:
        return Check("offline model", OK, str(find_default_model()))
    return Check("offline model", WARN if have_provider else FAIL,
                 "not available" + ("" if have_provider else ", and no provider is configured"),
                 reason)


# ---- files --------------------------------------------------------------------------------


def permission_checks(env: Mapping[str, str]) -> list[Check]:
    """auth.json readable by its owner only; nyz's data, state and session dirs not open to
    other users (they hold conversations and approvals)."""
    from nyzhi.config import paths

    checks = []
    auth = paths.auth_path(env)
    checks.append(_mode_check("auth.json", auth, 0o600))
    checks.append(_mode_check("mcp-auth.json", paths.mcp_auth_path(env), 0o600))
    # the data and state dirs may be listable (their files are 0600, and a parent made by
    # mkdir -p gets the umask): a warning; nyz makes the sessions dir 0700: a failure
    checks.append(_mode_check("data dir", paths.data_dir(env), 0o700, loose_status=WARN))
    checks.append(_mode_check("state dir", paths.state_dir(env), 0o700, loose_status=WARN))
    checks.append(_mode_check("sessions dir", paths.sessions_dir(env), 0o700))
    return checks


def _mode_check(name: str, path: Path, mode: int, loose_status: str = FAIL) -> Check:
    try:
        st = path.stat()
    except FileNotFoundError:
        return Check(name, OK, f"{path} (not created yet)")
    except OSError as exc:
        return Check(name, FAIL, f"{path}: {exc.strerror}", f"check the permissions of {path}")
    if st.st_uid != os.getuid():
        return Check(name, FAIL, f"{path} is owned by another user (uid {st.st_uid})",
                     f"chown {os.getuid()} {path}")
    loose = stat.S_IMODE(st.st_mode) & 0o077
    if loose:
        return Check(name, loose_status, f"{path} is open to other users "
                     f"(mode {stat.S_IMODE(st.st_mode):o})", f"chmod {mode:o} {path}")
    return Check(name, OK, f"{path} (mode {stat.S_IMODE(st.st_mode):o})")


def disk_check(env: Mapping[str, str]) -> Check:
    from nyzhi.config import paths

    where = paths.data_dir(env)
    while not where.exists() and where != where.parent:
        where = where.parent
    free = shutil.disk_usage(where).free
    text = f"{free / (1 << 30):.1f} GiB free at {where}"
    fix = "free some space, or point XDG_DATA_HOME at a disk with room"
    if free < NO_DISK:
        return Check("disk space", FAIL, text, fix)
    if free < LOW_DISK:
        return Check("disk space", WARN, text, fix)
    return Check("disk space", OK, text)
