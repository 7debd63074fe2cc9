"""The JSON-RPC layer of ``nyz acp`` in process: malformed input gets the spec's error codes
with one line naming what is wrong, and the agent goes on answering."""

from __future__ import annotations

import json

import pytest
import trio
import trio.testing

from nyzhi.acp import schema as s
from nyzhi.acp.agent import AcpAgent


class Wire:
    """The client's ends of an in-process connection to an ``AcpAgent``."""

    def __init__(self, to_agent: trio.abc.SendStream, from_agent: trio.abc.ReceiveStream):
        self.to_agent = to_agent
        self.from_agent = from_agent
        self.buffer = bytearray()

    async def send(self, raw: bytes | dict) -> None:
        data = raw if isinstance(raw, bytes) else json.dumps(raw).encode()
        await self.to_agent.send_all(data + b"\n")

    async def receive(self) -> dict:
        with trio.fail_after(10):
            while b"\n" not in self.buffer:
                chunk = await self.from_agent.receive_some(65536)
                assert chunk, "the agent closed the connection"
                self.buffer += chunk
        end = self.buffer.index(b"\n")
        line = bytes(self.buffer[:end])
        del self.buffer[: end + 1]
        return json.loads(line)


@pytest.fixture
async def wire(nursery):
    client_out, agent_in = trio.testing.memory_stream_one_way_pair()
    agent_out, client_in = trio.testing.memory_stream_one_way_pair()
    nursery.start_soon(AcpAgent().serve, agent_out, agent_in)
    yield Wire(client_out, client_in)
    await client_out.aclose()


def request(method: str, params, request_id=1) -> dict:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


async def test_bad_json_is_a_parse_error_and_the_agent_goes_on(wire):
    await wire.send(b'{"jsonrpc": "2.0", "id": 1, "method": ')
    error = await wire.receive()
    assert error["id"] is None and error["error"]["code"] == -32700
    assert "\n" not in error["error"]["message"]
    await wire.send(request("initialize", {"protocolVersion": 1}, 2))
    answer = await wire.receive()
    assert answer["id"] == 2 and answer["result"]["protocolVersion"] == 1


@pytest.mark.parametrize("raw, code, words", [
    (b"[1, 2]", -32600, "not a JSON-RPC 2.0 object"),
    (b'{"id": 3, "method": "initialize"}', -32600, "not a JSON-RPC 2.0 object"),
    (b'{"jsonrpc": "2.0", "id": 3, "method": 7}', -32600, "'method' must be a string"),
    (b'{"jsonrpc": "2.0", "id": true, "method": "initialize"}', -32600, "'id'"),
    (b'{"jsonrpc": "2.0", "id": 3, "method": "session/teleport"}', -32601, "session/teleport"),
])
async def test_invalid_requests(wire, raw, code, words):
    await wire.send(raw)
    error = (await wire.receive())["error"]
    assert error["code"] == code and words in error["message"]


@pytest.mark.parametrize("method, params, words", [
    ("initialize", {}, "initialize params: 'protocolVersion' is missing"),
    ("initialize", {"protocolVersion": "1"}, "'protocolVersion' must be an integer"),
    ("initialize", {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": "yes"}}},
     "'clientCapabilities.fs.readTextFile' must be a boolean"),
    ("session/new", {"mcpServers": []}, "session/new params: 'cwd' is missing"),
    ("session/new", {"cwd": "/", "mcpServers": [{"command": "x"}]}, "'mcpServers[0].name' is missing"),
    ("session/prompt", {"sessionId": "a", "prompt": "hi"}, "'prompt' must be an array"),
    ("session/prompt", {"sessionId": "a", "prompt": [{"text": "hi"}]}, "'prompt[0].type' is missing"),
    ("session/load", None, "session/load params: 'sessionId' is missing"),
    ("session/set_mode", {"sessionId": "a"}, "'modeId' is missing"),
])
async def test_wrong_params_name_the_field(wire, method, params, words):
    await wire.send(request(method, params, 9))
    answer = await wire.receive()
    assert answer["id"] == 9 and answer["error"]["code"] == -32602
    assert words in answer["error"]["message"]


async def test_unknown_session_and_unknown_notification(wire):
    await wire.send({"jsonrpc": "2.0", "method": "session/whatever", "params": {}})  # ignored
    await wire.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "x"}})
    await wire.send(request("session/prompt", {"sessionId": "x", "prompt": []}, 4))
    answer = await wire.receive()  # the notifications produced nothing
    assert answer["id"] == 4 and answer["error"]["code"] == -32002


async def test_version_negotiation(wire):
    await wire.send(request("initialize", {"protocolVersion": 7}, 1))
    assert (await wire.receive())["result"]["protocolVersion"] == s.PROTOCOL_VERSION
    await wire.send(request("initialize", {"protocolVersion": 0}, 2))
    assert (await wire.receive())["result"]["protocolVersion"] == s.PROTOCOL_VERSION


def test_updates_are_written_in_the_spec_s_shape():
    note = s.write(s.SessionNotification("sess", s.ToolCallUpdate(
        tool_call_id="c.1", status="completed",
        content=(s.ToolCallContent(content=s.TextContent("ok")),))))
    assert note == {"sessionId": "sess", "update": {
        "sessionUpdate": "tool_call_update", "toolCallId": "c.1", "status": "completed",
        "content": [{"type": "content", "content": {"text": "ok", "type": "text"}}]}}


async def test_a_session_left_in_plan_mode_loads_and_resumes_in_plan_mode(
        wire, workspace, home, configure):
    """Issue 56: plan mode came back as off after session/load."""
    from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime
    from nyzhi.testing.fake_llm import open_fake_llm, reply

    async with open_fake_llm(script=[reply("planned")]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            rt.knowledge.set_plan_mode(True)
            await (await rt.submit("plan the change")).wait()
            session_id = rt.session_id
        await wire.send(request("initialize", {"protocolVersion": 1}, 1))
        await wire.receive()
        for n, method in ((2, "session/load"), (3, "session/resume")):
            await wire.send(request(method, {"sessionId": session_id, "cwd": str(workspace),
                                             "mcpServers": []}, n))
            while (answer := await wire.receive()).get("id") != n:
                pass  # the replay's updates
            assert answer["result"]["modes"]["currentModeId"] == "plan", answer
            await wire.send(request("session/close", {"sessionId": session_id}, 10 + n))
            while (await wire.receive()).get("id") != 10 + n:
                pass
