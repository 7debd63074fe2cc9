"""OAuth tokens from ``nyz login`` renewed with their refresh token: before expiry, after a 401,
and by one process only when two need it at once. Real ``nyz`` processes, a loopback token
endpoint (``oauth_server``) and the scripted fake LLM."""

from __future__ import annotations

import json
import re
import stat
import time

import trio
from oauth_server import OAuthServer

from nyzhi.auth.store import AuthStore
from nyzhi.testing.cli import run_nyz
from nyzhi.testing.fake_llm import http_error, open_fake_llm, reply

RENEWED = (200, {"access_token": "at-2", "refresh_token": "rt-2", "expires_in": 3600,
                 "token_type": "Bearer"})
SPENT = (400, {"error": "invalid_grant", "error_description": "refresh token already used"})


def configure_oauth(workspace, llm_url: str, token_base: str) -> None:
    (workspace / ".nyzhi" / "config.toml").write_text(f"""[provider]
default = "corp"

[provider.corp]
api_style = "openai"
base_url = "{llm_url}"
model = "fake-model-1"

[provider.corp.oauth]
device_authorization_url = "{token_base}/device"
token_url = "{token_base}/token"
client_id = "nyz-cli"
""")
    # base_url and the oauth endpoints are gated keys (issue 49): the user approved them
    from nyzhi.config import load_config
    from nyzhi.config.project_trust import approve

    approve(load_config(workspace))


def store_token(home, expires_in: float) -> AuthStore:
    store = AuthStore(env={"HOME": str(home)})
    store.add_account("corp", "at-old", label="work", kind="oauth", refresh_token="rt-1",
                      expires_at=time.time() + expires_in)
    return store


def refreshes(server: OAuthServer) -> list[dict]:
    return [form for path, form in server.requests if path == "/token"]


async def test_an_expired_token_is_renewed_before_the_request(workspace, home):
    store = store_token(home, expires_in=-30)
    token_server = OAuthServer([RENEWED])
    async with trio.open_nursery() as nursery, open_fake_llm(script=[reply("ok")]) as llm:
        await token_server.start(nursery)
        configure_oauth(workspace, llm.url_for("openai"), token_server.base)
        proc = await run_nyz(workspace, home, "run", "hi")
        nursery.cancel_scope.cancel()
    assert proc.returncode == 0, proc.stderr.decode()
    assert llm.requests[0].headers["authorization"] == "Bearer at-2"
    assert refreshes(token_server) == [
        {"grant_type": "refresh_token", "refresh_token": "rt-1", "client_id": "nyz-cli"}]
    [account] = store.accounts("corp")
    assert (account.key, account.refresh_token) == ("at-2", "rt-2")
    assert time.time() + 3500 < account.expires_at < time.time() + 3700
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert "at-2" not in proc.stderr.decode() + proc.stdout.decode()  # never printed


async def test_a_refused_token_is_renewed_and_the_request_made_again(workspace, home):
    store = store_token(home, expires_in=3600)  # not due, but the server revoked it
    token_server = OAuthServer([RENEWED])
    script = [http_error(401, "invalid access token", "invalid_request_error"), reply("ok")]
    async with trio.open_nursery() as nursery, open_fake_llm(script=script) as llm:
        await token_server.start(nursery)
        configure_oauth(workspace, llm.url_for("openai"), token_server.base)
        proc = await run_nyz(workspace, home, "run", "hi")
        nursery.cancel_scope.cancel()
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.decode().strip() == "ok"
    sent = [r.headers["authorization"] for r in llm.requests]
    assert sent == ["Bearer at-old", "Bearer at-2"]
    assert len(refreshes(token_server)) == 1
    assert store.accounts("corp")[0].key == "at-2"


async def test_a_refused_token_that_cannot_be_renewed_fails_once(workspace, home):
    store_token(home, expires_in=3600)
    token_server = OAuthServer([SPENT])
    script = [http_error(401, "invalid access token", "invalid_request_error")]
    async with trio.open_nursery() as nursery, open_fake_llm(script=script) as llm:
        await token_server.start(nursery)
        configure_oauth(workspace, llm.url_for("openai"), token_server.base)
        proc = await run_nyz(workspace, home, "run", "hi")
        nursery.cancel_scope.cancel()
    assert proc.returncode == 1 and len(llm.requests) == 1
    assert "401" in proc.stderr.decode() and "Traceback" not in proc.stderr.decode()


async def test_two_processes_refresh_once_and_share_the_new_token(workspace, home):
    store = store_token(home, expires_in=-30)
    # a second refresh would be refused: the refresh token is single-use
    token_server = OAuthServer([RENEWED, SPENT])
    results = []
    async with trio.open_nursery() as nursery, \
            open_fake_llm(script=[reply("one"), reply("two")]) as llm:
        await token_server.start(nursery)
        configure_oauth(workspace, llm.url_for("openai"), token_server.base)
        async with trio.open_nursery() as both:
            for _ in range(2):
                both.start_soon(lambda: _run(workspace, home, results))
        nursery.cancel_scope.cancel()
    assert [p.returncode for p in results] == [0, 0], [p.stderr.decode() for p in results]
    assert sorted(p.stdout.decode().strip() for p in results) == ["one", "two"]
    assert [r.headers["authorization"] for r in llm.requests] == ["Bearer at-2"] * 2
    assert len(refreshes(token_server)) == 1
    assert json.loads(store.path.read_text())["providers"]["corp"][0]["key"] == "at-2"


async def _run(workspace, home, results: list) -> None:
    results.append(await run_nyz(workspace, home, "run", "hi"))


async def test_whoami_shows_when_a_token_expires(workspace, home):
    store_token(home, expires_in=3600)
    configure_oauth(workspace, "http://127.0.0.1:9/v1", "http://127.0.0.1:9")
    proc = await run_nyz(workspace, home, "whoami")
    out = proc.stdout.decode()
    assert proc.returncode == 0, proc.stderr.decode()
    line = next(line for line in out.splitlines() if line.split()[1:2] == ["work"])
    assert "oauth" in line and re.search(r"expires in (60m00s|59m[0-5]\ds) \(\d{4}-", line)
    assert "renewed before it expires" in line
