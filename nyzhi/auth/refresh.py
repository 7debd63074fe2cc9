"""Refreshing ``nyz login`` OAuth tokens, safely across every nyz process of the user.

A stored OAuth account has an access token, its expiry and a refresh token. ``TokenRefresher``
swaps them for new ones at the provider's token endpoint (``[provider.NAME.oauth] token_url``)
when the token is about to expire or a request was refused with 401, and writes the result back
to auth.json (atomically, 0600, through ``AuthStore.update``).

Several nyz processes (a console, a few ``nyz run``, process teammates) share auth.json and
usually the same expiring token. Refresh tokens are often single-use, so two processes
refreshing at once would leave one of them logged out. Each refresh therefore holds an
exclusive flock on ``auth.json.refresh.lock`` for its whole exchange, and first re-reads the
account: when another process refreshed it meanwhile, the new token is taken from the file and
the endpoint is not asked again. The lock is taken in a worker thread, so waiting for another
process never stalls the event loop.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable
from typing import Any

import attrs
import trio

from nyzhi.auth.store import AuthStore, AuthStoreError, StoredAccount

REFRESH_MARGIN_S = 60.0  # refresh a token this close to its expiry


class TokenRefresher:
    """Refreshes one stored OAuth account (``provider``/``label``) of ``store``."""

    def __init__(self, store: AuthStore, provider: str, label: str, token_url: str,
                 client_id: str, *, clock: Callable[[], float] = time.time,
                 client: Any = None) -> None:
        self.store = store
        self.provider = provider
        self.label = label
        self.token_url = token_url
        self.client_id = client_id
        self.clock = clock
        self.client = client  # an httpx.AsyncClient (tests); None: one per refresh
        self.last_error: str | None = None

    def _stored(self) -> StoredAccount | None:
        return next((a for a in self.store.accounts(self.provider) if a.label == self.label), None)

    async def refresh(self, stale_key: str) -> StoredAccount | None:
        """The account with a fresh token (from another process's refresh, or from the token
        endpoint), or None when it cannot be refreshed (``last_error`` says why)."""
        lock = self.store.path.with_name(self.store.path.name + ".refresh.lock")
        lock.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            await trio.to_thread.run_sync(fcntl.flock, fd, fcntl.LOCK_EX)
            return await self._refresh_locked(stale_key)
        except (AuthStoreError, OSError) as exc:
            self.last_error = str(exc)
            return None
        finally:
            os.close(fd)  # releases the lock

    async def _refresh_locked(self, stale_key: str) -> StoredAccount | None:
        current = await trio.to_thread.run_sync(self._stored)
        if current is None:
            self.last_error = "the account was logged out"
            return None
        now = self.clock()
        if current.key != stale_key and not current.expired(now):
            return current  # another process refreshed it while we waited for the lock
        if not current.refresh_token:
            self.last_error = "no refresh token stored: run `nyz login` again"
            return None
        from nyzhi.auth.device_flow import DeviceFlowError
        from nyzhi.auth.device_flow import refresh as refresh_token

        try:
            if self.client is not None:
                token = await refresh_token(self.client, self.token_url, self.client_id,
                                            current.refresh_token)
            else:
                import httpx

                async with httpx.AsyncClient(timeout=30.0) as client:
                    token = await refresh_token(client, self.token_url, self.client_id,
                                                current.refresh_token)
        except DeviceFlowError as exc:
            self.last_error = f"{exc}; run `nyz login {self.provider}` again"
            return None
        fresh = attrs.evolve(
            current, key=token.access_token,
            refresh_token=token.refresh_token or current.refresh_token,
            expires_at=now + token.expires_in if token.expires_in else None,
        )

        def change(accounts: dict[str, list[StoredAccount]]) -> None:
            accounts[self.provider] = [fresh if a.label == self.label else a
                                       for a in accounts.get(self.provider, [])]

        await trio.to_thread.run_sync(self.store.update, change)
        self.last_error = None
        return fresh
