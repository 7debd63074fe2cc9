"""OAuth for remote MCP servers, against a loopback authorization server + protected resource
(``mcp_oauth_server.py``): login, a call with the token, a refresh, a revoked token, hostile
metadata, and tokens kept out of what nyz writes."""

from __future__ import annotations

import functools
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import trio

import actors
from nyzhi.config import paths
from nyzhi.config.mcp_sources import ServerEntry
from nyzhi.config.schema import McpHttpServer
from nyzhi.config.secrets import Redactor
from nyzhi.core.runtime.mcp.pool import McpPool
from nyzhi.core.runtime.server_supervision import Intensity
from nyzhi.tools.registry import ToolRegistry

SERVER = Path(__file__).with_name("mcp_oauth_server.py")


@pytest.fixture
def data(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path


async def _start(nursery, *extra: str) -> str:
    from nyzhi.provider.llama_server import free_loopback_port

    port = free_loopback_port()
    proc = await nursery.start(functools.partial(
        trio.run_process, [sys.executable, str(SERVER), "--port", str(port), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False))
    async for chunk in proc.stdout:
        if b"ready" in chunk:
            break
    return f"http://127.0.0.1:{port}"


def _approve(url: str) -> bool:
    """The person in the browser: approve at once and follow the redirect to nyz's listener."""
    assert httpx.get(url, follow_redirects=True, timeout=30).status_code == 200
    return True


async def _connect_once(base: str, root: Path, redactor=None, client_id: str | None = None,
                        client_secret_env: str | None = None) -> tuple[str, str, object]:
    """Connect a pool to the server: (status, reason, whoami's output or None)."""
    server = McpHttpServer(base + "/mcp", client_id=client_id,
                           client_secret_env=client_secret_env)
    async with actors.open_system() as system:
        pool = await McpPool.open(system, ToolRegistry(), [ServerEntry("oa", server)],
                                  root=root, intensity=Intensity(1, 30.0, actors.Backoff(0.01, 0.02)),
                                  redactor=redactor)
        await pool.wait_started()
        [status] = pool.statuses()
        out = None
        if status.status == "connected":
            out = (await pool.call_tool("oa", "whoami", {})).output
        await system.shutdown()
    return status.status, status.reason, out


async def test_login_call_refresh_revoke(data):
    from nyzhi.core.runtime.mcp.login import login

    async with trio.open_nursery() as nursery:
        base = await _start(nursery)
        # no login yet: one line naming the command, not a silent run without tools
        status, reason, _ = await _connect_once(base, data)
        assert status == "needs login" and reason == "MCP server 'oa' needs a login: run `nyz mcp login oa`"
        # nothing registered with the authorization server for a login nobody asked for
        stats = (await trio.to_thread.run_sync(httpx.get, base + "/admin/stats")).json()
        assert stats["clients"] == 0

        entry = ServerEntry("oa", McpHttpServer(base + "/mcp"))
        said: list[str] = []
        tools = await login(entry, say=said.append, open_url=lambda u: _approve(u))
        assert tools == 1 and "code_challenge_method=S256" in said[0] and "resource=" in said[0]
        store = paths.mcp_auth_path()
        assert stat.S_IMODE(store.stat().st_mode) == 0o600
        saved = json.loads(store.read_text())["servers"]["oa"]
        assert saved["url"] == base + "/mcp" and saved["tokens"]["access_token"].startswith("at-")

        assert await _connect_once(base, data) == ("connected", "", "alice")

        # expired while nyz was not running: refreshed before use
        doc = json.loads(store.read_text())
        doc["servers"]["oa"]["expires_at"] = 1.0
        store.write_text(json.dumps(doc))
        redactor = Redactor()
        assert (await _connect_once(base, data, redactor))[2] == "alice"
        stats = (await trio.to_thread.run_sync(httpx.get, base + "/admin/stats")).json()
        assert stats["grants"] == ["authorization_code", "refresh_token"]
        assert set(stats["resources"]) == {base + "/mcp"}  # RFC 8707 on every grant
        refreshed = json.loads(store.read_text())["servers"]["oa"]["tokens"]["access_token"]
        assert refreshed != saved["tokens"]["access_token"]
        # the session's redactor learnt the token it did not know at start-up
        assert refreshed not in redactor.redact(f"token {refreshed} here")
        assert "token_endpoint" in json.loads(store.read_text())["servers"]["oa"]["server_metadata"]

        # the server stops taking the access token before its expiry: refreshed on the 401
        await trio.to_thread.run_sync(httpx.post, base + "/admin/expire-access")
        assert await _connect_once(base, data) == ("connected", "", "alice")
        stats = (await trio.to_thread.run_sync(httpx.get, base + "/admin/stats")).json()
        assert stats["grants"] == ["authorization_code", "refresh_token", "refresh_token"]

        # revoked server-side: needs login again
        await trio.to_thread.run_sync(httpx.post, base + "/admin/revoke")
        status, reason, _ = await _connect_once(base, data)
        assert status == "needs login" and "nyz mcp login oa" in reason
        nursery.cancel_scope.cancel()


async def test_hostile_metadata_is_refused(data):
    from nyzhi.core.runtime.mcp.login import login

    async with trio.open_nursery() as nursery:
        base = await _start(nursery, "--hostile")
        entry = ServerEntry("evil", McpHttpServer(base + "/mcp"))
        opened: list[str] = []
        with pytest.raises(BaseException) as info:
            await login(entry, say=lambda line: None, open_url=lambda u: opened.append(u) or True)
        from nyzhi.core.runtime.mcp.oauth import OAuthRefused
        from nyzhi.core.runtime.server_supervision import leaf_error

        error = leaf_error(info.value)
        assert isinstance(error, OAuthRefused), error
        assert "http://192.0.2.7" in str(error) and "only HTTPS or loopback" in str(error)
        assert opened == []  # refused before any browser or token request
        store = paths.mcp_auth_path()
        assert not store.exists() or "tokens" not in store.read_text()
        nursery.cancel_scope.cancel()


def test_token_file_is_a_masked_secret_and_redacted(data):
    from nyzhi.auth.mcp_tokens import forget, secret_values
    from nyzhi.config.secret_files import registered

    store = paths.mcp_auth_path()
    assert store in [p for p, _ in registered()]
    store.parent.mkdir(parents=True)
    store.write_text(json.dumps({"version": 1, "servers": {"x": {
        "url": "https://x/mcp", "tokens": {"access_token": "at-secret-value-1",
                                           "refresh_token": "rt-secret-value-2"}}}}))
    assert set(secret_values().values()) == {"at-secret-value-1", "rt-secret-value-2"}
    assert forget("x") and not forget("x")
    assert "at-secret" not in store.read_text()


def test_cli_login_list_logout(data, tmp_path):
    """``nyz mcp login`` through $BROWSER, then ``nyz mcp list`` and ``nyz mcp logout``;
    no token reaches the state directory (logs) or the output."""
    async def main() -> None:
        async with trio.open_nursery() as nursery:
            base = await _start(nursery)
            work = tmp_path / "w"
            (work / ".nyzhi").mkdir(parents=True)
            cfg = tmp_path / "cfg"
            (cfg / "nyzhi").mkdir(parents=True)
            (cfg / "nyzhi" / "config.toml").write_text(f'[mcp.servers.oa]\nurl = "{base}/mcp"\n')
            browser = tmp_path / "browser.py"
            browser.write_text("import sys, httpx\nhttpx.get(sys.argv[1], follow_redirects=True)\n")
            env = {**os.environ, "XDG_CONFIG_HOME": str(cfg), "PYTHONPATH": os.getcwd(),
                   "BROWSER": f"{sys.executable} {browser} %s"}
            nyz = [sys.executable, "-m", "nyzhi"]

            def run(*a: str) -> subprocess.CompletedProcess:
                return subprocess.run([*nyz, *a], cwd=work, env=env, capture_output=True,
                                      text=True, timeout=120)

            listed = await trio.to_thread.run_sync(run, "mcp", "list")
            assert "needs login" in listed.stdout and "nyz mcp login oa" in listed.stdout
            doctor = await trio.to_thread.run_sync(run, "doctor", "--online")
            [line] = [ln for ln in doctor.stdout.splitlines() if "mcp oa" in ln]
            assert line.startswith("warn") and "needs login" in line, doctor.stdout
            assert "fix: nyz mcp login oa" in doctor.stdout
            done = await trio.to_thread.run_sync(run, "mcp", "login", "oa")
            assert done.returncode == 0 and "logged in to 'oa' (1 tools)" in done.stdout, done.stderr
            listed = await trio.to_thread.run_sync(run, "mcp", "list")
            assert "connected" in listed.stdout
            doctor = await trio.to_thread.run_sync(run, "doctor")
            assert any(ln.startswith("ok") and "mcp oa" in ln and "logged in" in ln
                       for ln in doctor.stdout.splitlines()), doctor.stdout
            token = json.loads(paths.mcp_auth_path().read_text())["servers"]["oa"]["tokens"]["access_token"]
            for f in (tmp_path / "state").rglob("*"):
                assert not f.is_file() or token not in f.read_text(errors="replace"), f
            assert token not in done.stdout + done.stderr + listed.stdout + listed.stderr
            out = await trio.to_thread.run_sync(run, "mcp", "logout", "oa")
            assert "logged out of 'oa'" in out.stdout
            listed = await trio.to_thread.run_sync(run, "mcp", "list")
            assert "needs login" in listed.stdout
            nursery.cancel_scope.cancel()

    trio.run(main)


async def test_nyz_run_names_the_login_then_uses_it_without_leaking(workspace, home, configure,
                                                                    monkeypatch):
    """``nyz run`` with an OAuth server: before the login one line on stderr naming the
    command; after it the model calls the tool, and no token is in the events, the session
    files or the state directory."""
    from test_mcp_run_e2e import events, nyz

    from nyzhi.core.runtime.mcp.login import login
    from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call

    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))  # what nyz run uses
    async with trio.open_nursery() as nursery:
        base = await _start(nursery)
        extra = f'[mcp.servers.oa]\nurl = "{base}/mcp"\n'
        script = [reply("no tools"), reply(tool_calls=[tool_call("mcp__oa__whoami", {})]),
                  reply("done")]
        async with open_fake_llm(script=script) as llm:
            configure(workspace, llm.url_for("openai"), extra=extra)
            before = await nyz(workspace, home, "run", "go")
            assert before.returncode == 0, before.stderr.decode()
            assert "needs a login: run `nyz mcp login oa`" in before.stderr.decode()

            entry = ServerEntry("oa", McpHttpServer(base + "/mcp"))
            await login(entry, say=lambda line: None, open_url=_approve)
            after = await nyz(workspace, home, "run", "--trust", "full", "--output-format",
                              "stream-json", "go")
        assert after.returncode == 0, after.stderr.decode()
        done = next(e for e in events(after.stdout) if e["type"] == "tool_done")
        assert done["output"] == "alice" and not done["is_error"], done
        saved = json.loads(paths.mcp_auth_path().read_text())["servers"]["oa"]["tokens"]
        written = [f for d in (home / ".local" / "share" / "nyzhi" / "sessions",
                               home / ".local" / "state") for f in d.rglob("*") if f.is_file()]
        assert any("sessions" in str(f) for f in written)
        for secret in (saved["access_token"], saved["refresh_token"]):
            assert secret not in after.stdout.decode() + after.stderr.decode()
            for f in written:
                assert secret not in f.read_text(errors="replace"), f
        nursery.cancel_scope.cancel()


