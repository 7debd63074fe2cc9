"""Turning any error into the one clear line a user reads.

Library errors already carry actionable messages (config errors name the file and key,
provider errors the provider, model, status and the provider's own message); this only adds
the type name when the message alone would be ambiguous.
"""

from __future__ import annotations


def describe_error(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        return describe_error(exc.exceptions[0])
    text = str(exc).strip()
    if not text:
        return type(exc).__name__
    if isinstance(exc, (OSError, KeyError, ValueError, TypeError, RuntimeError)) and type(
        exc
    ).__module__ == "builtins":
        return f"{type(exc).__name__}: {text}"
    return text
