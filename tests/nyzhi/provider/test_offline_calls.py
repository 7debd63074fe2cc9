"""The offline model's prompt and calls (issue 33 item 1): only offered tools are named, calls
go as grammar-constrained JSON and come back as real tool calls, entities are decoded. The
real model is exercised in tests/nyzhi/test_local_model.py (slow set)."""

from __future__ import annotations

import json
import re

from provider_helpers import collect, make_spec, simple_request

from nyzhi.provider.llama_cpp import EntityDecoder, LlamaCppDecoder
from nyzhi.provider.offline_model import OFFLINE_MODEL, OFFLINE_TOOLS
from nyzhi.provider.types import Message, TextDelta, ToolCallEnd, ToolSchema
from nyzhi.testing.cli import json_lines, run_nyz
from nyzhi.testing.fake_llm import open_fake_llm, reply


def _tool(name: str) -> ToolSchema:
    return ToolSchema(name, f"The {name} tool. More words.",
                      {"type": "object", "properties": {"path": {"type": "string"}},
                       "required": ["path"]})


async def _sent(request) -> dict:
    async with open_fake_llm(None, script=[reply("ok")]) as server:
        await collect(make_spec(server, "llama-cpp", key=None), request)
        (req,) = server.requests
    return req.json


async def test_an_offline_request_asks_for_json_constrained_to_the_offered_tools() -> None:
    everything = tuple(_tool(n) for n in ("read", "bash", "list_dir", "team_create", "grep"))
    body = await _sent(simple_request(tools=everything, model=OFFLINE_MODEL))
    assert "tools" not in body and body["stream"] is False
    schema = body["response_format"]["schema"]
    assert body["response_format"]["type"] == "json_object"
    called = [b["properties"]["tool"]["const"] for b in schema["anyOf"] if "tool" in b["properties"]]
    assert called == ["read", "list_dir", "grep"]
    assert {"answer"} in [set(b["properties"]) for b in schema["anyOf"]]
    for branch in schema["anyOf"]:
        if "tool" in branch["properties"]:
            assert branch["properties"]["arguments"]["required"] == ["path"]
    system = body["messages"][0]["content"]
    assert "bash" not in system and "team_create" not in system
    assert "- list_dir(path): The list_dir tool." in system


async def test_after_a_tool_result_only_an_answer_is_allowed_and_the_result_is_shown() -> None:
    from nyzhi.provider.types import ToolCall

    messages = (
        Message("user", "list the files here"),
        Message("assistant", "", tool_calls=(ToolCall("c1", "list_dir", '{"path": "."}'),)),
        Message("tool", "a.py\nb.py", tool_call_id="c1", name="list_dir"),
    )
    request = simple_request(messages=messages, tools=(_tool("list_dir"),), model=OFFLINE_MODEL)
    body = await _sent(request)
    assert body["response_format"]["schema"]["required"] == ["answer"]
    texts = [m["content"] for m in body["messages"]]
    assert '{"tool": "list_dir", "arguments": {"path": "."}}' in texts
    assert any(t.startswith("Result of list_dir:") and "a.py" in t for t in texts)


def _complete(content: str, model: str = OFFLINE_MODEL) -> str:
    return json.dumps({"model": model, "choices": [
        {"index": 0, "message": {"role": "assistant", "content": content},
         "finish_reason": "stop"}]})


def test_a_json_call_comes_back_as_a_tool_call_and_an_answer_as_text() -> None:
    events = LlamaCppDecoder().feed("", _complete('{"tool": "list_dir", "arguments": {"path": "."}}'))
    (end,) = [e for e in events if isinstance(e, ToolCallEnd)]
    assert end.name == "list_dir" and json.loads(end.arguments) == {"path": "."}
    events = LlamaCppDecoder().feed("", _complete('{"answer": "it&#39;s &lt;b&gt;"}'))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "it's <b>"
    # another model's JSON is its answer, as it wrote it
    other = '{"answer": "x"}'
    events = LlamaCppDecoder().feed("", _complete(other, model="qwen"))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == other


def test_entities_split_across_streamed_deltas_are_decoded() -> None:
    decoder = EntityDecoder()
    parts = ["it&", "#3", "9;s a &amp", "; b &", "lt;c&gt;", " & done &"]
    text = "".join(decoder.feed(p) for p in parts) + decoder.flush()
    assert text == "it's a & b <c> & done &"
    stream = LlamaCppDecoder()
    out = []
    for chunk in ("it&#3", "9;s"):
        data = json.dumps({"choices": [{"index": 0, "delta": {"content": chunk}}]})
        out += stream.feed("", f"data: {data}")
    data = json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    out += stream.feed("", f"data: {data}")
    assert "".join(e.text for e in out if isinstance(e, TextDelta)) == "it's"


async def test_the_offline_models_prompt_names_only_the_tools_it_is_offered(
    workspace, home, configure
) -> None:
    """The agent is fenced to OFFLINE_TOOLS: the compact prompt (guidance and deferred-tool
    list) and the request name no other tool."""
    async with open_fake_llm(None, script=[reply("Hello!")]) as server:
        configure(workspace, server.url_for("llama-cpp"), api_style="llama-cpp")
        config = workspace / ".nyzhi" / "config.toml"
        config.write_text(config.read_text().replace('"fake-model-1"', f'"{OFFLINE_MODEL}"'))
        proc = await run_nyz(workspace, home, "run", "--output-format", "stream-json", "hi")
        assert proc.returncode == 0, proc.stderr.decode()
        (request,) = server.requests
    assert json_lines(proc.stdout)[-1]["result"] == "Hello!"
    body = request.json
    system = body["messages"][0]["content"]
    for name in ("tool_search", "team_create", "git_branch", "bash", "multi_edit",
                 "notepad_read", "spawn_agent", "todo_write", "fuzzy_find"):
        assert not re.search(rf"\b{name}\b", system), f"{name} named in the offline prompt"
    offered = [b["properties"]["tool"]["const"]
               for b in body["response_format"]["schema"]["anyOf"] if "tool" in b["properties"]]
    assert offered and set(offered) <= set(OFFLINE_TOOLS)


def test_an_answer_cut_by_the_output_cap_shows_its_text_not_its_json() -> None:
    from nyzhi.provider.offline_calls import decode_reply

    message = {"content": '{"answer": "Hello! I can look at \\"src\\" and the fi'}
    decode_reply(message)
    assert message["content"] == 'Hello! I can look at "src" and the fi'
    half_escape = {"content": '{ "answer": "a line\\nand \\u00'}
    decode_reply(half_escape)
    assert half_escape["content"] == "a line\nand "
    broken_call = {"content": '{"tool": "read", "arguments": {"file_path": "/a/very/lo'}
    decode_reply(broken_call)
    assert broken_call["content"].startswith('{"tool"')  # not an answer: left as it came
