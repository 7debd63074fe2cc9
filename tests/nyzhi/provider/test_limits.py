"""Where a model's context window comes from (nyzhi.provider.limits): config, the server
(each kind that reports one, served by the scripted fake over real HTTP), the table, or the
default; and the overflow errors of each wire format (nyzhi.provider.errors)."""

from __future__ import annotations

import json

import pytest
import trio
from provider_helpers import make_spec

from nyzhi.loopback import is_loopback_url as is_loopback
from nyzhi.provider.errors import ContextOverflowError, http_error, overflow_figures
from nyzhi.provider.limits import (
    DEFAULT_CONTEXT_WINDOW,
    ConfiguredLimits,
    LimitsResolver,
)
from nyzhi.testing.fake_llm import open_fake_llm
from nyzhi.testing.fake_llm_wire import overflow_body

SERVERS = {
    # name: (api_style, open_fake_llm keywords, expected window, expected output limit)
    "openrouter": ("openai", {"model_fields": {"fake-model-1": {
        "context_length": 65536, "top_provider": {"max_completion_tokens": 8000}}}}, 65536, 8000),
    "vllm": ("openai", {"model_fields": {"fake-model-1": {"max_model_len": 32768}}}, 32768, None),
    "groq": ("openai", {"model_fields": {"fake-model-1": {"context_window": 131072}}},
             131072, None),
    "llama.cpp": ("llama-cpp", {"props": {"default_generation_settings": {"n_ctx": 12288}}},
                  12288, None),
    "ollama": ("ollama", {"model_fields": {"fake-model-1": {"num_ctx": 16384}}}, 16384, None),
    "gemini": ("gemini", {"model_fields": {"fake-model-1": {"inputTokenLimit": 1048576,
                                                            "outputTokenLimit": 65536}}},
               1048576, 65536),
}


@pytest.mark.parametrize("kind", sorted(SERVERS))
async def test_the_server_supplies_the_window(kind, tmp_path):
    style, fake, window, output = SERVERS[kind]
    async with open_fake_llm(None, **fake) as server:
        resolver = LimitsResolver(make_spec(server, style), cache_dir=tmp_path)
        limits = await resolver.resolve("fake-model-1")
    assert (limits.context_window, limits.source) == (window, "server")
    if output is not None:
        assert (limits.max_output, limits.output_source) == (output, "server")
    assert resolver.notice(limits) is None
    assert server.requests == []  # questions about models are not model requests
    [cache] = (tmp_path / "models").glob("*.json")
    assert json.loads(cache.read_text())["models"]["fake-model-1"]["context_window"] == window


async def test_write_behind_answers_before_the_cache_is_written(tmp_path):
    """With ``write_behind``, ``resolve`` returns the server's answer while the cache write
    waits its turn in the given nursery; the write still lands, with the same content."""
    style, fake, window, _output = SERVERS["vllm"]
    async with open_fake_llm(None, **fake) as server, trio.open_nursery() as writes:
        queued: list[object] = []

        def write_behind(fn, *args):
            queued.append(fn)
            writes.start_soon(fn, *args)

        resolver = LimitsResolver(make_spec(server, style), cache_dir=tmp_path,
                                  write_behind=write_behind)
        limits = await resolver.resolve("fake-model-1")
        assert (limits.context_window, limits.source) == (window, "server")
        assert len(queued) == 1
        assert list((tmp_path / "models").glob("*.json")) == []  # not written yet
    [cache] = (tmp_path / "models").glob("*.json")  # the nursery closed after the write
    assert json.loads(cache.read_text())["models"]["fake-model-1"]["context_window"] == window


async def test_lm_studio_rest_api_supplies_the_window(tmp_path):
    fields = {"fake-model-1": {"state": "loaded", "max_context_length": 32768}}
    async with open_fake_llm(None, model_fields=fields) as server:
        limits = await LimitsResolver(make_spec(server, "openai"), cache_dir=tmp_path).resolve(
            "fake-model-1")
    # the OpenAI-style list has the field too here; LM Studio's own REST API is asked after it
    assert (limits.context_window, limits.source) == (32768, "server")


