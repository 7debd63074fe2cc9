"""nyzhi.auth: credentials (config > env > auth.json), several accounts per provider with
rotation after a 429, and ``nyz login`` support (API keys, RFC 8628 device flow).

    resolve_key_source(provider_name, provider_cfg=None, env=None, *, store=None,
                       clock=time.monotonic, default_cooldown=60.0,
                       persist_rate_limits=True) -> AccountPool
    AccountPool.current_key() -> str | None
    AccountPool.report_rate_limited(key, retry_after) -> bool

The device-flow client (``nyzhi.auth.device_flow``) imports httpx; it is not imported here.
"""

from nyzhi.auth.pool import Account as Account
from nyzhi.auth.pool import AccountPool as AccountPool
from nyzhi.auth.pool import AccountState as AccountState
from nyzhi.auth.resolve import collect_accounts as collect_accounts
from nyzhi.auth.resolve import resolve_key_source as resolve_key_source
from nyzhi.auth.resolve import static_key_source as static_key_source
from nyzhi.auth.store import AuthStore as AuthStore
from nyzhi.auth.store import AuthStoreError as AuthStoreError
from nyzhi.auth.store import StoredAccount as StoredAccount
from nyzhi.config.secrets import mask_secret as mask_secret
