"""Recognising and masking secrets, so no command ever prints one.

Shared by ``nyz config show/get`` (api_key, tokens, secret-looking headers and env values)
and by ``nyzhi.auth`` (``nyz whoami``).
"""

from __future__ import annotations

import re

_SECRET_NAME = re.compile(r"(api[_-]?key|token|secret|password|passwd|authorization|credential)",
                          re.IGNORECASE)


def is_secret_key(path: tuple) -> bool:
    """True when the last (string) component of a key path names a secret."""
    names = [p for p in path if isinstance(p, str)]
    return bool(names) and bool(_SECRET_NAME.search(names[-1]))


def mask_secret(secret: str | None) -> str:
    """``sk-…abcd`` for long secrets, ``****`` for short ones: enough to tell keys apart,
    never enough to use one."""
    if not secret:
        return ""
    if len(secret) < 16:
        return "****"
    return f"{secret[:3]}…{secret[-4:]}"