async def test_a_configured_client_id_is_used_without_registering(data):
    from nyzhi.core.runtime.mcp.login import login

    async with trio.open_nursery() as nursery:
        base = await _start(nursery)
        entry = ServerEntry("oa", McpHttpServer(base + "/mcp", client_id="by-hand-client"))
        said: list[str] = []
        assert await login(entry, say=said.append, open_url=_approve) == 1
        assert "client_id=by-hand-client" in said[0]
        stats = (await trio.to_thread.run_sync(httpx.get, base + "/admin/stats")).json()
        assert stats["clients"] == 0  # nothing was registered
        assert await _connect_once(base, data, client_id="by-hand-client") == ("connected", "", "alice")
        nursery.cancel_scope.cancel()


async def test_a_wanted_scope_makes_the_next_login_authorize_anew(data):
    """A step-up seen mid-session (``wanted_scope``) drops the stored tokens at the next
    login, which must authorize again with that scope; without one the tokens stay."""
    from mcp.shared.auth import OAuthToken

    from nyzhi.auth.mcp_tokens import McpTokenStorage, login_of

    storage = McpTokenStorage("s", "http://127.0.0.1:1/mcp")
    await storage.set_tokens(OAuthToken(access_token="a1", token_type="Bearer", scope="basic"))
    storage.clear_client()
    assert (await storage.get_tokens()).access_token == "a1"
    storage.set_wanted_scope("basic write")
    assert storage.wanted_scope() == "basic write"
    storage.clear_client()
    assert await storage.get_tokens() is None
    assert login_of("s", "http://127.0.0.1:1/mcp")["wanted_scope"] == "basic write"
    storage.set_wanted_scope(None)
    assert storage.wanted_scope() is None


