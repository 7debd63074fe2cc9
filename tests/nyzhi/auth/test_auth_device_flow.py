"""The RFC 8628 device flow against a loopback server (no external network)."""

import json
import os
import sys

import pytest
import trio
from oauth_server import OAuthServer

from nyzhi.auth.device_flow import DeviceFlowEndpoints, DeviceFlowError, run_device_flow


def endpoints(server: OAuthServer) -> DeviceFlowEndpoints:
    return DeviceFlowEndpoints(f"{server.base}/device", f"{server.base}/token", "cli-id", "models")


class FakeSleep:
    def __init__(self):
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        await trio.lowlevel.checkpoint()


async def test_pending_then_slow_down_then_token():
    server = OAuthServer(
        [(400, {"error": "authorization_pending"}), (400, {"error": "slow_down"}),
         (400, {"error": "authorization_pending"}),
         (200, {"access_token": "at-1", "refresh_token": "rt-1", "expires_in": 3600,
                "token_type": "Bearer"})],
        device_reply={"device_code": "dc", "user_code": "ABCD-EFGH",
                      "verification_uri": "https://v.test", "expires_in": 600, "interval": 5},
    )
    shown = []
    sleep = FakeSleep()
    async with trio.open_nursery() as nursery:
        await server.start(nursery)
        token = await run_device_flow(endpoints(server), shown.append, sleep=sleep)
        nursery.cancel_scope.cancel()
    assert token.access_token == "at-1" and token.refresh_token == "rt-1"
    assert token.expires_in == 3600
    assert shown[0].user_code == "ABCD-EFGH"
    assert sleep.waits == [5, 5, 10, 10]  # slow_down adds 5 s (RFC 8628 §3.5)
    path, form = server.requests[0]
    assert path == "/device" and form == {"client_id": "cli-id", "scope": "models"}
    path, form = server.requests[1]
    assert path == "/token"
    assert form == {"grant_type": "urn:ietf:params:oauth:grant-type:device_code",
                    "device_code": "dc", "client_id": "cli-id"}


@pytest.mark.parametrize("error, message", [("access_denied", "denied"),
                                            ("expired_token", "expired")])
async def test_denied_or_expired(error, message):
    server = OAuthServer([(400, {"error": error})])
    async with trio.open_nursery() as nursery:
        await server.start(nursery)
        with pytest.raises(DeviceFlowError, match=message):
            await run_device_flow(endpoints(server), lambda a: None, sleep=FakeSleep())
        nursery.cancel_scope.cancel()


async def test_gives_up_after_expires_in_even_if_server_keeps_pending():
    server = OAuthServer([(400, {"error": "authorization_pending"})] * 10,
                         device_reply={"device_code": "d", "user_code": "u",
                                       "verification_uri": "v", "expires_in": 12, "interval": 5})
    sleep = FakeSleep()
    async with trio.open_nursery() as nursery:
        await server.start(nursery)
        with pytest.raises(DeviceFlowError, match="expired"):
            await run_device_flow(endpoints(server), lambda a: None, sleep=sleep)
        nursery.cancel_scope.cancel()
    assert sleep.waits == [5, 5, 5]


async def test_unreachable_server_is_a_clear_error():
    with trio.socket.socket() as s:  # a port nobody listens on
        await s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    eps = DeviceFlowEndpoints(f"http://127.0.0.1:{port}/d", f"http://127.0.0.1:{port}/t", "c")
    with pytest.raises(DeviceFlowError, match="cannot reach"):
        await run_device_flow(eps, lambda a: None, sleep=FakeSleep())


async def test_nyz_login_device_flow_in_a_subprocess(env):
    server = OAuthServer([(400, {"error": "authorization_pending"}),
                          (200, {"access_token": "oauth-secret-token-value", "expires_in": 60})])
    async with trio.open_nursery() as nursery:
        await server.start(nursery)
        env.write(env.global_config, f"""
[provider.corp]
base_url = "http://unused"
[provider.corp.oauth]
device_authorization_url = "{server.base}/device"
token_url = "{server.base}/token"
client_id = "nyz"
""")
        proc = await trio.run_process(
            [sys.executable, "-m", "nyzhi", "login", "corp", "--label", "sso"],
            env={**os.environ}, cwd=env.project, capture_stdout=True, capture_stderr=True,
            check=False, stdin=b"",
        )
        nursery.cancel_scope.cancel()
    out = proc.stdout.decode()
    assert proc.returncode == 0, proc.stderr.decode()
    assert "WDJB-MJHT" in out and "https://example.test/device" in out
    assert "oauth-secret-token-value" not in out + proc.stderr.decode()
    data = json.loads((env.home / ".local/share/nyzhi/auth.json").read_text())
    (account,) = data["providers"]["corp"]
    assert account["kind"] == "oauth" and account["label"] == "sso"
    assert account["key"] == "oauth-secret-token-value" and account["expires_at"]
