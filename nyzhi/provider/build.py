"""``build_provider``: a ``ProviderSpec`` in, a streaming ``Provider`` out.

``llama-cpp`` is the OpenAI Chat Completions adapter with one workaround (see llama_cpp.py): llama.cpp's server speaks
that format, the runtime only has to point ``base_url`` at the port it started.
"""

from __future__ import annotations

import httpx

from nyzhi.provider.anthropic import AnthropicAdapter
from nyzhi.provider.gemini import GeminiAdapter
from nyzhi.provider.http import HttpProvider
from nyzhi.provider.llama_cpp import LlamaCppAdapter
from nyzhi.provider.ollama import OllamaAdapter
from nyzhi.provider.openai_chat import OpenAIChatAdapter
from nyzhi.provider.openai_responses import OpenAIResponsesAdapter
from nyzhi.provider.spec import ProviderSpec
from nyzhi.provider.wire import WireAdapter

ADAPTERS: dict[str, type] = {
    "openai": OpenAIChatAdapter,
    "llama-cpp": LlamaCppAdapter,
    "openai-responses": OpenAIResponsesAdapter,
    "anthropic": AnthropicAdapter,
    "gemini": GeminiAdapter,
    "ollama": OllamaAdapter,
}


def adapter_for(api_style: str) -> WireAdapter:
    try:
        return ADAPTERS[api_style]()
    except KeyError:
        raise ValueError(
            f"unknown api_style {api_style!r}; expected one of {', '.join(ADAPTERS)}"
        ) from None


def build_provider(spec: ProviderSpec, *, client: httpx.AsyncClient | None = None) -> HttpProvider:
    """A provider for ``spec``. Without ``client`` it makes (and on ``aclose`` closes) its own;
    pass one to share a connection pool between providers."""
    return HttpProvider(spec, adapter_for(spec.api_style), client)
