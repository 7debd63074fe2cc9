"""``nyz models [PROVIDER]`` and ``nyz models refresh [PROVIDER...]``: what models there are.

The listing is the model table (``nyzhi.provider.models``): context window, output limit, list
prices, vision and how each model takes thinking, filtered to one provider when one is named,
with the provider's default marked. ``refresh`` asks each configured provider's own model list
endpoint (``refresh_models``) which ids exist and caches the answer in
``$XDG_CACHE_HOME/nyzhi/models.json``, which the listing then shows beside the table.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

CACHE_FILE = "models.json"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "models", help="list the models nyz knows (nyz models PROVIDER, nyz models refresh)")
    p.add_argument("names", nargs="*", metavar="PROVIDER",
                   help="a provider to list; or `refresh` [PROVIDER...] to ask the providers")
    p.set_defaults(handler=run_models)


def cache_path(env: Any = None) -> Path:
    from nyzhi.config.paths import cache_dir

    return cache_dir(env) / CACHE_FILE


def read_cache(env: Any = None) -> dict[str, Any]:
    """The cached listings by provider ({} when there are none or the file is unreadable)."""
    try:
        data = json.loads(cache_path(env).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def run_models(args: argparse.Namespace) -> int:
    names = list(args.names or ())
    if names and names[0] == "refresh":
        return run_refresh(names[1:])
    if len(names) > 1:
        print("nyz models: name one provider (or `nyz models refresh PROVIDER...`)",
              file=sys.stderr)
        return 2
    return run_list(names[0] if names else None)


def _row(cells: list[str]) -> str:
    widths = (34, 10, 10, 8, 7, 7, 6, 8)
    left = (0, 1, 7)
    return "  ".join(c.ljust(w) if i in left else c.rjust(w)
                     for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()


def _tokens(n: int) -> str:
    return f"{n:,}"


def run_list(provider: str | None) -> int:
    from nyzhi.config.presets import BUILTIN_PROVIDERS
    from nyzhi.provider.models import table, vendor_of

    cache = read_cache()
    if provider is not None and provider not in BUILTIN_PROVIDERS and provider not in cache:
        known = ", ".join(sorted(BUILTIN_PROVIDERS))
        print(f"nyz models: unknown provider {provider!r} (built-in: {known}; a configured one "
              "is listed after `nyz models refresh`)", file=sys.stderr)
        return 1
    defaults = {p.default_model.lower() for p in BUILTIN_PROVIDERS.values() if p.default_model}
    print(_row(["MODEL", "PROVIDER", "CONTEXT", "OUTPUT", "$IN/M", "$OUT/M", "VISION",
                "THINKING"]))
    for info in table():
        vendor = vendor_of(info.id)
        if provider is not None and vendor != provider:
            continue
        mark = " *" if info.id in defaults else ""
        print(_row([info.id + mark, vendor, _tokens(info.context_window), _tokens(info.max_output),
                    f"{info.input_price:.2f}", f"{info.output_price:.2f}",
                    "yes" if info.vision else "no", info.thinking]))
    print("* a provider's default model · prices in USD per million tokens, list prices "
          "(0.00: not known) · docs/config.md")
    for name, entry in sorted(cache.items()):
        if provider is not None and name != provider:
            continue
        ids = entry.get("models") or []
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.get("fetched", 0)))
        print(f"\n{name} lists {len(ids)} models (refreshed {when}):")
        for model_id in ids:
            print(f"  {model_id}")
    return 0


def _configured(config: Any, env: Any) -> list[str]:
    """Providers to ask: the configured ones and every built-in one with a key."""
    from nyzhi.auth import resolve_key_source
    from nyzhi.config.presets import BUILTIN_PROVIDERS

    names = list(config.provider.entries)
    if config.provider.default and config.provider.default not in names:
        names.append(config.provider.default)
    for name, preset in BUILTIN_PROVIDERS.items():
        if name in names or not preset.needs_key:
            continue
        if resolve_key_source(name, config.provider.get(name), env).current_key():
            names.append(name)
    return names


def run_refresh(names: list[str]) -> int:
    import os

    import trio

    from nyzhi.config.fsutil import atomic_write
    from nyzhi.config.project_trust import load_trusted
    from nyzhi.core.protocol import describe_error
    from nyzhi.core.runtime.assembly import provider_spec
    from nyzhi.provider.models import refresh_models

    env = dict(os.environ)
    # a project's unapproved base_url or key is left out: the user's key goes nowhere it chose
    config = load_trusted(Path.cwd(), env)[0].config
    names = names or _configured(config, env)
    if not names:
        print("nyz models refresh: no provider is configured or has a key "
              "(set one up: docs/config.md)", file=sys.stderr)
        return 1
    cache = read_cache(env)
    failed = 0
    for name in names:
        try:
            spec = provider_spec(name, config, env)
            found = trio.run(lambda s=spec: refresh_models(s, register_unknown=False))
        except Exception as exc:  # one line per provider, then the others
            failed += 1
            print(f"{name}: {describe_error(exc)}", file=sys.stderr)
            continue
        cache[name] = {"fetched": time.time(), "base_url": spec.base_url,
                       "models": [m.id for m in found]}
        print(f"{name}: {len(found)} models")
    if len(cache):
        atomic_write(cache_path(env), json.dumps(cache, indent=1).encode(), mode=0o600,
                     dir_mode=0o700, what="the model cache")
    return 1 if failed == len(names) else 0
