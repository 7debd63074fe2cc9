"""Built-in provider presets: what ``[provider.NAME]`` means when NAME is a known service.

These live in the config layer (the bottom of the stack) because both ``nyzhi.auth`` (which
environment variables hold a key) and ``nyzhi.provider`` (wire style, base URL) need them.
A ``[provider.NAME]`` table overrides any field of a preset; any other NAME is a custom
provider whose api_style defaults to "openai" and whose key is read from ``<NAME>_API_KEY``.
"""

from __future__ import annotations

import attrs

from nyzhi import records
from nyzhi.config.modes import ApiStyle


@records.frozen
class ProviderPreset:
    """One built-in service. The single table: ``nyzhi.provider.spec.PRESETS`` derives from it."""

    name: str
    title: str
    api_style: ApiStyle
    base_url: str
    env_vars: tuple[str, ...]  # checked in order; the first one set wins
    default_model: str
    needs_key: bool = True  # False: a local server that works without a key
    headers: dict[str, str] = attrs.field(factory=dict)


BUILTIN_PROVIDERS: dict[str, ProviderPreset] = {
    p.name: p
    for p in (
        ProviderPreset("openai", "OpenAI", ApiStyle.OPENAI, "https://api.openai.com/v1",
                       ("OPENAI_API_KEY",), "gpt-4.1"),
        ProviderPreset("anthropic", "Anthropic", ApiStyle.ANTHROPIC, "https://api.anthropic.com/v1",
                       ("ANTHROPIC_API_KEY",), "claude-sonnet-4-5"),
        ProviderPreset("gemini", "Google Gemini", ApiStyle.GEMINI,
                       "https://generativelanguage.googleapis.com/v1beta",
                       ("GEMINI_API_KEY", "GOOGLE_API_KEY"), "gemini-2.5-flash"),
        ProviderPreset("openrouter", "OpenRouter", ApiStyle.OPENAI, "https://openrouter.ai/api/v1",
                       ("OPENROUTER_API_KEY",), "anthropic/claude-sonnet-4.5",
                       headers={"HTTP-Referer": "https://github.com/nyzhi", "X-Title": "nyzhi"}),
        ProviderPreset("groq", "Groq", ApiStyle.OPENAI, "https://api.groq.com/openai/v1",
                       ("GROQ_API_KEY",), "llama-3.3-70b-versatile"),
        ProviderPreset("together", "Together AI", ApiStyle.OPENAI, "https://api.together.xyz/v1",
                       ("TOGETHER_API_KEY",), "meta-llama/Llama-3.3-70B-Instruct-Turbo"),
        ProviderPreset("deepseek", "DeepSeek", ApiStyle.OPENAI, "https://api.deepseek.com/v1",
                       ("DEEPSEEK_API_KEY",), "deepseek-chat"),
        ProviderPreset("ollama", "Ollama (local)", ApiStyle.OLLAMA, "http://localhost:11434",
                       ("OLLAMA_API_KEY",), "llama3.1", needs_key=False),
        # The offline default: the runtime starts the server and fills in the real port.
        ProviderPreset("llama-cpp", "llama.cpp (offline default model)", ApiStyle.LLAMA_CPP,
                       "http://127.0.0.1:8080/v1", (), "smollm2-135m-instruct", needs_key=False),
    )
}


def env_var_for(name: str) -> str:
    """The conventional variable for a custom provider: ``my-corp`` -> ``MY_CORP_API_KEY``."""
    cleaned = "".join(ch if ch.isalnum() else "_" for ch in name.upper())
    return f"{cleaned}_API_KEY"


def env_vars_for(name: str, override: str | None = None) -> tuple[str, ...]:
    """Variables to check for ``name``: an explicit ``env_var`` replaces the defaults."""
    if override:
        return (override,)
    preset = BUILTIN_PROVIDERS.get(name)
    if preset is not None:
        return preset.env_vars
    return (env_var_for(name),)