async def test_a_server_that_cannot_tell_gives_the_default_and_one_notice(tmp_path):
    async with open_fake_llm(None) as server:
        resolver = LimitsResolver(make_spec(server, "openai"),
                                  ConfiguredLimits("fake-openai"), cache_dir=tmp_path)
        limits = await resolver.resolve("fake-model-1")
    assert (limits.context_window, limits.source) == (DEFAULT_CONTEXT_WINDOW, "default")
    notice = resolver.notice(limits)
    assert notice is not None and "'fake-model-1'" in notice
    assert "[provider.fake-openai] context_window" in notice
    assert resolver.notice(limits) is None  # once
    # all three asked (together, so in any order)
    assert sorted(r.path for r in server.info_requests) == [
        "/api/v0/models/fake-model-1", "/props", "/v1/models"]


async def test_config_wins_and_per_model_over_provider(tmp_path):
    configured = ConfiguredLimits("p", 50_000, 2_000, {"fake-model-2": (9_000, None)})
    async with open_fake_llm(None, props={"n_ctx": 4096}) as server:
        resolver = LimitsResolver(make_spec(server, "llama-cpp"), configured, cache_dir=tmp_path)
        one = await resolver.resolve("fake-model-1")
        two = await resolver.resolve("fake-model-2")
    assert (one.context_window, one.max_output, one.source) == (50_000, 2_000, "config")
    assert (two.context_window, two.max_output, two.source) == (9_000, 2_000, "config")
    assert two.key == '[provider.p.models."fake-model-2"] context_window'
    assert server.info_requests == []  # nothing to ask


def test_table_models_are_not_asked_of_a_remote_server():
    from nyzhi.provider import ProviderSpec

    spec = ProviderSpec(name="openai", api_style="openai",
                        base_url="https://api.openai.com/v1", model="gpt-4o")
    resolver = LimitsResolver(spec)
    assert not resolver._worth_asking("gpt-4o") and resolver._worth_asking("gpt-99-preview")
    limits = resolver.known("gpt-4o")
    assert (limits.context_window, limits.source) == (128_000, "table")
    assert is_loopback("http://127.0.0.1:8080/v1") and is_loopback("http://localhost:1234")
    assert not is_loopback("https://openrouter.ai/api/v1")


@pytest.mark.parametrize("wire,figures", [
    ("openai", (210_000, 200_000)),
    ("anthropic", (210_000, 200_000)),
    ("gemini", (210_000, 200_000)),
    ("openai-responses", (None, None)),  # its message names no figures
    ("ollama", (None, None)),
])
def test_each_wire_formats_overflow_is_its_own_kind(wire, figures):
    error = http_error(400, overflow_body(wire, 210_000, 200_000), provider="p", model="m")
    assert isinstance(error, ContextOverflowError) and not error.retryable
    assert (error.tokens, error.limit) == figures


def test_overflow_shapes_and_non_overflows():
    llama = json.dumps({"error": {
        "code": 400, "type": "exceed_context_size_error", "n_prompt_tokens": 4476, "n_ctx": 4096,
        "message": "request (4476 tokens) exceeds the available context size (4096 tokens)"}})
    error = http_error(400, llama.encode(), provider="p", model="m")
    assert isinstance(error, ContextOverflowError) and (error.tokens, error.limit) == (4476, 4096)
    vllm = ("This model's maximum context length is 8192 tokens. However, you requested 9000 "
            "tokens (8000 in the messages, 1000 in the completion).")
    assert overflow_figures(vllm) == (True, 8000, 8192)
    # other bad requests stay what they were
    other = http_error(400, b'{"error": {"message": "unknown parameter: foo"}}',
                       provider="p", model="m")
    assert not isinstance(other, ContextOverflowError)
    assert overflow_figures("max_tokens is too large") == (False, None, None)


