"""MCP elicitation (issue 53 item 2): a real server (the SDK's MCPServer, ``helper_server.py``)
asks for a form mid-call. Interactive, every field is a ``user_question`` through the one
ask-user path, answered by the front end; headless it is declined unless ``[mcp] elicitation
= "defaults"``, which accepts a form whose every required field has a default. Before this,
the SDK refused every elicitation with -32600."""

from __future__ import annotations

import json

import pytest
import trio
from _mcp_servers import toml_server
from test_mcp_pool import _connected
from test_mcp_run_e2e import events, nyz

from nyzhi.core import events as ev
from nyzhi.core.runtime.mcp.elicit import coerce, fill_form, schema_defaults
from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call

ALLOWED = 'allow_tools = ["mcp__helper__book", "mcp__helper__sign_up"]'
DEFAULTS = {"table_for": 2, "terrace": False, "time": "19:00"}


def helper(helper_server: list[str]) -> str:
    return toml_server("helper", helper_server[0], [*helper_server[1:], "--elicit"], ALLOWED)


async def run_calls(workspace, home, configure, extra: str, *tools: str) -> dict[str, str]:
    calls = [tool_call(f"mcp__helper__{name}", {}) for name in tools]
    async with open_fake_llm(script=[reply(tool_calls=calls), reply("done")]) as server:
        configure(workspace, server.url_for("openai"), extra=extra)
        proc = await nyz(workspace, home, "run", "--output-format", "stream-json", "go")
    assert proc.returncode == 0, proc.stderr.decode()
    return {e["name"].rsplit("__", 1)[-1]: e["output"]
            for e in events(proc.stdout) if e["type"] == "tool_done"}


async def test_headless_a_form_is_declined(workspace, home, configure, helper_server):
    done = await run_calls(workspace, home, configure, helper(helper_server), "book")
    assert done["book"] == "decline"  # not -32600: the client offers elicitation and says no


async def test_headless_with_defaults_the_schema_defaults_are_sent(workspace, home, configure,
                                                                   helper_server):
    extra = '[mcp]\nelicitation = "defaults"\n' + helper(helper_server)
    done = await run_calls(workspace, home, configure, extra, "book", "sign_up")
    assert done["book"] == f"accept {json.dumps(DEFAULTS, sort_keys=True)}"
    assert done["sign_up"] == "decline"  # a required email has no default: nobody to ask


async def answering(rt, answers: dict[str, list[str]], asked: list[ev.UserQuestion]) -> None:
    """The front end: answers each field's question with the next answer listed under the
    first key found in the question."""
    async with rt.subscribe() as channel:
        async for event in channel:
            if isinstance(event, ev.UserQuestion):
                asked.append(event)
                key = next(k for k in answers if k in event.question.lower())
                await rt.answer_question(event.request_id, answers[key].pop(0))


@pytest.mark.parametrize(("answers", "expected"), [
    ({"how many": ["4"], "time": ["(default)"], "terrace": ["yes"]},
     'accept {"table_for": 4, "terrace": true, "time": "19:00"}'),
    # "lots" is no integer: the field is asked again and 3 taken; "" takes the default
    ({"how many": ["lots", "3"], "time": ["20:30"], "terrace": [""]},
     'accept {"table_for": 3, "terrace": false, "time": "20:30"}'),
    ({"how many": ["(decline)"]}, "decline"),
    ({"how many": ["__cancelled__"]}, "cancel"),  # the question dismissed
])
async def test_interactive_each_field_is_asked_through_the_front_end(
        workspace, configure, helper_server, answers, expected):
    retried = "lots" in answers.get("how many", [])
    script = [reply(tool_calls=[tool_call("mcp__helper__book", {})]), reply("done")]
    asked: list[ev.UserQuestion] = []
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"), extra=helper(helper_server))
        async with open_runtime(RuntimeOptions(cwd=workspace, interactive=True)) as rt:
            await _connected(rt, "helper")
            async with trio.open_nursery() as nursery:
                nursery.start_soon(answering, rt, answers, asked)
                with trio.fail_after(120):
                    handle = await rt.submit("book a table")
                    await handle.wait()
                nursery.cancel_scope.cancel()
        result = server.requests[1].tool_results()[0]
    assert result == expected
    assert "MCP server 'helper' asks: Book a table?" in asked[0].question
    assert any(o["label"] == "(default)" and o.get("description") == "2"
               for o in asked[0].options)
    if retried:
        assert "(that was not an integer; try again)" in asked[1].question


def test_coercion_follows_the_field_schema():
    assert coerce({"type": "integer", "minimum": 1, "maximum": 9}, " 4 ") == (True, 4)
    assert coerce({"type": "integer", "maximum": 9}, "12")[0] is False
    assert coerce({"type": "number"}, "2.5") == (True, 2.5)
    assert coerce({"type": "boolean"}, "Yes") == (True, True)
    assert coerce({"type": "boolean"}, "perhaps")[0] is False
    assert coerce({"type": "string", "enum": ["a", "b"]}, "c") == (False, "one of a, b")
    assert coerce({"type": "string", "oneOf": [{"const": "x"}]}, "x") == (True, "x")
    assert coerce({"type": "array", "items": {"enum": ["r", "g"]}}, "r, g") == (True, ["r", "g"])
    assert coerce({"type": "string", "maxLength": 3}, "abcd")[0] is False
    assert coerce({"type": "string"}, "x" * 5000)[0] is False  # bounded


async def test_headless_rules_without_a_person():
    schema = {"properties": {"a": {"type": "string", "default": "x"},
                             "b": {"type": "integer"}}, "required": ["a"]}
    assert schema_defaults(schema) == {"a": "x"}
    assert await fill_form(None, "defaults", "s", "m", schema) == ("accept", {"a": "x"})
    assert await fill_form(None, "decline", "s", "m", schema) == ("decline", None)
    schema["required"] = ["a", "b"]
    assert await fill_form(None, "defaults", "s", "m", schema) == ("decline", None)
    huge = {"properties": {f"f{i}": {"type": "string", "default": ""} for i in range(40)}}
    assert await fill_form(None, "defaults", "s", "m", huge) == ("decline", None)  # bounded


async def test_what_a_server_shows_is_bounded():
    """A server's message, titles and choices are cut before they reach a front end."""
    from nyzhi.core.runtime.mcp.elicit import MAX_TEXT

    asked: list[tuple[str, list]] = []

    async def ask(question, options, _custom):
        asked.append((question, options))
        return "(decline)"

    schema = {"properties": {"f": {"type": "string", "title": "Z" * 50_000,
                                   "enum": ["x" * 50_000]}}}
    assert await fill_form(ask, "decline", "s", "Q" * 50_000, schema) == ("decline", None)
    question, options = asked[0]
    assert question.count("Q") == MAX_TEXT and question.count("Z") == MAX_TEXT
    assert all(len(o["label"]) <= MAX_TEXT for o in options)
