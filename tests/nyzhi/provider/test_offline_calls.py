"""The offline model's prompt and calls (issue 33 item 1): only offered tools are named, a
call is decided under a grammar in the model's own format and comes back as a real tool call,
no call is followed by the answer, entities are decoded. The real model is exercised in
tests/nyzhi/test_local_model.py (slow set)."""

from __future__ import annotations

import json
import re

from provider_helpers import collect, make_spec, simple_request

from nyzhi.provider.llama_cpp import EntityDecoder, LlamaCppDecoder
from nyzhi.provider.offline_model import OFFLINE_MODEL, OFFLINE_TOOLS
from nyzhi.provider.types import Message, TextDelta, ToolCallEnd, ToolSchema
from nyzhi.testing.cli import json_lines, run_nyz
from nyzhi.testing.fake_llm import garbage, open_fake_llm, reply


def _tool(name: str) -> ToolSchema:
    return ToolSchema(name, f"The {name} tool. More words.",
                      {"type": "object", "properties": {"path": {"type": "string"}},
                       "required": ["path"]})


async def _sent(request) -> dict:
    async with open_fake_llm(None, script=[reply("ok")]) as server:
        await collect(make_spec(server, "llama-cpp", key=None), request)
        (req,) = server.requests
    return req.json


def _offered(body: dict) -> list[str]:
    """The tools a decision's grammar lets the model call, in order."""
    return re.findall(r'^call\d+ ::= "\{\\"name\\": \\"(\w+)', body["grammar"], re.M)


async def test_an_offline_request_is_a_decision_in_the_models_own_call_format() -> None:
    everything = tuple(_tool(n) for n in ("read", "bash", "list_dir", "team_create", "grep"))
    body = await _sent(simple_request(tools=everything, model=OFFLINE_MODEL))
    assert "tools" not in body and "response_format" not in body and body["stream"] is False
    assert _offered(body) == ["list_dir", "read", "grep"]  # OFFLINE_TOOLS' order
    assert body["grammar"].startswith('root ::= "<tool_call>[" call? "]</tool_call>"')
    system = body["messages"][0]["content"]
    listed = json.loads(system.split("<tools>", 1)[1].split("</tools>", 1)[0])
    assert [t["name"] for t in listed] == ["list_dir", "read", "grep"]
    assert "bash" not in system and "team_create" not in system
    # a path argument is described as the grammar allows it: '.' for here
    assert "'.' for the files here" in listed[0]["parameters"]["properties"]["path"]["description"]
    assert body["messages"][1:] == [{"role": "user", "content": "hello"}]


def test_the_grammar_holds_paths_to_the_working_directory_and_files_to_those_named() -> None:
    from nyzhi.provider.offline_calls import call_grammar, named_files

    assert named_files("read README.md, then src/app.py and notes.txt.") == [
        "README.md", "src/app.py", "notes.txt"]
    assert named_files("list the files here") == []
    assert named_files("read ../../etc/passwd or /etc/shadow") == []  # nothing outside
    read = {"name": "read", "parameters": {"type": "object", "required": ["file_path"],
            "properties": {"file_path": {"type": "string"}, "limit": {"type": "integer"}}}}
    listing = {"name": "list_dir", "parameters": {"type": "object", "required": ["path"],
               "properties": {"path": {"type": "string"}}}}
    grammar = call_grammar([listing, read], ["README.md"])
    rules = dict(line.split(" ::= ", 1) for line in grammar.splitlines() if " ::= " in line)
    assert rules["file"] == '"\\"README.md\\""'  # only the file the user named
    assert rules["dir"].startswith('"\\"." ("/"')  # '.', './src': under the working directory
    assert ' "\\"path\\": " dir ' in rules["call0"]
    assert '(", " "\\"limit\\": " integer)?' in rules["call1"]  # optional, after the required
    anything = dict(line.split(" ::= ", 1) for line in call_grammar([read]).splitlines()
                    if " ::= " in line)
    assert anything["file"].startswith('"\\"" [A-Za-z0-9_]')  # relative: no / or ~ first


async def test_after_a_tool_result_the_answer_is_asked_for_with_the_result_shown() -> None:
    from nyzhi.provider.types import ToolCall

    messages = (
        Message("user", "list the files here"),
        Message("assistant", "", tool_calls=(ToolCall("c1", "list_dir", '{"path": "."}'),)),
        Message("tool", "a.py\nb.py", tool_call_id="c1", name="list_dir"),
    )
    request = simple_request(messages=messages, tools=(_tool("list_dir"),), model=OFFLINE_MODEL)
    body = await _sent(request)
    assert "grammar" not in body and "tools" not in body and body["stream"] is True
    texts = [m["content"] for m in body["messages"]]
    assert "list the files" in texts[0]  # the answer prompt says what the model can do
    assert texts[1:] == ["list the files here", "Result of list_dir:\na.py\nb.py"]


def _complete(content: str, model: str = OFFLINE_MODEL) -> str:
    return json.dumps({"model": model, "choices": [
        {"index": 0, "message": {"role": "assistant", "content": content},
         "finish_reason": "stop"}]})


def test_a_decision_comes_back_as_a_tool_call_or_as_a_follow_up() -> None:
    decoder = LlamaCppDecoder()
    call = '<tool_call>[{"name": "list_dir", "arguments": {"path": "."}}]</tool_call>'
    events = decoder.feed("", _complete(call)) + decoder.finish()
    (end,) = [e for e in events if isinstance(e, ToolCallEnd)]
    assert end.name == "list_dir" and json.loads(end.arguments) == {"path": "."}
    assert events[-1].reason == "tool_use" and not decoder.follow_up
    none = LlamaCppDecoder()
    assert none.feed("", _complete("<tool_call>[]</tool_call>")) == []
    assert none.follow_up and not none.done
    # another model's text is its answer, as it wrote it
    other = LlamaCppDecoder()
    events = other.feed("", _complete("<tool_call>[]</tool_call>", model="qwen"))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "<tool_call>[]</tool_call>"
    assert not other.follow_up


async def test_no_call_is_followed_by_the_answer_in_a_second_request() -> None:
    """The provider sends the answer request when the decision made no call, and streams its
    text as the reply; the decision itself shows nothing."""
    decision = _complete("<tool_call>[]</tool_call>").encode() + b"\n"
    request = simple_request(messages=(Message("user", "hello, what can you do?"),),
                             tools=(_tool("list_dir"),), model=OFFLINE_MODEL)
    async with open_fake_llm(None, script=[garbage(decision), reply("I can list files.")]) as srv:
        events = await collect(make_spec(srv, "llama-cpp", key=None), request)
        first, second = srv.requests
    assert "grammar" in first.json and "grammar" not in second.json
    assert second.json["stream"] is True
    assert second.json["messages"][-1] == {"role": "user", "content": "hello, what can you do?"}
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "I can list files."
    assert not [e for e in events if isinstance(e, ToolCallEnd)]


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
    offered = _offered(body)
    assert offered and set(offered) <= set(OFFLINE_TOOLS)
