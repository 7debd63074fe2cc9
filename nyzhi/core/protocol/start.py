"""What a front end may ask before it opens a session, or of one it drives without a host:
the configuration a session in a folder runs under, whether it would have a provider, and the
TLS certificates its provider will need, loaded ahead.

Session-level functions of the protocol: ACP asks whether to offer ``nyz login`` before any
session is open, ``nyz run --autopilot`` reads its loop limit, and the console warms the TLS
certificates while it imports the runtime, each here rather than from the configuration's
loader, the runtime's assembly and the provider's TLS. The configuration reads are
blocking; the warm-up starts a thread.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def trusted_loaded(cwd: Path, *, approve: bool = False) -> Any:
    """The ``LoadedConfig`` (config, workspace, files) a session opened in ``cwd`` runs
    under: the user's and the project's layers, the project's gated keys only when a person
    approved them (``config.project_trust``; ``approve``: ``--approve-project-config`` for
    this run). What a front end acts on itself (the console's ``[tui]``, ``/model``'s
    providers, ``/autopilot``'s loop limit) is this view, the one the runtime opens with: an
    unapproved project never picks a host or loosens a limit through a front end either."""
    from nyzhi.config.project_trust import load_trusted

    return load_trusted(cwd, approve=approve)[0]


def trusted_config(cwd: Path) -> Any:
    """The ``Config`` of ``trusted_loaded(cwd)``."""
    return trusted_loaded(cwd).config


def prewarm_tls() -> None:
    """Start loading the TLS CA bundle a session's provider connects with (in a daemon
    thread, once per process), so the first request does not wait for it: the console starts
    it while the runtime is imported."""
    from nyzhi.provider import tls

    tls.prewarm()


def provider_missing(cwd: Path, provider: str | None = None) -> bool:
    """No provider would be chosen for a session in ``cwd`` (``provider``: ``--provider``),
    so it would fall back to the small offline model: what logging in would change. A config
    that cannot be read is not that question (False): opening the session says what is wrong."""
    from nyzhi.core.runtime.assembly import choose_provider

    try:
        config = trusted_config(cwd).with_overrides(provider=provider)
    except Exception:
        return False
    return choose_provider(config, os.environ) is None


__all__ = ["prewarm_tls", "provider_missing", "trusted_config"]
