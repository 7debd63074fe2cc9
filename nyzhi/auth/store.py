"""``auth.json``: stored credentials, several accounts per provider.

Format (version 1)::

    {"version": 1,
     "providers": {"openai": [{"label": "work", "kind": "api_key", "key": "...",
                               "active": true, "added_at": 1700000000.0,
                               "refresh_token": null, "expires_at": null,
                               "rate_limited_until": null}]}}

The nyzhi 3.x layout (provider -> account list with ``token.access_token``, or a single token
object) is read too and rewritten in version 1 on the next change. The file is mode 0600 in
a 0700 directory and always replaced atomically; read-modify-write cycles hold an flock on a
sibling lock file so two nyz processes cannot lose each other's logins.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

import attrs

from nyzhi import records
from nyzhi.config import paths
from nyzhi.config.fsutil import atomic_write
from nyzhi.oserror import describe_os_error, relocate_fix

AccountKind = Literal["api_key", "oauth"]


class AuthStoreError(Exception):
    """auth.json exists but cannot be used (its contents are never included)."""


@records.frozen
class StoredAccount:
    label: str
    key: str = attrs.field(repr=False)  # never in reprs or logs
    kind: AccountKind = "api_key"
    active: bool = False
    added_at: float | None = None
    refresh_token: str | None = attrs.field(default=None, repr=False)
    expires_at: float | None = None  # unix time; OAuth tokens only
    rate_limited_until: float | None = None  # unix time

    def expired(self, now: float | None = None) -> bool:
        return self.expires_at is not None and (now or time.time()) >= self.expires_at - 60


def _account_from_json(data: Any, index: int) -> StoredAccount | None:
    if not isinstance(data, dict):
        return None
    token = data.get("token") if isinstance(data.get("token"), dict) else None
    if token is None and "access_token" in data:  # 3.x single-token object
        token = data
    key = data.get("key") or (token or {}).get("access_token")
    if not isinstance(key, str) or not key:
        return None
    kind = data.get("kind") or ("oauth" if token and token.get("refresh_token") else "api_key")
    return StoredAccount(
        label=str(data.get("label") or ("default" if index == 0 else f"account-{index + 1}")),
        key=key,
        kind="oauth" if kind == "oauth" else "api_key",
        active=bool(data.get("active", index == 0)),
        added_at=data.get("added_at"),
        refresh_token=data.get("refresh_token") or (token or {}).get("refresh_token"),
        expires_at=data.get("expires_at") or (token or {}).get("expires_at"),
        rate_limited_until=data.get("rate_limited_until"),
    )


def _to_json(accounts: Mapping[str, list[StoredAccount]]) -> bytes:
    providers = {name: [attrs.asdict(a) for a in accs] for name, accs in accounts.items() if accs}
    return (json.dumps({"version": 1, "providers": providers}, indent=2) + "\n").encode()


class AuthStore:
    """The credential file. ``path=None`` means ``paths.auth_path()`` at each call."""

    def __init__(self, path: Path | None = None, env: Mapping[str, str] | None = None):
        self._path = path
        self._env = env

    @property
    def path(self) -> Path:
        return self._path if self._path is not None else paths.auth_path(self._env)

    def load(self) -> dict[str, list[StoredAccount]]:
        """All stored accounts by provider ({} when the file does not exist)."""
        try:
            data = json.loads(self.path.read_bytes())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "it is not valid JSON"
            raise AuthStoreError(
                f"cannot read credentials file {self.path}: {reason}; fix or delete it "
                "(then run `nyz login` again)"
            ) from None
        if not isinstance(data, dict):
            raise AuthStoreError(f"credentials file {self.path} is not a JSON object; fix or delete it")
        providers = data.get("providers", {}) if "version" in data else data
        result: dict[str, list[StoredAccount]] = {}
        for name, value in (providers or {}).items():
            items = value if isinstance(value, list) else [value]
            accounts = [a for i, v in enumerate(items) if (a := _account_from_json(v, i))]
            if accounts:
                result[str(name)] = accounts
        return result

    def accounts(self, provider: str) -> list[StoredAccount]:
        return self.load().get(provider, [])

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        lock = self.path.with_name(self.path.name + ".lock")
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def update(self, change: Callable[[dict[str, list[StoredAccount]]], Any]) -> Any:
        """Run ``change`` on the loaded accounts (mutating the dict) and write the result.
        On a full or read-only disk the file keeps what it held and ``AuthStoreError`` says
        which file and why."""
        try:
            with self._locked():
                accounts = self.load()
                result = change(accounts)
                atomic_write(self.path, _to_json(accounts), mode=0o600, dir_mode=0o700)
                return result
        except OSError as exc:
            fix = relocate_fix(exc, "XDG_DATA_HOME") + (
                ", or give the key in the provider's API key environment variable"
            )
            raise AuthStoreError(
                describe_os_error(exc, "write the credentials file", self.path, fix)
            ) from None

    def add_account(
        self,
        provider: str,
        key: str,
        *,
        label: str | None = None,
        kind: AccountKind = "api_key",
        refresh_token: str | None = None,
        expires_at: float | None = None,
    ) -> tuple[StoredAccount, bool]:
        """Store a key. An existing ``label`` is replaced (returns created=False); otherwise
        a new account is appended (active only if it is the provider's first)."""

        def change(all_accounts: dict[str, list[StoredAccount]]) -> tuple[StoredAccount, bool]:
            accounts = all_accounts.setdefault(provider, [])
            labels = {a.label for a in accounts}
            name = label
            if name is None:
                n = len(accounts) + 1
                name = "default" if not accounts else f"account-{n}"
                while name in labels:
                    n += 1
                    name = f"account-{n}"
            new = StoredAccount(label=name, key=key, kind=kind, active=not accounts,
                                added_at=time.time(), refresh_token=refresh_token,
                                expires_at=expires_at)
            for i, old in enumerate(accounts):
                if old.label == name:
                    accounts[i] = attrs.evolve(new, active=old.active)
                    return accounts[i], False
            accounts.append(new)
            return new, True

        return self.update(change)

    def remove(self, provider: str | None, label: str | None = None) -> int:
        """Remove one provider's accounts (or only ``label``); ``provider=None``: everything.
        Returns how many accounts were removed."""

        def change(all_accounts: dict[str, list[StoredAccount]]) -> int:
            names = list(all_accounts) if provider is None else [provider]
            removed = 0
            for name in names:
                accounts = all_accounts.get(name, [])
                keep = [a for a in accounts if label is not None and a.label != label]
                removed += len(accounts) - len(keep)
                if keep and not any(a.active for a in keep):
                    keep[0] = attrs.evolve(keep[0], active=True)
                all_accounts[name] = keep
            return removed

        if not self.path.exists():
            return 0
        return self.update(change)

    def mark_rate_limited(self, provider: str, label: str, until: float) -> None:
        """Persist a cooldown (unix time) so other processes and ``nyz whoami`` see it."""

        def change(all_accounts: dict[str, list[StoredAccount]]) -> None:
            all_accounts[provider] = [
                attrs.evolve(a, rate_limited_until=until) if a.label == label else a
                for a in all_accounts.get(provider, [])
            ]

        self.update(change)
