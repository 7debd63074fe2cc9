"""Finding a provider's credentials: config ``api_key`` > environment > auth.json.

``resolve_key_source`` returns an AccountPool holding every distinct key found, in that
priority order: the first is used; the others are the accounts rotated to after a 429.
Within auth.json the active account comes first, then the others in stored order. OAuth
accounts of a provider with ``[provider.NAME.oauth]`` get a ``TokenRefresher``: their tokens are
renewed before expiry and after a 401 (``nyzhi.auth.refresh``), an expired one included. Other
expired OAuth tokens are left out (``nyz whoami`` reports them so the user can log in again).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from nyzhi import records
from nyzhi.auth.pool import Account, AccountPool
from nyzhi.auth.store import AuthStore, AuthStoreError, StoredAccount
from nyzhi.config.presets import env_vars_for


@records.frozen
class Unavailable:
    """A stored account the pool left out, and why (for whoami)."""

    label: str
    reason: str


def _stored_in_order(accounts: list[StoredAccount]) -> list[StoredAccount]:
    return sorted(accounts, key=lambda a: not a.active)  # stable: active first


def collect_accounts(
    provider_name: str,
    provider_cfg: Any = None,
    *,
    env: Mapping[str, str] | None = None,
    store: AuthStore | None = None,
) -> tuple[list[Account], dict[str, float], list[Unavailable]]:
    """(accounts in priority order, persisted cooldowns by label, left-out stored accounts)."""
    env = os.environ if env is None else env
    store = store or AuthStore(env=env)
    found: list[Account] = []
    cooldowns: dict[str, float] = {}
    unavailable: list[Unavailable] = []

    def add(account: Account) -> None:
        if account.key and all(a.key != account.key for a in found):
            found.append(account)

    api_key = getattr(provider_cfg, "api_key", None)
    if api_key:
        add(Account("config", api_key, "config", origin=f"[provider.{provider_name}] api_key"))
    for var in env_vars_for(provider_name, getattr(provider_cfg, "env_var", None)):
        value = env.get(var, "").strip()
        if value:
            add(Account("env", value, "env", origin=var))
            break
    now = time.time()
    renewable = getattr(provider_cfg, "oauth", None) is not None
    for stored in _stored_in_order(store.accounts(provider_name)):
        if stored.expired(now) and not (renewable and stored.refresh_token):
            unavailable.append(Unavailable(stored.label, "token expired: run `nyz login` again"))
            continue
        add(Account(stored.label, stored.key, "auth.json", kind=stored.kind, origin=str(store.path),
                    expires_at=stored.expires_at))
        if stored.rate_limited_until and stored.rate_limited_until > now:
            cooldowns[stored.label] = stored.rate_limited_until - now
    return found, cooldowns, unavailable


def resolve_key_source(
    provider_name: str,
    provider_cfg: Any = None,
    env: Mapping[str, str] | None = None,
    *,
    store: AuthStore | None = None,
    clock: Callable[[], float] = time.monotonic,
    default_cooldown: float = 60.0,
    persist_rate_limits: bool = True,
) -> AccountPool:
    """The key source for ``provider_name``.

    ``provider_cfg`` is the ``[provider.NAME]`` entry (a ``nyzhi.config.ProviderEntry`` or
    anything with ``api_key`` / ``env_var`` attributes), or None. ``env`` defaults to
    ``os.environ``; ``store`` to the auth.json at ``paths.auth_path()``. An empty pool
    (``current_key() is None``) means no credentials were found.

    With ``persist_rate_limits`` a cooldown of an auth.json account is also written to
    auth.json so other nyz processes and ``nyz whoami`` see it.
    """
    store = store or AuthStore(env=env)
    accounts, cooldowns, _ = collect_accounts(provider_name, provider_cfg, env=env, store=store)

    def persist(account: Account, seconds: float) -> None:
        if account.source == "auth.json":
            try:
                store.mark_rate_limited(provider_name, account.label, time.time() + seconds)
            except AuthStoreError:
                pass  # best effort: the in-memory cooldown is what matters

    return AccountPool(
        provider_name,
        accounts,
        clock=clock,
        default_cooldown=default_cooldown,
        on_rate_limited=persist if persist_rate_limits else None,
        cooldowns=cooldowns,
        refreshers=_refreshers(provider_name, provider_cfg, accounts, store),
    )


def _refreshers(provider_name: str, provider_cfg: Any, accounts: list[Account],
                store: AuthStore) -> dict[str, Any]:
    """A ``TokenRefresher`` for each OAuth account from auth.json, when the provider's
    ``[provider.NAME.oauth]`` names the token endpoint that renews it."""
    oauth = getattr(provider_cfg, "oauth", None)
    if oauth is None:
        return {}
    from nyzhi.auth.refresh import TokenRefresher

    return {
        a.label: TokenRefresher(store, provider_name, a.label, oauth.token_url, oauth.client_id)
        for a in accounts if a.source == "auth.json" and a.kind == "oauth"
    }


def static_key_source(key: str | None, provider_name: str = "explicit") -> AccountPool:
    """A one-key pool for a key given directly (tests, library callers)."""
    return AccountPool(provider_name, [Account("explicit", key, "explicit")] if key else [])
