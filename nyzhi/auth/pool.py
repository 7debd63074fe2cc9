"""AccountPool: the keys a provider may use, with rotation and cooldown after a 429.

Implements ``nyzhi.provider.types.KeySource`` structurally (this package must not import
nyzhi.provider). The provider asks ``current_key()`` before every request; when a request
is rate limited it calls ``report_rate_limited(key, retry_after)``: that account cools down
for Retry-After seconds (or ``default_cooldown``) and the pool moves to the next account
that is not cooling down. When every account is cooling down the pool still hands out the
one that recovers first: the provider's own retry/backoff then does the waiting.

Time comes from an injectable monotonic ``clock`` so tests are deterministic.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Literal

import attrs

from nyzhi import records
from nyzhi.config.secrets import mask_secret

CredentialSource = Literal["config", "env", "auth.json", "explicit"]


@records.frozen
class Account:
    label: str
    key: str = attrs.field(repr=False)
    source: CredentialSource
    kind: str = "api_key"  # "api_key" | "oauth"
    origin: str = ""  # where exactly: the env var name, the config or auth.json path
    expires_at: float | None = None  # unix time; OAuth tokens only

    @property
    def masked(self) -> str:
        return mask_secret(self.key)


@records.frozen
class AccountState:
    account: Account
    cooldown_remaining: float  # seconds; 0.0 when usable now
    current: bool


class AccountPool:
    """Several accounts for one provider, in priority order."""

    def __init__(
        self,
        provider: str,
        accounts: Sequence[Account] = (),
        *,
        clock: Callable[[], float] = time.monotonic,
        default_cooldown: float = 60.0,
        on_rate_limited: Callable[[Account, float], None] | None = None,
        cooldowns: dict[str, float] | None = None,
        refreshers: dict[str, Any] | None = None,
        wall: Callable[[], float] = time.time,
    ):
        """``cooldowns``: label -> seconds still to wait at creation (persisted state).
        ``refreshers``: label -> ``TokenRefresher`` of the OAuth accounts that can be renewed."""
        self.provider = provider
        self._refreshers = dict(refreshers or {})
        self._wall = wall
        self._accounts = tuple(accounts)
        self._clock = clock
        self._default_cooldown = default_cooldown
        self._on_rate_limited = on_rate_limited
        now = clock()
        self._until: list[float] = [
            now + max(0.0, (cooldowns or {}).get(a.label, 0.0)) for a in self._accounts
        ]
        self._current = 0

    @property
    def accounts(self) -> tuple[Account, ...]:
        return self._accounts

    def __len__(self) -> int:
        return len(self._accounts)

    def _available(self, i: int, now: float) -> bool:
        return self._until[i] <= now

    def _select(self) -> int | None:
        if not self._accounts:
            return None
        now = self._clock()
        n = len(self._accounts)
        for step in range(n):
            i = (self._current + step) % n
            if self._available(i, now):
                self._current = i
                return i
        return min(range(n), key=lambda i: self._until[i])

    def current_account(self) -> Account | None:
        i = self._select()
        return None if i is None else self._accounts[i]

    def current_key(self) -> str | None:
        """The key for the next request, or None when the pool is empty."""
        account = self.current_account()
        return None if account is None else account.key

    def report_rate_limited(self, key: str, retry_after: float | None) -> bool:
        """Cool down the account holding ``key`` and rotate; True if another key is usable now."""
        now = self._clock()
        wait = retry_after if retry_after is not None and retry_after >= 0 else self._default_cooldown
        limited = [i for i, a in enumerate(self._accounts) if a.key == key]
        for i in limited:
            self._until[i] = now + wait
            if self._on_rate_limited is not None:
                try:
                    self._on_rate_limited(self._accounts[i], wait)
                except OSError:
                    pass  # persisting the cooldown is best effort; rotation still works
        if limited and self._current in limited:
            self._current = (self._current + 1) % len(self._accounts)
        others = [i for i in range(len(self._accounts)) if i not in limited]
        return any(self._available(i, now) for i in others)

    # ---- OAuth refresh (``nyzhi.auth.refresh``): asked by the provider before each request
    # and after a 401, when the key source has these methods.

    async def ensure_fresh(self) -> None:
        """Renew the current account's token when it expires within a minute."""
        from nyzhi.auth.refresh import REFRESH_MARGIN_S

        account = self.current_account()
        if account is None or account.label not in self._refreshers:
            return
        if account.expires_at is not None and account.expires_at - self._wall() < REFRESH_MARGIN_S:
            await self._renew(account)

    async def refresh_unauthorized(self, key: str) -> bool:
        """The key was refused (401): renew its account's token; True when a new one is ready."""
        account = next((a for a in self._accounts if a.key == key), None)
        if account is None or account.label not in self._refreshers:
            return False
        renewed = await self._renew(account)
        return renewed is not None and renewed.key != key

    async def _renew(self, account: Account) -> Account | None:
        fresh = await self._refreshers[account.label].refresh(account.key)
        if fresh is None:
            return None
        new = attrs.evolve(account, key=fresh.key, expires_at=fresh.expires_at)
        self._accounts = tuple(new if a is account else a for a in self._accounts)
        return new

    def refresh_error(self, label: str) -> str | None:
        """Why the last refresh of ``label``'s token failed, if it did."""
        refresher = self._refreshers.get(label)
        return refresher.last_error if refresher is not None else None

    def next_available_in(self) -> float | None:
        """Seconds until some account is usable (0.0 if one is now); None when empty."""
        if not self._accounts:
            return None
        return max(0.0, min(self._until) - self._clock())

    def states(self) -> list[AccountState]:
        now = self._clock()
        current = self._select()
        return [
            AccountState(a, max(0.0, self._until[i] - now), i == current)
            for i, a in enumerate(self._accounts)
        ]

    def __repr__(self) -> str:
        labels = ", ".join(f"{a.source}:{a.label}" for a in self._accounts)
        return f"AccountPool({self.provider!r}, [{labels}])"
