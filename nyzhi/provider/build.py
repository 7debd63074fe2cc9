"""``build_provider``: a ``ProviderSpec`` in, a streaming ``Provider`` out.

``llama-cpp`` is the OpenAI Chat Completions adapter with one workaround (see llama_cpp.py): llama.cpp's server speaks
that format, the runtime only has to point ``base_url`` at the port it started.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from nyzhi.config.modes import ApiStyle
from nyzhi.provider.http import HttpProvider
from nyzhi.provider.spec import ProviderSpec
from nyzhi.provider.wire import WireAdapter

if TYPE_CHECKING:
    import httpx

# api_style -> (module, class). Imported on first use: a run talks to one wire format, and each
# adapter module costs start-up time (``nyz run`` reaching its first request).
ADAPTERS: dict[str, tuple[str, str]] = {
    ApiStyle.OPENAI: ("nyzhi.provider.openai_chat", "OpenAIChatAdapter"),
    ApiStyle.LLAMA_CPP: ("nyzhi.provider.llama_cpp", "LlamaCppAdapter"),
    ApiStyle.OPENAI_RESPONSES: ("nyzhi.provider.openai_responses", "OpenAIResponsesAdapter"),
    ApiStyle.ANTHROPIC: ("nyzhi.provider.anthropic", "AnthropicAdapter"),
    ApiStyle.GEMINI: ("nyzhi.provider.gemini", "GeminiAdapter"),
    ApiStyle.OLLAMA: ("nyzhi.provider.ollama", "OllamaAdapter"),
}


def adapter_for(api_style: str) -> WireAdapter:
    try:
        module, name = ADAPTERS[api_style]
    except KeyError:
        raise ValueError(
            f"unknown api_style {api_style!r}; expected one of {', '.join(ADAPTERS)}"
        ) from None
    return getattr(importlib.import_module(module), name)()


def build_provider(spec: ProviderSpec, *, client: httpx.AsyncClient | None = None) -> HttpProvider:
    """A provider for ``spec``. Without ``client`` it makes (and on ``aclose`` closes) its own;
    pass one to share a connection pool between providers."""
    return HttpProvider(spec, adapter_for(spec.api_style), client)