@pytest.mark.parametrize("way", ["basic", "post"])
async def test_a_pre_registered_confidential_client_logs_in_without_storing_its_secret(
        data, monkeypatch, way):
    """``client_secret_env``: the secret is sent the way the metadata supports (Basic or in
    the form), and later refreshes send it too; it is in no file nyz writes, and a session's
    redactor knows it."""
    from mcp_oauth_server import CLIENT_ID, CLIENT_SECRET

    from nyzhi.core.runtime.mcp.login import LoginError, login

    monkeypatch.setenv("MY_MCP_CLIENT_SECRET", CLIENT_SECRET)
    async with trio.open_nursery() as nursery:
        base = await _start(nursery, "--confidential", way)
        server = McpHttpServer(base + "/mcp", client_id=CLIENT_ID,
                               client_secret_env="MY_MCP_CLIENT_SECRET")
        assert await login(ServerEntry("oa", server), say=lambda line: None,
                           open_url=_approve) == 1
        stats = (await trio.to_thread.run_sync(httpx.get, base + "/admin/stats")).json()
        assert stats["client_auth"] == [way] and stats["clients"] == 0
        store = paths.mcp_auth_path()
        assert "at-" in store.read_text() and CLIENT_SECRET not in store.read_text()

        await trio.to_thread.run_sync(functools.partial(httpx.post, base + "/admin/expire-access"))
        redactor = Redactor()
        assert await _connect_once(base, data, redactor, client_id=CLIENT_ID,
                                   client_secret_env="MY_MCP_CLIENT_SECRET") == (
            "connected", "", "alice")
        stats = (await trio.to_thread.run_sync(httpx.get, base + "/admin/stats")).json()
        assert stats["grants"][-1] == "refresh_token" and stats["client_auth"][-1] == way
        assert CLIENT_SECRET not in redactor.redact(f"x {CLIENT_SECRET} y")
        for path in data.rglob("*"):
            if path.is_file():
                assert CLIENT_SECRET not in path.read_text(errors="replace"), path

        # a named variable that is not set: one line, no login attempt
        monkeypatch.delenv("MY_MCP_CLIENT_SECRET")
        with pytest.raises(LoginError, match="client_secret_env: the variable "
                                             "MY_MCP_CLIENT_SECRET is not set"):
            await login(ServerEntry("oa", server), say=lambda line: None, open_url=_approve)
        nursery.cancel_scope.cancel()