def test_a_window_that_is_not_positive_is_a_config_error_naming_the_key(tmp_path):
    import subprocess

    from nyzhi.config import load_config
    from nyzhi.config.errors import ConfigError

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".nyzhi").mkdir()
    config = tmp_path / ".nyzhi" / "config.toml"
    for table, key, value in (("[provider.x]", "context_window", 0),
                              ('[provider.x.models."m"]', "max_output_tokens", -5)):
        config.write_text(f"{table}\n{key} = {value}\n")
        with pytest.raises(ConfigError) as info:
            load_config(tmp_path, env={"HOME": str(tmp_path)})
        message = str(info.value)
        assert str(config) in message and "provider.x" in message
        # one line naming the file, the key and the value (-5 is caught by the config's general
        # number check, 0 by the window's own: either says what is wrong where)
        assert "\n" not in message.strip() and f"{key}" in message and str(value) in message
        assert "positive" in message or "from 0 to" in message


async def test_a_kept_answer_is_used_at_once_and_asked_again_behind_it(tmp_path):
    """A loopback server's kept answer serves the next start's first request at once (no
    question before it); the server is asked again behind it, and the start after that has
    what the server says now."""
    style, fake, window, _output = SERVERS["llama.cpp"]
    async with open_fake_llm(None, **fake) as server:
        first = await LimitsResolver(make_spec(server, style), cache_dir=tmp_path).resolve(
            "fake-model-1")
        assert (first.context_window, first.source) == (window, "server")
        asked = len(server.info_requests)
        server.props = {"default_generation_settings": {"n_ctx": 24576}}  # restarted bigger
        queued: list[tuple[object, tuple[object, ...]]] = []
        second = LimitsResolver(make_spec(server, style), cache_dir=tmp_path,
                                write_behind=lambda fn, *args: queued.append((fn, args)))
        limits = await second.resolve("fake-model-1")
        assert (limits.context_window, limits.source) == (window, "server")  # the kept one
        assert len(server.info_requests) == asked  # nothing asked before answering
        [(refresh, args)] = queued
        async with trio.open_nursery() as writes:
            second._write_behind = writes.start_soon
            await refresh(*args)
        third = await LimitsResolver(make_spec(server, style), cache_dir=tmp_path).resolve(
            "fake-model-1")
    assert len(server.info_requests) > asked
    assert (third.context_window, third.source) == (24576, "server")


async def test_a_stopped_resolver_asks_nothing_behind(tmp_path):
    style, fake, _window, _output = SERVERS["llama.cpp"]
    async with open_fake_llm(None, **fake) as server:
        await LimitsResolver(make_spec(server, style), cache_dir=tmp_path).resolve(
            "fake-model-1")
        asked = len(server.info_requests)
        queued: list[tuple[object, tuple[object, ...]]] = []
        resolver = LimitsResolver(make_spec(server, style), cache_dir=tmp_path,
                                  write_behind=lambda fn, *args: queued.append((fn, args)))
        await resolver.resolve("fake-model-1")
        resolver.stop_refreshing()
        [(refresh, args)] = queued
        await refresh(*args)
        assert len(server.info_requests) == asked


async def test_the_default_window_notice_is_shown_once_per_server_and_model(tmp_path):
    """Across starts (resolvers sharing the state directory): once per (server, model)."""
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "HOME": str(tmp_path)}
    async with open_fake_llm(None) as server:
        def notice(model: str) -> str | None:
            resolver = LimitsResolver(make_spec(server, "openai"), ConfiguredLimits("fake-openai"),
                                      cache_dir=tmp_path, notices_env=env)
            return resolver.notice(resolver.known(model))

        assert notice("fake-model-1") is not None
        assert notice("fake-model-1") is None  # the next start
        assert notice("fake-model-2") is not None  # another model is another notice
        other = dict(env, XDG_STATE_HOME=str(tmp_path / "other"))
        resolver = LimitsResolver(make_spec(server, "openai"), ConfiguredLimits("fake-openai"),
                                  cache_dir=tmp_path, notices_env=other)
        assert resolver.notice(resolver.known("fake-model-1")) is not None  # nothing seen there
