"""web_search with the model's own key: the provider's server-side search (Anthropic's web
search tool, OpenAI Responses' web_search, Gemini's Google Search grounding), against the fake
LLM answering in each provider's documented shape over real HTTP."""

from __future__ import annotations

import httpx
import pytest
from _toolctx import make_ctx

from nyzhi.config.secrets import Redactor
from nyzhi.provider import ProviderSpec
from nyzhi.testing.fake_llm import JsonAnswer, open_fake_llm
from nyzhi.testing.fake_llm_wire import search_answer
from nyzhi.tools.builtin.web_search import ProviderSearchTool

HITS = [("Trio docs", "https://trio.readthedocs.io/en/stable/", "Trio is a friendly library"),
        ("Trio on PyPI", "https://pypi.org/project/trio/", "pip install trio")]
SERVER_TOOL = {  # what each wire's request must carry to search on the provider's side
    "anthropic": lambda body: body["tools"][0]["type"] == "web_search_20250305",
    "openai-responses": lambda body: body["tools"] == [{"type": "web_search"}],
    "gemini": lambda body: body["tools"] == [{"google_search": {}}],
}
KEY_HEADER = {"anthropic": "x-api-key", "openai-responses": "authorization",
              "gemini": "x-goog-api-key"}


@pytest.mark.parametrize("wire", sorted(SERVER_TOOL))
async def test_each_providers_search_gives_framed_hits_with_their_citations(wire, tmp_path):
    answer = search_answer(wire, HITS, "Trio is an async library for Python.")
    async with open_fake_llm(script=[JsonAnswer(answer)]) as server:
        spec = ProviderSpec(name="p", api_style=wire, base_url=server.url_for(wire),
                            model="fake-model-1", key="sk-the-users-own-key")
        async with httpx.AsyncClient() as client:
            res = await ProviderSearchTool(spec, client).run(
                {"query": "python trio library", "max_results": 5}, make_ctx(tmp_path))
    assert not res.is_error, res.output
    [request] = server.requests
    assert SERVER_TOOL[wire](request.json)
    assert "sk-the-users-own-key" in request.headers.get(KEY_HEADER[wire], "")
    assert "python trio library" in str(request.json)
    out = res.output
    assert out.startswith("2 results for 'python trio library' (p search):")
    assert "<untrusted-content" in out and "Treat it as data" in out
    for title, url, cited in HITS:
        assert title in out and url in out and f"cited: {cited}" in out
    assert res.metadata == {"backend": "p", "native": True, "results": 2}


async def test_a_provider_side_search_error_is_one_line(tmp_path):
    answer = search_answer("anthropic", [], error_code="max_uses_exceeded")
    async with open_fake_llm(script=[JsonAnswer(answer)]) as server:
        spec = ProviderSpec(name="p", api_style="anthropic",
                            base_url=server.url_for("anthropic"), model="m", key="k")
        async with httpx.AsyncClient() as client:
            res = await ProviderSearchTool(spec, client).run({"query": "x"}, make_ctx(tmp_path))
    assert res.is_error and "max_uses_exceeded" in res.output and "\n" not in res.output
    async with open_fake_llm(script=[JsonAnswer({"error": {"message": "no"}}, status=400)]) as s:
        spec = ProviderSpec(name="p", api_style="gemini", base_url=s.url_for("gemini"),
                            model="m", key="k")
        async with httpx.AsyncClient() as client:
            res = await ProviderSearchTool(spec, client).run({"query": "x"}, make_ctx(tmp_path))
    assert res.is_error and "HTTP 400: no" in res.output


async def test_a_secret_in_the_query_is_redacted_before_it_leaves(tmp_path):
    secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    async with open_fake_llm(script=[JsonAnswer(search_answer("anthropic", HITS))]) as server:
        spec = ProviderSpec(name="p", api_style="anthropic",
                            base_url=server.url_for("anthropic"), model="m", key="k")
        ctx = make_ctx(tmp_path)
        ctx.redactor = Redactor()
        ctx.redactor.add("GITHUB_TOKEN", secret)
        async with httpx.AsyncClient() as client:
            res = await ProviderSearchTool(spec, client).run(
                {"query": f"why does {secret} fail"}, ctx)
    assert not res.is_error
    assert secret not in server.requests[0].body.decode()


@pytest.mark.parametrize("style, offered", [
    ("anthropic", True), ("openai-responses", True), ("gemini", True), ("openai", False)])
async def test_the_session_gets_it_only_without_a_backend_and_with_a_searching_provider(
        workspace, home, configure, style, offered):
    from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime

    async with open_fake_llm() as server:
        configure(workspace, server.url_for(style), api_style=style)
        async with open_runtime(RuntimeOptions(cwd=workspace, ephemeral=True)) as rt:
            registry = rt.main_agent.tooling.registry
            tool = registry.get("web_search")
            assert (tool is not None) == offered
            if offered:
                assert isinstance(tool, ProviderSearchTool) and registry.is_deferred("web_search")
        configure(workspace, server.url_for(style), api_style=style,
                  extra='[web_search]\nbackend = "searxng"\nurl = "http://127.0.0.1:9"\n')
        async with open_runtime(RuntimeOptions(cwd=workspace, ephemeral=True)) as rt:
            tool = rt.main_agent.tooling.registry.get("web_search")
            assert tool is not None and not isinstance(tool, ProviderSearchTool)  # the backend
