"""``nyz login [PROVIDER]``, ``nyz logout [PROVIDER]``, ``nyz whoami``.

No command here ever prints a secret: keys are read without echo (or from piped stdin) and
shown, at most, masked as ``sk-…abcd``.
"""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("login", help="store an API key, or log in with a device code")
    p.add_argument("provider", nargs="?", help="provider name (default: [provider] default)")
    p.add_argument("--label", help="account name (adds another account; same label replaces)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--device", action="store_true",
                      help="use the OAuth device-code flow ([provider.NAME.oauth])")
    mode.add_argument("--api-key", action="store_true",
                      help="store an API key even if the provider has a device flow")
    p.set_defaults(handler=run_login)

    p = sub.add_parser("logout", help="remove stored accounts")
    p.add_argument("provider", nargs="?", help="provider name")
    p.add_argument("--label", help="remove only this account")
    p.add_argument("--all", action="store_true", help="remove every stored account")
    p.set_defaults(handler=run_logout)

    p = sub.add_parser("whoami", help="list providers, credential sources and accounts")
    p.set_defaults(handler=run_whoami)


def _err(message: str) -> int:
    print(f"nyz: {message}", file=sys.stderr)
    return 1


def _config():
    """The merged config, or defaults with a warning: a broken config must not block login."""
    from nyzhi.config import Config, ConfigError
    from nyzhi.config.project_trust import load_trusted

    try:
        return load_trusted(None)[0].config  # a project's unapproved oauth URLs left out
    except ConfigError as exc:
        print(f"warning: ignoring configuration: {exc}", file=sys.stderr)
        return Config()


def _read_key(provider: str) -> str:
    if sys.stdin.isatty():
        import getpass

        return getpass.getpass(f"API key for {provider} (input hidden): ").strip()
    return sys.stdin.read().strip()


def _pick_provider(args: argparse.Namespace, config) -> str | None:
    if args.provider:
        return args.provider
    if config.provider.default:
        return config.provider.default
    if not sys.stdin.isatty():
        return None
    from nyzhi.config.presets import BUILTIN_PROVIDERS

    names = [n for n, p in BUILTIN_PROVIDERS.items() if p.needs_key]
    names += [n for n in config.provider.entries if n not in names]
    for i, name in enumerate(names, 1):
        print(f"  {i}. {name}")
    choice = input("Provider (number or name): ").strip()
    if choice.isdigit() and 1 <= int(choice) <= len(names):
        return names[int(choice) - 1]
    return choice or None


def _device_login(provider: str, oauth, label: str | None, store) -> int:
    import time

    import trio

    from nyzhi.auth.device_flow import DeviceFlowEndpoints, DeviceFlowError, run_device_flow

    endpoints = DeviceFlowEndpoints(oauth.device_authorization_url, oauth.token_url,
                                    oauth.client_id, oauth.scope)

    def show(auth) -> None:
        print(f"Open {auth.verification_uri_complete or auth.verification_uri}")
        print(f"and enter the code: {auth.user_code}")
        print("Waiting for approval...", flush=True)

    try:
        token = trio.run(run_device_flow, endpoints, show)
    except DeviceFlowError as exc:
        return _err(f"login to {provider} failed: {exc}")
    expires_at = time.time() + token.expires_in if token.expires_in else None
    account, created = store.add_account(provider, token.access_token, label=label, kind="oauth",
                                         refresh_token=token.refresh_token, expires_at=expires_at)
    verb = "Stored" if created else "Replaced"
    print(f"{verb} OAuth token for {provider} as account '{account.label}' in {store.path}")
    return 0


