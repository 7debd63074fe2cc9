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


# ---- redaction -------------------------------------------------------------------------------

MIN_REDACT_LEN = 8  # shorter values are too likely to be ordinary words or numbers


class Redactor:
    """The secret values nyz knows, and their replacement by ``[redacted: NAME]``.

    Known secrets are the provider keys nyz resolved, the values of environment variables the
    shell policy keeps out of tool processes, and the entries of auth.json. They are replaced
    in tool results before the model sees them, and in events before any front end, the
    session log or an export sees them. Values shorter than ``MIN_REDACT_LEN`` characters are
    ignored, so ordinary output is not mangled. Longer values are matched first, so a secret
    that contains another is replaced whole.
    """

    def __init__(self) -> None:
        self._names: dict[str, str] = {}  # value -> name
        self._pattern: re.Pattern[str] | None = None

    def __bool__(self) -> bool:
        return bool(self._names)

    def add(self, name: str, value: str | None) -> None:
        """Register ``value`` (a secret known as ``name``); short or empty values are ignored."""
        if not value or len(value) < MIN_REDACT_LEN or value in self._names:
            return
        self._names[value] = name
        self._pattern = None

    def add_all(self, secrets: dict[str, str]) -> None:
        for name, value in secrets.items():
            self.add(name, value)

    def _compiled(self) -> re.Pattern[str]:
        if self._pattern is None:
            values = sorted(self._names, key=len, reverse=True)
            self._pattern = re.compile("|".join(re.escape(v) for v in values))
        return self._pattern

    def redact(self, text: str) -> str:
        """``text`` with every known secret replaced by ``[redacted: NAME]``."""
        if not self._names or not text:
            return text
        return self._compiled().sub(lambda m: f"[redacted: {self._names[m.group(0)]}]", text)

    def redact_value(self, value: object) -> object:
        """``value`` with secrets redacted in every string inside it (dicts, lists, tuples);
        the same object when nothing changed, so callers can tell cheaply."""
        if not self._names:
            return value
        if isinstance(value, str):
            redacted = self.redact(value)
            return value if redacted == value else redacted
        if isinstance(value, dict):
            out = {k: self.redact_value(v) for k, v in value.items()}
            return value if all(out[k] is value[k] for k in value) else out
        if isinstance(value, list | tuple):
            items = [self.redact_value(v) for v in value]
            if all(a is b for a, b in zip(items, value, strict=True)):
                return value
            return type(value)(items) if isinstance(value, tuple) else items
        return value
