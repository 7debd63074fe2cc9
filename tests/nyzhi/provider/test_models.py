"""The model registry, cost, and refreshing from a provider's listing endpoint."""

from __future__ import annotations

import pytest
from provider_helpers import make_spec

from nyzhi.provider import (
    NotFoundError,
    build_provider,
    cost,
    model_info,
    parse_tool_arguments,
    refresh_models,
)
from nyzhi.provider.arguments import ToolArgumentError
from nyzhi.provider.models import REGISTRY
from nyzhi.provider.types import Usage
from nyzhi.testing.fake_llm import open_fake_llm


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("claude-sonnet-4-20250514", "claude-sonnet-4"),
        ("claude-3-5-haiku-latest", "claude-3-5-haiku"),
        ("models/gemini-2.5-pro", "gemini-2.5-pro"),
        ("llama3.1:8b", "llama3.1"),
        ("SmolLM2-135M-Instruct.Q4_1.gguf", "smollm2-135m-instruct"),
        ("openai/gpt-5-mini", "gpt-5-mini"),
    ],
)
def test_lookup_is_forgiving(name: str, canonical: str) -> None:
    info = model_info(name)
    assert info.known
    ref = REGISTRY[canonical]
    assert (info.context_window, info.input_price, info.output_price) == (
        ref.context_window, ref.input_price, ref.output_price)


def test_well_known_facts() -> None:
    assert model_info("claude-sonnet-4-5").thinking == "budget"
    assert model_info("o4-mini").thinking == "effort"
    assert model_info("gpt-4o").thinking == "none"
    assert model_info("gemini-2.5-flash").context_window == 1_048_576
    assert model_info("smollm2-135m-instruct").input_price == 0.0


def test_unknown_model_gets_conservative_defaults() -> None:
    info = model_info("totally-new-model-9000")
    assert not info.known and info.id == "totally-new-model-9000"
    assert info.context_window == 128_000 and cost(Usage(1000, 1000), info) == 0.0


def test_cost_counts_cache_reads_and_writes() -> None:
    usage = Usage(input_tokens=1_000_000, output_tokens=100_000, cache_read_tokens=2_000_000, cache_write_tokens=400_000)
    # claude-sonnet-4-5: in 3, out 15, read 0.3, write 3.75 per million
    assert cost(usage, "claude-sonnet-4-5-20250929") == pytest.approx(3.0 + 1.5 + 0.6 + 1.5)
    # no cache prices: cache tokens are charged as input
    assert cost(Usage(0, 0, 1_000_000, 0), "llama-3.1-8b-instant") == pytest.approx(0.05)


@pytest.mark.parametrize("style", ["openai", "ollama", "gemini", "anthropic"])
async def test_refresh_models_from_the_fake_server(style: str) -> None:
    models = ("gpt-4o", f"brand-new-{style}")
    async with open_fake_llm(None, models=models) as server:
        async with build_provider(make_spec(server, style)) as provider:
            found = await refresh_models(provider)
        (req,) = server.info_requests
    assert req.method == "GET"
    assert req.path == {"ollama": "/api/tags", "gemini": "/v1beta/models"}.get(style, "/v1/models")
    assert [m.id for m in found] == list(models)
    assert found[0].known and found[0].context_window == 128_000
    assert not found[1].known
    if style == "gemini":  # the listing's limits are used for unknown models
        assert found[1].context_window == 32768
    assert model_info(f"brand-new-{style}").context_window == found[1].context_window


async def test_refresh_models_error_is_clear() -> None:
    async with open_fake_llm(None) as server:
        spec = make_spec(server, "openai")
        spec.base_url = server.base_url + "/nope"
        with pytest.raises(NotFoundError, match="no route for GET /nope/models"):
            await refresh_models(spec)


def test_parse_tool_arguments() -> None:
    assert parse_tool_arguments('{"a": 1}') == {"a": 1}
    assert parse_tool_arguments("") == {} and parse_tool_arguments("  ") == {}
    bad = parse_tool_arguments("[1, 2]")
    assert isinstance(bad, ToolArgumentError) and "expected a JSON object" in str(bad)
    assert isinstance(parse_tool_arguments("{oops"), ToolArgumentError)
