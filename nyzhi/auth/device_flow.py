"""OAuth 2.0 Device Authorization Grant (RFC 8628) client, on httpx under trio.

1. POST ``device_authorization_url`` with client_id (+ scope) -> device_code, user_code,
   verification_uri, interval, expires_in. The user opens the URI and types the code.
2. POST ``token_url`` with grant_type=urn:ietf:params:oauth:grant-type:device_code every
   ``interval`` seconds: ``authorization_pending`` -> keep polling; ``slow_down`` -> add
   5 s to the interval (RFC 8628 §3.5); ``access_denied`` / ``expired_token`` -> stop.

Endpoints are configuration (``[provider.NAME.oauth]``), so any RFC 8628 server works.
``sleep`` is injectable so tests drive polling without waiting; the flow also gives up
once the sum of its waits exceeds ``expires_in`` even if the server keeps saying pending.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import httpx
import trio

from nyzhi import records

GRANT_TYPE = "urn:ietf:params:oauth:grant-type:device_code"
DEFAULT_INTERVAL = 5.0


class DeviceFlowError(Exception):
    """The login did not complete (denied, expired, or the server misbehaved)."""


@records.frozen
class DeviceFlowEndpoints:
    device_authorization_url: str
    token_url: str
    client_id: str
    scope: str | None = None


@records.frozen
class DeviceAuthorization:
    device_code: str = attrs.field(repr=False)
    user_code: str
    verification_uri: str
    verification_uri_complete: str | None
    expires_in: float
    interval: float


@records.frozen
class OAuthToken:
    access_token: str = attrs.field(repr=False)
    token_type: str = "bearer"
    refresh_token: str | None = attrs.field(default=None, repr=False)
    expires_in: float | None = None
    scope: str | None = None


def _json(response: httpx.Response, what: str) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError:
        raise DeviceFlowError(
            f"{what}: HTTP {response.status_code} with a non-JSON body from {response.url}"
        ) from None
    if not isinstance(data, dict):
        raise DeviceFlowError(f"{what}: unexpected response from {response.url}")
    return data


async def start(client: httpx.AsyncClient, endpoints: DeviceFlowEndpoints) -> DeviceAuthorization:
    """Step 1: ask for a device code and a user code."""
    form = {"client_id": endpoints.client_id}
    if endpoints.scope:
        form["scope"] = endpoints.scope
    response = await client.post(endpoints.device_authorization_url, data=form,
                                 headers={"Accept": "application/json"})
    data = _json(response, "device authorization")
    if response.status_code != 200:
        detail = data.get("error_description") or data.get("error") or "no detail"
        raise DeviceFlowError(f"device authorization failed: HTTP {response.status_code}: {detail}")
    try:
        return DeviceAuthorization(
            device_code=str(data["device_code"]),
            user_code=str(data["user_code"]),
            verification_uri=str(data.get("verification_uri") or data["verification_url"]),
            verification_uri_complete=data.get("verification_uri_complete"),
            expires_in=float(data.get("expires_in", 900)),
            interval=float(data.get("interval", DEFAULT_INTERVAL)),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise DeviceFlowError(f"device authorization response lacks {exc}") from None


async def poll(
    client: httpx.AsyncClient,
    endpoints: DeviceFlowEndpoints,
    auth: DeviceAuthorization,
    *,
    sleep: Callable[[float], Awaitable[None]] = trio.sleep,
) -> OAuthToken:
    """Step 2: poll the token endpoint until the user approves, denies, or time runs out."""
    interval = max(0.0, auth.interval)
    waited = 0.0
    form = {"grant_type": GRANT_TYPE, "device_code": auth.device_code,
            "client_id": endpoints.client_id}
    while True:
        if waited >= auth.expires_in:
            raise DeviceFlowError("the code expired before the login was approved; run it again")
        await sleep(interval)
        waited += interval
        response = await client.post(endpoints.token_url, data=form,
                                     headers={"Accept": "application/json"})
        data = _json(response, "token request")
        error = data.get("error")
        if error == "authorization_pending":
            continue
        if error == "slow_down":
            interval += 5.0
            continue
        if error == "access_denied":
            raise DeviceFlowError("the login was denied")
        if error == "expired_token":
            raise DeviceFlowError("the code expired before the login was approved; run it again")
        if error:
            detail = data.get("error_description") or error
            raise DeviceFlowError(f"token request failed: {detail}")
        return _token(data, response.status_code)


def _token(data: dict[str, Any], status: int) -> OAuthToken:
    token = data.get("access_token")
    if not isinstance(token, str) or not token:
        raise DeviceFlowError(f"token response (HTTP {status}) has no access_token")
    expires_in = data.get("expires_in")
    return OAuthToken(
        access_token=token,
        token_type=str(data.get("token_type", "bearer")),
        refresh_token=data.get("refresh_token"),
        expires_in=float(expires_in) if isinstance(expires_in, int | float) else None,
        scope=data.get("scope"),
    )


async def refresh(client: httpx.AsyncClient, token_url: str, client_id: str,
                  refresh_token: str) -> OAuthToken:
    """A new access token for ``refresh_token`` (RFC 6749 §6). The answer may carry a new
    refresh token (rotation); without one the old one stays valid."""
    form = {"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": client_id}
    try:
        response = await client.post(token_url, data=form, headers={"Accept": "application/json"})
    except httpx.HTTPError as exc:
        raise DeviceFlowError(f"cannot reach the login server: {exc}") from exc
    data = _json(response, "token refresh")
    if response.status_code != 200 or data.get("error"):
        detail = data.get("error_description") or data.get("error") or f"HTTP {response.status_code}"
        raise DeviceFlowError(f"the token could not be refreshed: {detail}")
    return _token(data, response.status_code)


async def run_device_flow(
    endpoints: DeviceFlowEndpoints,
    on_code: Callable[[DeviceAuthorization], None],
    *,
    client: httpx.AsyncClient | None = None,
    sleep: Callable[[float], Awaitable[None]] = trio.sleep,
) -> OAuthToken:
    """The whole flow. ``on_code`` shows the user where to go and what to type."""
    if client is None:
        async with httpx.AsyncClient(timeout=30.0) as own:
            return await run_device_flow(endpoints, on_code, client=own, sleep=sleep)
    try:
        auth = await start(client, endpoints)
        on_code(auth)
        return await poll(client, endpoints, auth, sleep=sleep)
    except httpx.HTTPError as exc:
        raise DeviceFlowError(f"cannot reach the login server: {exc}") from exc
