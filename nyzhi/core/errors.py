"""Turning any error into the one clear line a user reads.

Library errors already carry actionable messages (config errors name the file and key,
provider errors the provider, model, status and the provider's own message); this only adds
the type name when the message alone would be ambiguous.
"""

from __future__ import annotations

import contextlib


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


_TOOL_STEP = "_nyzhi_tool_step"


def mark_tool_step(exc: BaseException) -> None:
    """Mark ``exc`` as raised by a turn's tool step (the executor, a hook, a gate), not by the
    model call: a headless ``result`` says ``tool_error`` rather than ``provider_error``."""
    with contextlib.suppress(AttributeError):  # an exception type with __slots__
        setattr(exc, _TOOL_STEP, True)


def in_tool_step(exc: BaseException) -> bool:
    return bool(getattr(exc, _TOOL_STEP, False))
