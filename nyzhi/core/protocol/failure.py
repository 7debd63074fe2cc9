"""Which part of a turn an exception came from, as a front end reports it.

A turn that raised failed in its model call (the provider, after its retries), in its tool
step (the executor, a hook, a gate: the loop marks those, ``core.errors.mark_tool_step``),
or elsewhere. ``nyz run``'s ``result`` names the first two ``provider_error`` and
``tool_error``; asking here keeps the front end off the provider's error tree and the
loop's marking.
"""

from __future__ import annotations

from typing import Literal

FailureKind = Literal["provider", "tool", "other"]


def failure_kind(exc: BaseException) -> FailureKind:
    """``provider`` for a failed model call, ``tool`` for a failed tool step, else ``other``."""
    from nyzhi.core.errors import in_tool_step
    from nyzhi.provider.errors import ProviderError

    if isinstance(exc, ProviderError):
        return "provider"
    if in_tool_step(exc):
        return "tool"
    return "other"


__all__ = ["FailureKind", "failure_kind"]
