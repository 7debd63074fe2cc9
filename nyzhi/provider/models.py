"""What we know about models: context window, output limit, prices, tier, thinking support.

The table holds well-known models with public list prices (USD per million tokens) as of
late 2025; they change, so treat ``cost`` as an estimate. Lookup is forgiving: provider
prefixes (``openai/``, ``models/``), date suffixes (``-20250514``) and tags (``:8b``) are
stripped, then the longest known prefix wins (``gpt-4o-2024-08-06`` → ``gpt-4o``). A model
we do not know gets defaults (``DEFAULT_CONTEXT_WINDOW``, free, ``known=False``) so it still
works; ``nyzhi.provider.limits`` asks its server or the config for the real window.

``refresh_models`` asks the provider's own listing endpoint which model ids exist.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Literal

import attrs

from nyzhi import records
from nyzhi.config.modes import ApiStyle
from nyzhi.provider.types import Usage

if TYPE_CHECKING:
    import httpx

    from nyzhi.provider.spec import ProviderSpec

Tier = Literal["low", "medium", "high"]
# How thinking is asked for, if at all: "effort" (OpenAI reasoning effort), "budget" (a token
# budget: Anthropic ``enabled``, Gemini 2.5 ``thinkingBudget``), "adaptive" (Anthropic 4.6+:
# the model decides, steered by an effort), "level" (Gemini 3 ``thinkingLevel``), "toggle"
# (on or off only: Ollama's ``think``).
Thinking = Literal["none", "effort", "budget", "adaptive", "level", "toggle"]

#: The window of a model nobody can tell us about; see ``nyzhi.provider.limits`` for why.
DEFAULT_CONTEXT_WINDOW = 128_000


@records.frozen
class ModelInfo:
    id: str
    context_window: int = DEFAULT_CONTEXT_WINDOW
    max_output: int = 4096
    input_price: float = 0.0  # USD per million uncached input tokens
    output_price: float = 0.0
    cache_read_price: float | None = None  # None: same as input
    cache_write_price: float | None = None
    tier: Tier = "medium"
    thinking: Thinking = "none"
    known: bool = True
    thinking_min: int = 0  # the smallest thinking budget the model takes (0: no minimum)
    thinking_max: int = 0  # the largest (0: bounded only by the output limit)
    efforts: tuple[str, ...] = ()  # the efforts/levels it takes, when not low/medium/high
    vision: bool = False  # takes images (prompts' and tools')


def _m(id: str, ctx: int, out: int, inp: float, outp: float, read: float | None = None,
       write: float | None = None, tier: Tier = "medium", thinking: Thinking = "none",
       **extra: Any) -> ModelInfo:
    return ModelInfo(id, ctx, out, inp, outp, read, write, tier, thinking, **extra)


# Claude: Anthropic's documented minimum thinking budget, and vision (Claude 3 and later).
_CLAUDE: dict[str, Any] = {"thinking_min": 1024, "vision": True}


_M = 1_000_000
_TABLE = [
    # OpenAI
    _m("gpt-4.1", 1_047_576, 32_768, 2.0, 8.0, 0.5, tier="high", vision=True),
    _m("gpt-4.1-mini", 1_047_576, 32_768, 0.4, 1.6, 0.1, vision=True),
    _m("gpt-4.1-nano", 1_047_576, 32_768, 0.1, 0.4, 0.025, tier="low", vision=True),
    _m("gpt-4o", 128_000, 16_384, 2.5, 10.0, 1.25, tier="high", vision=True),
    _m("gpt-4o-mini", 128_000, 16_384, 0.15, 0.6, 0.075, tier="low", vision=True),
    _m("o1", 200_000, 100_000, 15.0, 60.0, 7.5, tier="high", thinking="effort", vision=True),
    _m("o3", 200_000, 100_000, 2.0, 8.0, 0.5, tier="high", thinking="effort", vision=True),
    _m("o3-pro", 200_000, 100_000, 20.0, 80.0, tier="high", thinking="effort", vision=True),
    _m("o3-mini", 200_000, 100_000, 1.1, 4.4, 0.55, thinking="effort"),
    _m("o4-mini", 200_000, 100_000, 1.1, 4.4, 0.275, thinking="effort", vision=True),
    _m("gpt-5", 400_000, 128_000, 1.25, 10.0, 0.125, tier="high", thinking="effort", vision=True),
    _m("gpt-5-mini", 400_000, 128_000, 0.25, 2.0, 0.025, thinking="effort", vision=True),
    _m("gpt-5-nano", 400_000, 128_000, 0.05, 0.4, 0.005, tier="low", thinking="effort", vision=True),
    _m("gpt-5-codex", 400_000, 128_000, 1.25, 10.0, 0.125, tier="high", thinking="effort", vision=True),
    _m("gpt-5.1", 400_000, 128_000, 1.25, 10.0, 0.125, tier="high", thinking="effort", vision=True),
    _m("gpt-5.2", 400_000, 128_000, 1.75, 14.0, 0.175, tier="high", thinking="effort", vision=True),
    # GPT-5.5 (April 2026): 1,050,000-token window, 128K output, $5/$30; cached input is an
    # estimate (a tenth of input, as GPT-5's).
    _m("gpt-5.5", 1_050_000, 128_000, 5.0, 30.0, 0.5, tier="high", thinking="effort", vision=True),
    _m("gpt-5.5-pro", 1_050_000, 128_000, 30.0, 180.0, 3.0, tier="high", thinking="effort",
       vision=True),
    # Anthropic (cache write = 1.25 × input, cache read = 0.1 × input)
    _m("claude-3-5-sonnet", 200_000, 8_192, 3.0, 15.0, 0.3, 3.75, tier="high", vision=True),
    _m("claude-3-5-haiku", 200_000, 8_192, 0.8, 4.0, 0.08, 1.0, tier="low", vision=True),
    _m("claude-3-7-sonnet", 200_000, 64_000, 3.0, 15.0, 0.3, 3.75, tier="high", thinking="budget", **_CLAUDE),
    _m("claude-sonnet-4", 200_000, 64_000, 3.0, 15.0, 0.3, 3.75, tier="high", thinking="budget", **_CLAUDE),
    _m("claude-sonnet-4-5", 200_000, 64_000, 3.0, 15.0, 0.3, 3.75, tier="high", thinking="budget", **_CLAUDE),
    _m("claude-sonnet-4-6", 200_000, 64_000, 3.0, 15.0, 0.3, 3.75, tier="high", thinking="adaptive", vision=True),
    _m("claude-opus-4", 200_000, 32_000, 15.0, 75.0, 1.5, 18.75, tier="high", thinking="budget", **_CLAUDE),
    _m("claude-opus-4-1", 200_000, 32_000, 15.0, 75.0, 1.5, 18.75, tier="high", thinking="budget", **_CLAUDE),
    _m("claude-opus-4-5", 200_000, 64_000, 5.0, 25.0, 0.5, 6.25, tier="high", thinking="budget", **_CLAUDE),
    _m("claude-opus-4-6", 1_000_000, 128_000, 5.0, 25.0, 0.5, 6.25, tier="high", thinking="adaptive", vision=True),
    _m("claude-haiku-4-5", 200_000, 64_000, 1.0, 5.0, 0.1, 1.25, tier="low", thinking="budget", **_CLAUDE),
    # The current line (Anthropic's models overview): 1M window, 128K output, adaptive thinking.
    _m("claude-opus-5", 1_000_000, 128_000, 5.0, 25.0, 0.5, 6.25, tier="high", thinking="adaptive",
       vision=True),
    _m("claude-sonnet-5", 1_000_000, 128_000, 2.0, 10.0, 0.2, 2.5, tier="high",
       thinking="adaptive", vision=True),
    _m("claude-fable-5", 1_000_000, 128_000, 10.0, 50.0, 1.0, 12.5, tier="high",
       thinking="adaptive", vision=True),
    _m("claude-fable-5-1", 1_000_000, 128_000, 10.0, 50.0, 1.0, 12.5, tier="high",
       thinking="adaptive", vision=True),
    # Google
    _m("gemini-2.0-flash", 1_048_576, 8_192, 0.1, 0.4, 0.025, tier="low", vision=True),
    _m("gemini-2.0-flash-lite", 1_048_576, 8_192, 0.075, 0.3, tier="low", vision=True),
    _m("gemini-2.5-pro", 1_048_576, 65_536, 1.25, 10.0, 0.125, tier="high", thinking="budget",
       thinking_min=128, thinking_max=32_768, vision=True),
    _m("gemini-2.5-flash", 1_048_576, 65_536, 0.3, 2.5, 0.03, thinking="budget", thinking_min=1,
       thinking_max=24_576, vision=True),
    _m("gemini-2.5-flash-lite", 1_048_576, 65_536, 0.1, 0.4, 0.01, tier="low", thinking="budget",
       thinking_min=512, thinking_max=24_576, vision=True),
    # Gemini 3 (model pages: 1,048,576 in, 65,536 out; thinkingLevel instead of a budget)
    _m("gemini-3-pro-preview", 1_048_576, 65_536, 2.0, 12.0, tier="high", thinking="level",
       efforts=("low", "high"), vision=True),
    _m("gemini-3.1-pro-preview", 1_048_576, 65_536, 2.0, 12.0, tier="high", thinking="level",
       vision=True),
    # DeepSeek (API), Groq, Together
    _m("deepseek-chat", 128_000, 8_192, 0.28, 0.42, 0.028),
    _m("deepseek-reasoner", 128_000, 64_000, 0.28, 0.42, 0.028, thinking="effort"),
    _m("llama-3.3-70b-versatile", 131_072, 32_768, 0.59, 0.79),
    _m("llama-3.1-8b-instant", 131_072, 8_192, 0.05, 0.08, tier="low"),
    _m("meta-llama/llama-3.3-70b-instruct-turbo", 131_072, 8_192, 0.88, 0.88),
    _m("qwen/qwen2.5-coder-32b-instruct", 32_768, 8_192, 0.8, 0.8),
    _m("deepseek-ai/deepseek-v3", 128_000, 8_192, 1.25, 1.25),
    # The OpenAI-compatible presets' defaults: windows from the providers' docs; where no list
    # price could be checked the price is 0 (cost not counted) and the docs say so.
    _m("kimi-k2.6", 262_144, 262_144, 0.0, 0.0, tier="high", vision=True),
    _m("minimax-m2.7", 204_800, 8_192, 0.0, 0.0, tier="high"),
    _m("glm-5", 128_000, 8_192, 0.0, 0.0, tier="high"),
    _m("glm-4.6", 204_800, 8_192, 0.39, 1.74, tier="high"),
    _m("devstral-medium-latest", 262_144, 8_192, 0.4, 2.0, tier="high"),
    _m("codestral-latest", 256_000, 8_192, 0.3, 0.9),
    _m("gpt-oss-120b", 131_072, 8_192, 0.0, 0.0, thinking="effort"),
    # Local (Ollama tags, llama.cpp): free
    _m("llama3.1", 131_072, 8_192, 0.0, 0.0, tier="low"),
    _m("llama3.2", 131_072, 8_192, 0.0, 0.0, tier="low"),
    _m("llama3.3", 131_072, 8_192, 0.0, 0.0),
    _m("llama3.2-vision", 131_072, 8_192, 0.0, 0.0, tier="low", vision=True),
    _m("qwen2.5-coder", 32_768, 8_192, 0.0, 0.0, tier="low"),
    _m("qwen3", 40_960, 8_192, 0.0, 0.0, tier="low", thinking="toggle"),
    _m("deepseek-r1", 131_072, 8_192, 0.0, 0.0, tier="low", thinking="toggle"),
    _m("smollm2-135m-instruct", 8_192, 2_048, 0.0, 0.0, tier="low"),
]
REGISTRY: dict[str, ModelInfo] = {m.id: m for m in _TABLE}
ALIASES = {"smollm2-135m": "smollm2-135m-instruct", "smollm2": "smollm2-135m-instruct"}

_DATE = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2}|latest)$")


def _normalise(model: str) -> str:
    name = model.strip().lower()
    if name.startswith("models/"):
        name = name[len("models/") :]
    if name.endswith(".gguf"):  # a local file path: its stem
        name = name.rsplit("/", 1)[-1][: -len(".gguf")].split(".q")[0]
    return name


def model_info(model: str) -> ModelInfo:
    """Everything known about ``model``; unknown models get conservative defaults."""
    name = _normalise(model)
    candidates = [name]
    if "/" in name and name not in REGISTRY:  # openrouter-style "vendor/model"
        candidates.append(name.split("/", 1)[1])
    for cand in list(candidates):
        candidates.append(_DATE.sub("", cand))
        candidates.append(cand.split(":", 1)[0])  # ollama tag
    for cand in candidates:
        cand = ALIASES.get(cand, cand)
        if cand in REGISTRY:
            return REGISTRY[cand]
    best = ""
    for cand in candidates:
        for known in REGISTRY:
            if len(known) > len(best) and cand.startswith(known) and cand[len(known) : len(known) + 1] in ("-", ".", ":", ""):
                best = known
    if best:
        return attrs.evolve(REGISTRY[best], id=model)
    return ModelInfo(model, known=False)


# Which built-in provider serves a table model, by id prefix (``nyz models PROVIDER``).
_VENDORS = (
    ("gpt-", "openai"), ("o1", "openai"), ("o3", "openai"), ("o4", "openai"),
    ("claude-", "anthropic"), ("gemini-", "gemini"), ("deepseek-ai/", "together"),
    ("deepseek-", "deepseek"), ("meta-llama/", "together"), ("qwen/", "together"),
    ("llama-3", "groq"), ("kimi-", "moonshot"), ("minimax-", "minimax"), ("glm-", "zai"),
    ("devstral", "mistral"), ("codestral", "mistral"), ("grok-", "xai"),
    ("gpt-oss", "cerebras"), ("smollm", "llama-cpp"),
)


def vendor_of(model_id: str) -> str:
    """The built-in provider a table model belongs to ("ollama" for local tags)."""
    name = model_id.lower()
    for prefix, vendor in sorted(_VENDORS, key=lambda p: -len(p[0])):
        if name.startswith(prefix):
            return vendor
    return "ollama"


def table() -> list[ModelInfo]:
    """Every model the table knows (built in, plus ``register``ed), in order."""
    return list(REGISTRY.values())


def cost(usage: Usage, model: str | ModelInfo) -> float:
    """USD for one call: uncached input, cache reads and writes, and output at list price."""
    info = model if isinstance(model, ModelInfo) else model_info(model)
    read = info.input_price if info.cache_read_price is None else info.cache_read_price
    write = info.input_price if info.cache_write_price is None else info.cache_write_price
    return (
        usage.input_tokens * info.input_price
        + usage.cache_read_tokens * read
        + usage.cache_write_tokens * write
        + usage.output_tokens * info.output_price
    ) / _M


def register(info: ModelInfo) -> None:
    """Add or replace a model (e.g. from config or a refresh)."""
    REGISTRY[_normalise(info.id)] = info


async def refresh_models(
    provider: Any, *, client: httpx.AsyncClient | None = None, register_unknown: bool = True
) -> list[ModelInfo]:
    """Model ids the provider lists right now, with what we know about each.

    ``provider`` is a ``ProviderSpec`` or anything with a ``.spec`` (a built provider).
    OpenAI-compatible and Anthropic: ``GET {base}/models``; Ollama: ``GET {base}/api/tags``;
    Gemini: ``GET {base}/models`` (which also gives token limits). Unknown ids are registered
    with default limits (Gemini's listed limits when given) unless ``register_unknown`` is off.
    """
    import httpx

    from nyzhi.provider.errors import http_error

    spec: ProviderSpec = getattr(provider, "spec", provider)
    from nyzhi.provider.spec import auth_headers

    headers = auth_headers(spec)
    style = spec.api_style
    if style == ApiStyle.OLLAMA:
        url = f"{spec.base_url}/api/tags"
    elif style == ApiStyle.GEMINI:
        url = f"{spec.base_url}/models?pageSize=100"
    else:
        url = f"{spec.base_url}/models"
    own = client is None
    http = client or httpx.AsyncClient(timeout=30.0)
    try:
        response = await http.get(url, headers=headers)
    finally:
        if own:
            await http.aclose()
    if response.status_code >= 400:
        raise http_error(response.status_code, response.content, provider=spec.name, model=spec.model)
    data = response.json()
    found: list[ModelInfo] = []
    if style == ApiStyle.OLLAMA:
        entries = [(m.get("name") or m.get("model"), {}) for m in data.get("models") or ()]
    elif style == ApiStyle.GEMINI:
        entries = [((m.get("name") or "").removeprefix("models/"), m) for m in data.get("models") or ()]
    else:
        entries = [(m.get("id"), {}) for m in data.get("data") or ()]
    for model_id, extra in entries:
        if not model_id:
            continue
        info = model_info(model_id)
        if not info.known:
            info = attrs.evolve(
                info,
                context_window=extra.get("inputTokenLimit") or info.context_window,
                max_output=extra.get("outputTokenLimit") or info.max_output,
            )
            if register_unknown:
                register(attrs.evolve(info, known=False))
        found.append(info)
    return found


