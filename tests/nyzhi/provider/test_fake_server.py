"""The fake LLM server itself: dynamic mode, transcripts, recording, routes, exhaustion."""

from __future__ import annotations

import httpx
import pytest
import trio
import trio.testing
from provider_helpers import READ_TOOL, collect, ends, make_spec, simple_request, text_of

from nyzhi.provider import ServerError
from nyzhi.provider.types import Message, ToolCall
from nyzhi.testing.fake_llm import FakeRequest, ScriptItem, open_fake_llm, reply, tool_call


async def test_dynamic_mode_drives_a_tool_loop(style: str) -> None:
    """A dynamic script sees each request in neutral form and answers accordingly."""
    seen: list[tuple[str, list[str]]] = []

    async def script(req: FakeRequest) -> ScriptItem:
        await trio.lowlevel.checkpoint()  # async scripts are allowed
        results = req.tool_results()
        seen.append((req.last_user_text(), results))
        if not results:
            return reply(tool_calls=[tool_call("read_file", {"path": "a.py"}, id="c1")])
        return reply(f"the file says {results[0]}")

    history = [Message("user", "what is in a.py?")]
    async with open_fake_llm(None, script=script) as server:
        spec = make_spec(server, style)
        first = await collect(spec, simple_request(messages=tuple(history), tools=(READ_TOOL,), system="sys"))
        (call,) = ends(first)
        history += [
            Message("assistant", "", tool_calls=(ToolCall(call.id, call.name, call.arguments),)),
            Message("tool", "hello()", tool_call_id=call.id, name=call.name),
        ]
        second = await collect(spec, simple_request(messages=tuple(history), tools=(READ_TOOL,), system="sys"))
        transcript = server.requests[1].transcript()
    assert text_of(second) == "the file says hello()"
    assert seen == [("what is in a.py?", []), ("what is in a.py?", ["hello()"])]
    assert transcript[0] == ("system", "sys") and ("tool_call", "read_file") in transcript


async def test_exhausted_script_fails_loudly(autojump_clock: object) -> None:
    async with open_fake_llm(None, script=[reply("one")]) as server:
        spec = make_spec(server, "openai")
        assert text_of(await collect(spec)) == "one"
        with pytest.raises(ServerError, match="script exhausted"):
            await collect(spec)


async def test_push_records_and_unknown_routes() -> None:
    async with trio.open_nursery() as nursery:
        async with open_fake_llm(nursery) as server:
            server.push(reply("pushed"))
            assert text_of(await collect(make_spec(server, "ollama"))) == "pushed"
            # The client may return as soon as it has the last event; let the server's handler
            # finish sending before asking whether it sent the whole response.
            await trio.testing.wait_all_tasks_blocked()
            req = server.requests[0]
            assert (req.method, req.path, req.wire, req.model) == ("POST", "/api/chat", "ollama", "fake-model-1")
            assert req.json["messages"][-1]["content"] == "hello" and req.completed
            async with httpx.AsyncClient() as client:
                r = await client.post(server.base_url + "/v2/elsewhere", json={})
            assert r.status_code == 404 and "no route" in r.text
            assert len(server.requests) == 2
        nursery.cancel_scope.cancel()
