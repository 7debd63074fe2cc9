"""The context-window question at start-up rides on the provider's own client (no second TLS
context; the first request can reuse its connection), and ``open_runtime`` still builds the
agents knowing the answer although the question now runs beside the rest of the assembly."""

from __future__ import annotations

from nyzhi.config import load_config
from nyzhi.core.runtime import assembly
from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime
from nyzhi.provider import build_provider
from nyzhi.testing.fake_llm import open_fake_llm, reply

PROPS = {"default_generation_settings": {"n_ctx": 12288}, "total_slots": 1}


async def test_the_window_question_goes_through_the_providers_client(workspace, home, configure):
    asked: list[str] = []

    async def record(request) -> None:
        asked.append(request.url.path)

    async with open_fake_llm(script=[], props=PROPS) as server:
        configure(workspace, server.url_for("llama-cpp"), api_style="llama-cpp")
        config = load_config(workspace).config
        spec = assembly.provider_spec("fake", config, {})
        async with build_provider(spec) as provider:
            provider.client.event_hooks["request"].append(record)
            resolver = assembly.limits_resolver(config, provider, RuntimeOptions(cwd=workspace))
            limits = await resolver.resolve(provider.model)
    assert (limits.context_window, limits.source) == (12288, "server")
    # through the provider's client, which the hook is on (all questions go out together)
    assert "/props" in asked and sorted(asked) == sorted(r.path for r in server.info_requests)


async def test_the_first_turn_knows_the_window_asked_during_assembly(workspace, home, configure):
    async with open_fake_llm(script=[reply("ok")], props=PROPS) as server:
        configure(workspace, server.url_for("llama-cpp"), api_style="llama-cpp")
        async with open_runtime(RuntimeOptions(cwd=workspace, ephemeral=True)) as rt:
            # built after the question was answered: the main agent's settings and prompt
            settings = rt.main_agent.loop.settings
            assert (settings.context_window, settings.window_source) == (12288, "server")
            handle = await rt.submit("hi")
            await handle.wait()
    assert "/props" in [r.path for r in server.info_requests]
    assert len(server.requests) == 1  # the one model request, after the question


async def test_the_next_start_uses_the_kept_answer_and_notices_once(workspace, home, configure):
    """A second start against the same loopback server and model: the kept answer at once
    (the window from it, the default's notice not said again)."""
    async with open_fake_llm(script=[reply("ok"), reply("ok")]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace, ephemeral=True)) as rt:
            first = [n for n in rt.notices if "context window" in n]
            await (await rt.submit("hi")).wait()
        asked = len(server.info_requests)
        async with open_runtime(RuntimeOptions(cwd=workspace, ephemeral=True)) as rt:
            again = [n for n in rt.notices if "context window" in n]
            assert rt.main_agent.loop.settings.window_source == "default"
            await (await rt.submit("hi")).wait()
    assert len(first) == 1 and again == []
    assert asked > 0 and len(server.requests) == 2