async def test_legacy_metadata_with_a_same_origin_issuer_is_used(data):
    """The 2025-03-26 layout (no protected-resource metadata, the authorization server's
    metadata at the MCP server's origin) with the issuer at a path of that origin."""
    from nyzhi.core.runtime.mcp.login import login

    async with trio.open_nursery() as nursery:
        base = await _start(nursery, "--legacy", "same")
        entry = ServerEntry("oa", McpHttpServer(base + "/mcp"))
        assert await login(entry, say=lambda line: None, open_url=_approve) == 1
        saved = json.loads(paths.mcp_auth_path().read_text())["servers"]["oa"]
        assert saved["server_metadata"]["issuer"] == base + "/oauth"
        assert await _connect_once(base, data) == ("connected", "", "alice")
        nursery.cancel_scope.cancel()


async def test_legacy_metadata_with_a_cross_origin_issuer_is_refused(data):
    from nyzhi.core.runtime.mcp.login import login
    from nyzhi.core.runtime.mcp.oauth import OAuthRefused
    from nyzhi.core.runtime.server_supervision import leaf_error

    async with trio.open_nursery() as nursery:
        base = await _start(nursery, "--legacy", "cross")
        entry = ServerEntry("oa", McpHttpServer(base + "/mcp"))
        opened: list[str] = []
        with pytest.raises(BaseException) as info:
            await login(entry, say=lambda line: None, open_url=lambda u: opened.append(u) or True)
        error = leaf_error(info.value)
        assert isinstance(error, OAuthRefused) and "issuer mismatch" in str(error), error
        assert opened == []
        stats = (await trio.to_thread.run_sync(httpx.get, base + "/admin/stats")).json()
        assert stats["clients"] == 0 and stats["grants"] == []
        nursery.cancel_scope.cancel()
