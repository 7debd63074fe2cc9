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

# A preset's default model that is whatever its server lists first (a local server runs the
# model the user loaded into it).
LISTED = ""


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
                       ("OPENAI_API_KEY",), "gpt-5.5"),
        ProviderPreset("anthropic", "Anthropic", ApiStyle.ANTHROPIC, "https://api.anthropic.com/v1",
                       ("ANTHROPIC_API_KEY",), "claude-opus-5"),
        ProviderPreset("gemini", "Google Gemini", ApiStyle.GEMINI,
                       "https://generativelanguage.googleapis.com/v1beta",
                       ("GEMINI_API_KEY", "GOOGLE_API_KEY"), "gemini-3.1-pro-preview"),
        ProviderPreset("openrouter", "OpenRouter", ApiStyle.OPENAI, "https://openrouter.ai/api/v1",
                       ("OPENROUTER_API_KEY",), "anthropic/claude-sonnet-4.5",
                       headers={"HTTP-Referer": "https://github.com/nyzhi", "X-Title": "nyzhi"}),
        ProviderPreset("groq", "Groq", ApiStyle.OPENAI, "https://api.groq.com/openai/v1",
                       ("GROQ_API_KEY",), "llama-3.3-70b-versatile"),
        ProviderPreset("together", "Together AI", ApiStyle.OPENAI, "https://api.together.xyz/v1",
                       ("TOGETHER_API_KEY",), "meta-llama/Llama-3.3-70B-Instruct-Turbo"),
        ProviderPreset("deepseek", "DeepSeek", ApiStyle.OPENAI, "https://api.deepseek.com/v1",
                       ("DEEPSEEK_API_KEY",), "deepseek-chat"),
        # OpenAI-compatible services (base URLs and key variables from their own docs)
        ProviderPreset("moonshot", "Moonshot AI (Kimi)", ApiStyle.OPENAI,
                       "https://api.moonshot.ai/v1",
                       ("MOONSHOT_API_KEY", "KIMI_API_KEY"), "kimi-k2.6"),
        ProviderPreset("minimax", "MiniMax", ApiStyle.OPENAI, "https://api.minimax.io/v1",
                       ("MINIMAX_API_KEY",), "MiniMax-M2.7"),
        ProviderPreset("zai", "Z.ai (Zhipu GLM)", ApiStyle.OPENAI, "https://api.z.ai/api/paas/v4",
                       ("ZAI_API_KEY", "ZHIPUAI_API_KEY"), "glm-5"),
        ProviderPreset("xai", "xAI (Grok)", ApiStyle.OPENAI, "https://api.x.ai/v1",
                       ("XAI_API_KEY",), "grok-4.3"),
        ProviderPreset("mistral", "Mistral AI", ApiStyle.OPENAI, "https://api.mistral.ai/v1",
                       ("MISTRAL_API_KEY",), "devstral-medium-latest"),
        ProviderPreset("cerebras", "Cerebras", ApiStyle.OPENAI, "https://api.cerebras.ai/v1",
                       ("CEREBRAS_API_KEY",), "gpt-oss-120b"),
        ProviderPreset("fireworks", "Fireworks AI", ApiStyle.OPENAI,
                       "https://api.fireworks.ai/inference/v1", ("FIREWORKS_API_KEY",),
                       "accounts/fireworks/models/qwen3-coder-480b-a35b-instruct"),
        ProviderPreset("ollama", "Ollama (local)", ApiStyle.OLLAMA, "http://localhost:11434",
                       ("OLLAMA_API_KEY",), "llama3.1", needs_key=False),
        # Local OpenAI-compatible servers: keyless; the model is the first one the server lists
        # (``LISTED``) unless [provider.NAME] model names one.
        ProviderPreset("lmstudio", "LM Studio (local)", ApiStyle.OPENAI,
                       "http://localhost:1234/v1",
                       ("LMSTUDIO_API_KEY",), LISTED, needs_key=False),
        ProviderPreset("vllm", "vLLM (local)", ApiStyle.OPENAI, "http://localhost:8000/v1",
                       ("VLLM_API_KEY",), LISTED, needs_key=False),
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
