"""What a provider is configured with, and the built-in presets.

``ProviderSpec`` takes plain values only (no config or auth objects), so the runtime maps
``[provider.NAME]`` config plus a key source from ``nyzhi.auth`` onto it, and tests build one
by hand. A plain string key (or None) is wrapped in ``StaticKey``.
"""

from __future__ import annotations

from typing import Any

import attrs

from nyzhi import records
from nyzhi.config.modes import ApiStyle, choices
from nyzhi.config.presets import BUILTIN_PROVIDERS
from nyzhi.provider.types import KeySource, ThinkingConfig

API_STYLES: tuple[str, ...] = choices(ApiStyle)  # the spellings (``config.modes.ApiStyle``)


@records.define
class StaticKey:
    """A one-key ``KeySource``: a 429 on it can only be waited out."""

    key: str | None = attrs.field(default=None, repr=False)

    def current_key(self) -> str | None:
        return self.key

    def report_rate_limited(self, key: str, retry_after: float | None) -> bool:
        return False


def _as_key_source(value: KeySource | str | None) -> KeySource:
    if value is None or isinstance(value, str):
        return StaticKey(value or None)
    if not isinstance(value, KeySource):
        raise TypeError(f"key must be a str, None or a KeySource, not {type(value).__name__}")
    return value


@records.frozen
class RetryPolicy:
    """Bounds of the retry loop (maps from ``[agent.retry]``).

    A retry waits ``initial_backoff_ms * 2**(n-1)`` capped at ``max_backoff_ms``, shortened by
    up to ``jitter`` (a fraction, 0..1) at random so that many clients do not retry in step.
    A Retry-After from the server is honoured exactly, unless it is longer than
    ``max_retry_after_s``: then we give up at once with a ``RateLimitError`` that says how long
    the provider asked for, rather than hang the user for an hour.
    """

    max_retries: int = attrs.field(default=3, validator=attrs.validators.ge(0))
    initial_backoff_ms: int = 1000
    max_backoff_ms: int = 30_000
    jitter: float = attrs.field(default=0.2, validator=[attrs.validators.ge(0), attrs.validators.le(1)])
    max_retry_after_s: float = 120.0

    def backoff(self, retry_number: int, rand: float) -> float:
        """Seconds to wait before retry number ``retry_number`` (1-based); ``rand`` in [0, 1)."""
        base = min(self.max_backoff_ms, self.initial_backoff_ms * 2 ** (retry_number - 1)) / 1000
        return base * (1 - self.jitter * rand)


@records.frozen
class StreamLimits:
    """How much one answer (one model request) may carry (maps from ``[agent.stream]``).

    A hostile or broken server can stream without end: 1.5 GB of text deltas once peaked at
    7.7 GB of memory. Past a bound the answer stops with a ``ProviderStreamError`` naming it
    (``nyzhi.provider.stream_guard``); a single record is bounded too, since the framing
    buffers one whole record before anyone sees it.

    * ``max_answer_chars``: text and thinking of the answer together;
    * ``max_tool_argument_chars``: the arguments of one tool call;
    * ``max_step_tool_argument_chars``: the arguments of all the answer's tool calls.
    """

    max_answer_chars: int = attrs.field(default=4_000_000, validator=attrs.validators.ge(1))
    max_tool_argument_chars: int = attrs.field(default=4_000_000,
                                               validator=attrs.validators.ge(1))
    max_step_tool_argument_chars: int = attrs.field(default=16_000_000,
                                                    validator=attrs.validators.ge(1))

    @property
    def max_record_chars(self) -> int:
        """One framed record (an SSE event, an NDJSON line): room for the biggest delta the
        bounds above allow, JSON-escaped (up to 6 characters each), and its envelope."""
        return 6 * max(self.max_answer_chars, self.max_tool_argument_chars) + 65_536


@records.define
class ProviderSpec:
    """One configured model service.

    ``max_tokens``/``temperature``/``thinking`` are defaults a ``ChatRequest`` may override.
    Timeouts bound connecting and the silence between two received chunks (not the whole
    answer, which can legitimately stream for minutes).
    """

    name: str
    api_style: str = attrs.field(validator=attrs.validators.in_(API_STYLES))
    base_url: str = attrs.field(converter=lambda s: s.rstrip("/"))
    model: str
    key: KeySource = attrs.field(default=None, converter=_as_key_source, repr=False)
    headers: dict[str, str] = attrs.field(factory=dict)
    max_tokens: int | None = None
    temperature: float | None = None
    thinking: ThinkingConfig | None = None
    retry: RetryPolicy = attrs.field(factory=RetryPolicy)
    limits: StreamLimits = attrs.field(factory=StreamLimits)
    connect_timeout_s: float | None = 15.0
    read_timeout_s: float | None = 300.0


@records.frozen
class Preset:
    """A built-in service as the provider layer sees it (derived from the config layer's
    ``BUILTIN_PROVIDERS``, the one table of presets)."""

    name: str
    api_style: str
    base_url: str
    env_var: str | None
    default_model: str
    headers: dict[str, str] = attrs.field(factory=dict)
    key_required: bool = True


PRESETS: dict[str, Preset] = {
    p.name: Preset(
        p.name, p.api_style, p.base_url, p.env_vars[0] if p.env_vars else None,
        p.default_model, dict(p.headers), p.needs_key,
    )
    for p in BUILTIN_PROVIDERS.values()
}


def preset(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        known = ", ".join(sorted(PRESETS))
        raise KeyError(f"unknown provider preset {name!r}; built-in presets: {known}") from None


def spec_from_preset(name: str, *, key: KeySource | str | None = None, **overrides: Any) -> ProviderSpec:
    """A ``ProviderSpec`` for a built-in preset; ``overrides`` replace any field."""
    p = preset(name)
    fields: dict[str, Any] = {
        "name": p.name,
        "api_style": p.api_style,
        "base_url": p.base_url,
        "model": p.default_model,
        "headers": dict(p.headers),
        "key": key,
    }
    fields.update(overrides)
    return ProviderSpec(**fields)


ANTHROPIC_VERSION = "2023-06-01"


def auth_headers(spec: ProviderSpec) -> dict[str, str]:
    """The spec's own headers plus its key the way its wire format sends it (for the requests
    that are not model calls: the model list, the window questions, native web search)."""
    headers = dict(spec.headers)
    key = spec.key.current_key()
    if spec.api_style == ApiStyle.ANTHROPIC:
        headers["anthropic-version"] = ANTHROPIC_VERSION
    if key:
        if spec.api_style == ApiStyle.ANTHROPIC:
            headers["x-api-key"] = key
        elif spec.api_style == ApiStyle.GEMINI:
            headers["x-goog-api-key"] = key
        else:
            headers["authorization"] = f"Bearer {key}"
    return headers
