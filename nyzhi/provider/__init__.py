"""nyzhi.provider: model services behind one streaming ``Provider`` protocol.

Names are exported lazily so ``import nyzhi.provider.types`` (used everywhere) does not pay for
httpx at start-up; ``from nyzhi.provider import build_provider`` imports it when first used.

    spec = ProviderSpec(name="anthropic", api_style="anthropic",
                        base_url="https://api.anthropic.com/v1", model="claude-sonnet-4-5",
                        key=os.environ["ANTHROPIC_API_KEY"])
    async with build_provider(spec) as provider:
        async with contextlib.aclosing(provider.stream(ChatRequest(messages=...))) as events:
            async for event in events: ...
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "build_provider": "nyzhi.provider.build",
    "adapter_for": "nyzhi.provider.build",
    "HttpProvider": "nyzhi.provider.http",
    "parse_retry_after": "nyzhi.provider.http",
    "ProviderSpec": "nyzhi.provider.spec",
    "RetryPolicy": "nyzhi.provider.spec",
    "StreamLimits": "nyzhi.provider.spec",
    "StaticKey": "nyzhi.provider.spec",
    "Preset": "nyzhi.provider.spec",
    "PRESETS": "nyzhi.provider.spec",
    "API_STYLES": "nyzhi.provider.spec",
    "preset": "nyzhi.provider.spec",
    "spec_from_preset": "nyzhi.provider.spec",
    "parse_tool_arguments": "nyzhi.provider.arguments",
    "ToolArgumentError": "nyzhi.provider.arguments",
    "ModelInfo": "nyzhi.provider.models",
    "model_info": "nyzhi.provider.models",
    "cost": "nyzhi.provider.models",
    "refresh_models": "nyzhi.provider.models",
}
_ERRORS = (
    "ProviderError ProviderHTTPError BadRequestError AuthenticationError PermissionDeniedError "
    "NotFoundError RateLimitError ServerError ProviderConnectionError ProviderStreamError "
    "StreamEndedEarly StreamInterrupted"
).split()
_EXPORTS.update({name: "nyzhi.provider.errors" for name in _ERRORS})
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'nyzhi.provider' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
