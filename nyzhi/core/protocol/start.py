"""What a front end may ask before it opens a session, or of one it drives without a host:
the configuration a session in a folder runs under, and whether it would have a provider.

Session-level functions of the protocol: ACP asks whether to offer ``nyz login`` before any
session is open, and ``nyz run --autopilot`` reads its loop limit, each here rather than from
the configuration's loader and the runtime's assembly. Both read files: blocking.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def trusted_config(cwd: Path) -> Any:
    """The ``Config`` a session opened in ``cwd`` runs under: the user's and the project's
    layers, the project's gated keys only when the project is trusted
    (``config.project_trust``)."""
    from nyzhi.config.project_trust import load_trusted

    return load_trusted(cwd)[0].config


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


__all__ = ["provider_missing", "trusted_config"]