def run_login(args: argparse.Namespace) -> int:
    import os

    from nyzhi.auth import AuthStore, AuthStoreError
    from nyzhi.config.presets import env_vars_for

    config = _config()
    provider = _pick_provider(args, config)
    if not provider:
        return _err("name a provider: nyz login PROVIDER (e.g. openai, anthropic, gemini)")
    entry = config.provider.get(provider)
    store = AuthStore()
    try:
        if args.device or (entry.oauth is not None and not args.api_key):
            if entry.oauth is None:
                return _err(f"{provider} has no device-code login configured: add "
                            f"[provider.{provider}.oauth] (see docs/config.md) or store an API key")
            return _device_login(provider, entry.oauth, args.label, store)
        key = _read_key(provider)
        if not key:
            return _err("no key given; nothing stored")
        if any(ch.isspace() for ch in key):
            return _err("the key contains whitespace; paste just the key")
        account, created = store.add_account(provider, key, label=args.label)
        count = len(store.accounts(provider))
    except AuthStoreError as exc:
        return _err(str(exc))
    verb = "Stored" if created else "Replaced"
    print(f"{verb} API key for {provider} as account '{account.label}' in {store.path} "
          f"({count} account{'s' if count != 1 else ''})")
    if entry.api_key:
        print(f"note: [provider.{provider}] api_key in the config takes precedence", file=sys.stderr)
    for var in env_vars_for(provider, entry.env_var):
        if os.environ.get(var):
            print(f"note: {var} is set in the environment and takes precedence", file=sys.stderr)
    return 0


def run_logout(args: argparse.Namespace) -> int:
    import os

    from nyzhi.auth import AuthStore, AuthStoreError
    from nyzhi.config.presets import env_vars_for

    if not args.provider and not args.all:
        return _err("name a provider (nyz logout PROVIDER) or pass --all")
    store = AuthStore()
    try:
        removed = store.remove(None if args.all else args.provider, args.label)
    except AuthStoreError as exc:
        return _err(str(exc))
    what = "all providers" if args.all else args.provider
    if args.label:
        what += f" (account '{args.label}')"
    print(f"Removed {removed} stored account{'s' if removed != 1 else ''} for {what}")
    if args.provider:
        for var in env_vars_for(args.provider):
            if os.environ.get(var):
                print(f"note: {var} is still set in the environment", file=sys.stderr)
    return 0


def _fmt_wait(seconds: float) -> str:
    seconds = int(seconds + 0.999)
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def _expiry(expires_at: float | None, *, renewable: bool) -> str:
    """How long an OAuth token has left (and whether nyz renews it)."""
    import time

    if expires_at is None:
        return ""
    left = expires_at - time.time()
    renew = "; renewed before it expires" if renewable else "; run `nyz login` again then"
    if left <= 0:
        return f"  expired {_fmt_wait(-left)} ago" + ("; renewed on next use" if renewable else "")
    stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(expires_at))
    return f"  expires in {_fmt_wait(left)} ({stamp}{renew})"


def run_whoami(args: argparse.Namespace) -> int:
    from nyzhi.auth import AccountPool, AuthStore, AuthStoreError, collect_accounts
    from nyzhi.config.presets import BUILTIN_PROVIDERS, env_vars_for

    config = _config()
    store = AuthStore()
    try:
        stored = store.load()
    except AuthStoreError as exc:
        print(f"warning: {exc}", file=sys.stderr)
        stored = {}
        store = AuthStore(path=store.path.with_name(".nyzhi-unreadable-auth.json"))
    names = list(BUILTIN_PROVIDERS)
    names += [n for n in (*config.provider.entries, *stored) if n not in names]
    default = config.provider.default
    print(f"default provider: {default or '(auto: first with a key, else the local model)'}")
    print(f"credentials file: {store.path}")
    for name in names:
        entry = config.provider.get(name)
        accounts, cooldowns, unavailable = collect_accounts(name, entry, store=store)
        pool = AccountPool(name, accounts, cooldowns=cooldowns)
        preset = BUILTIN_PROVIDERS.get(name)
        marker = " (default)" if name == default else ""
        if not accounts and not unavailable:
            if preset is not None and not preset.needs_key:
                print(f"{name}{marker}: no key needed")
            else:
                var = env_vars_for(name, entry.env_var)[0]
                print(f"{name}{marker}: not connected (set {var} or run `nyz login {name}`)")
            continue
        print(f"{name}{marker}:")
        for state in pool.states():
            a = state.account
            flag = "*" if state.current else " "
            where = {"config": "config", "env": f"env {a.origin}", "auth.json": "auth.json"}.get(
                a.source, a.source)
            extra = f"  rate-limited for {_fmt_wait(state.cooldown_remaining)}" \
                if state.cooldown_remaining > 0 else ""
            extra += _expiry(a.expires_at, renewable=entry.oauth is not None)
            print(f"  {flag} {a.label:<12} {where:<28} {a.kind:<8} {a.masked}{extra}")
        for item in unavailable:
            print(f"    {item.label:<12} auth.json  unavailable: {item.reason}")
    return 0
