"""A hostile model stream ends as a tool error or one provider error line, and the session it
happened in stays whole: ``nyz run`` (a real subprocess) against the fake LLM sending raw
frames, then ``nyz run --continue`` on the same session.

Classes and vectors:

* deep JSON nesting in tool arguments (arrays, objects, mixed, one past the bound): a tool
  error the model sees, the turn goes on;
* deep JSON nesting in a stream record (OpenAI and Anthropic frames): one error line;
* a lone surrogate in tool arguments (escaped inside the arguments' JSON: a tool error naming
  it; escaped in the record itself: replaced) and in text (high, low, at the end): replaced;
* fields of the wrong type (``choices`` a string, a number, a list of strings; ``delta`` a
  string; ``tool_calls`` a string; ``usage.prompt_tokens`` a string): one error line naming
  no internal exception;
* controls: a real surrogate pair (an emoji) goes through; JSON at the bound parses
  (``tests/nyzhi/test_jsonbound.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio

from nyzhi.testing.cli import run_nyz
from nyzhi.testing.fake_llm import garbage, open_fake_llm, reply, tool_call

INTERNAL = ("Traceback", "RecursionError", "UnicodeEncodeError", "AttributeError", "TypeError",
            "KeyError")


def sse(data: object) -> bytes:
    body = data if isinstance(data, bytes) else json.dumps(data).encode()
    return b"data: " + body + b"\n\n"


def chunk(delta: dict, finish: str | None = None) -> dict:
    return {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def openai_stream(*records: bytes, finish: str = "stop") -> bytes:
    return (sse(chunk({"role": "assistant", "content": ""})) + b"".join(records)
            + sse(chunk({}, finish)) + b"data: [DONE]\n\n")


def raw_call(arguments_json_literal: bytes) -> bytes:
    """An OpenAI stream calling ``read`` whose arguments field is the JSON string literal
    given as is (so its escapes reach the decoder untouched)."""
    head = sse(chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                      "function": {"name": "read", "arguments": ""}}]}))
    body = sse(b'{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,'
               b'"function":{"arguments":' + arguments_json_literal + b'}}]}}]}')
    return openai_stream(head, body, finish="tool_calls")


def deep(n: int, kind: str) -> str:
    if kind == "array":
        return "[" * n + "]" * n
    if kind == "object":
        return '{"a":' * n + "1" + "}" * n
    return '[{"a":' * (n // 2) + "1" + "}]" * (n // 2)


def session_lines(home: Path) -> list[dict]:
    """Every line of the one session log, each parsed (the log is valid UTF-8 JSON lines)."""
    [log] = (home / ".local" / "share" / "nyzhi" / "sessions").glob("*.jsonl")
    text = log.read_bytes().decode("utf-8")  # strict: a lone surrogate could not be here
    return [json.loads(line) for line in text.splitlines() if line.strip()]


async def run_then_continue(workspace: Path, home: Path, configure, first, style="openai"):
    """``nyz run go`` answered by ``first`` (then a plain reply), then ``--continue``."""
    (workspace / "a.txt").write_text("hello\n")
    def script(request):
        users = [t for role, t in request.transcript() if role == "user"]
        if users[-1:] == ["again"]:
            return reply("resumed fine")
        return first if len(server.requests) == 1 else reply("after the tool")

    async with open_fake_llm(None, script=script) as server:
        configure(workspace, server.url_for(style))
        with trio.fail_after(60):
            proc = await run_nyz(workspace, home, "run", "go")
            again = await run_nyz(workspace, home, "run", "--continue", "again")
        return proc, again, server


def assert_whole(proc, again, server, home: Path) -> None:
    err = proc.stderr.decode()
    for name in INTERNAL:
        assert name not in err, err
    assert again.returncode == 0, again.stderr.decode()
    assert again.stdout.decode().strip().endswith("resumed fine")
    last = server.requests[-1].transcript()
    assert ("user", "go") in last and ("user", "again") in last  # the history came back
    session_lines(home)


@pytest.mark.parametrize("vector", ["array", "object", "mixed", "just-past"])
async def test_deep_tool_arguments_are_a_tool_error(workspace, home, configure, vector):
    body = '{"file_path": "a.txt", "x": ' + (
        deep(65, "array") if vector == "just-past" else deep(200_000, vector)) + "}"
    proc, again, server = await run_then_continue(
        workspace, home, configure, reply(tool_calls=[tool_call("read", body)]))
    assert proc.returncode == 0, proc.stderr.decode()
    assert "after the tool" in proc.stdout.decode()
    results = [t for role, t in server.requests[1].transcript() if role == "tool"]
    assert len(results) == 1 and "nested deeper than 64 levels" in results[0]
    assert_whole(proc, again, server, home)


DEEP_RECORDS = {
    "openai-delta": openai_stream(sse(b'{"id":"c","choices":[{"index":0,"delta":{"content":'
                                      + deep(200_000, "array").encode() + b"}}]}")),
    "openai-record": openai_stream(sse(deep(100_000, "object").encode())),
    "anthropic": (b"event: message_start\ndata: " + json.dumps(
        {"type": "message_start", "message": {"id": "m", "role": "assistant", "content": [],
                                              "usage": {"input_tokens": 1}}}).encode()
        + b"\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\","
        b"\"index\":0,\"delta\":" + deep(200_000, "mixed").encode() + b"}\n\n"),
}


@pytest.mark.parametrize("vector", list(DEEP_RECORDS))
async def test_a_deep_stream_record_is_one_error_line(workspace, home, configure, vector):
    style = "anthropic" if vector == "anthropic" else "openai"
    proc, again, server = await run_then_continue(
        workspace, home, configure, garbage(DEEP_RECORDS[vector]), style=style)
    err = proc.stderr.decode()
    assert proc.returncode == 1
    [line] = [ln for ln in err.splitlines() if "error" in ln]
    assert "nested deeper than 64 levels" in line
    assert_whole(proc, again, server, home)


async def test_lone_surrogate_escaped_in_tool_arguments_is_a_tool_error(
        workspace, home, configure):
    literal = rb'"{\"file_path\": \"a\\ud800.txt\"}"'  # the arguments' own JSON escapes it
    proc, again, server = await run_then_continue(workspace, home, configure,
                                                  garbage(raw_call(literal)))
    assert proc.returncode == 0, proc.stderr.decode()
    results = [t for role, t in server.requests[1].transcript() if role == "tool"]
    assert len(results) == 1 and "lone surrogate (\\ud800)" in results[0]
    assert_whole(proc, again, server, home)


@pytest.mark.parametrize("literal", [rb'"{\"file_path\": \"a\udc00.txt\"}"',
                                     rb'"{\"file_path\": \"\ud83d\"}"'])
async def test_lone_surrogate_in_the_record_of_tool_arguments_is_replaced(
        workspace, home, configure, literal):
    proc, again, server = await run_then_continue(workspace, home, configure,
                                                  garbage(raw_call(literal)))
    assert proc.returncode == 0, proc.stderr.decode()
    results = [t for role, t in server.requests[1].transcript() if role == "tool"]
    assert len(results) == 1 and "\ufffd" in results[0]  # the path shown, replaced: not found
    assert_whole(proc, again, server, home)


@pytest.mark.parametrize("content", [rb'"hi \ud800 there"', rb'"hi \udfff there"',
                                     rb'"ends high \udbff"'])
async def test_lone_surrogate_in_text_is_replaced(workspace, home, configure, content):
    record = sse(b'{"id":"c","choices":[{"index":0,"delta":{"content":' + content + b"}}]}")
    proc, again, server = await run_then_continue(workspace, home, configure,
                                                  garbage(openai_stream(record)))
    assert proc.returncode == 0, proc.stderr.decode()
    assert "\ufffd" in proc.stdout.decode()
    assert_whole(proc, again, server, home)
    texts = [json.dumps(line, ensure_ascii=False) for line in session_lines(home)]
    assert any("\ufffd" in t for t in texts)


WRONG_TYPES = {
    "choices-str": ({"id": "c", "choices": "oops"}, "'choices' is str, not a list"),
    "choices-number": ({"id": "c", "choices": 7}, "'choices' is int, not a list"),
    "choices-strings": ({"id": "c", "choices": ["a", "b"]},
                        "an element of 'choices' is str, not an object"),
    "delta-str": ({"id": "c", "choices": [{"index": 0, "delta": "text"}]},
                  "a field missing or of the wrong type"),
    "tool-calls-str": ({"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": "x"}}]},
                       "'tool_calls' is str, not a list"),
    "usage-str": ({"id": "c", "choices": [], "usage": {"prompt_tokens": "12",
                                                        "completion_tokens": 1}},
                  "a field missing or of the wrong type"),
}


@pytest.mark.parametrize("vector", list(WRONG_TYPES))
async def test_a_field_of_the_wrong_type_is_one_error_line(workspace, home, configure, vector):
    record, reason = WRONG_TYPES[vector]
    proc, again, server = await run_then_continue(
        workspace, home, configure, garbage(openai_stream(sse(record))))
    err = proc.stderr.decode()
    assert proc.returncode == 1
    [line] = [ln for ln in err.splitlines() if "error" in ln]
    assert "the provider sent a stream record of the wrong shape" in line and reason in line
    assert_whole(proc, again, server, home)


async def test_control_an_escaped_emoji_in_arguments_goes_through(workspace, home, configure):
    (workspace / "a\U0001f600.txt").write_text("smile\n")
    literal = rb'"{\"file_path\": \"a\\ud83d\\ude00.txt\"}"'  # a pair, escaped: one emoji
    proc, again, server = await run_then_continue(workspace, home, configure,
                                                  garbage(raw_call(literal)))
    assert proc.returncode == 0, proc.stderr.decode()
    results = [t for role, t in server.requests[1].transcript() if role == "tool"]
    assert len(results) == 1 and "smile" in results[0]
    assert_whole(proc, again, server, home)


@pytest.mark.parametrize("extra, answer, key", [
    ("[agent.stream]\nmax_answer_chars = 1000\n", reply("y" * 50_000, chunk_size=100),
     "max_answer_chars"),
    ("[agent.stream]\nmax_tool_argument_chars = 500\n",
     reply(tool_calls=[tool_call("read", {"file_path": "z" * 50_000})], chunk_size=100),
     "max_tool_argument_chars"),
])
async def test_an_answer_past_the_configured_bound_is_one_line(workspace, home, configure,
                                                              extra, answer, key):
    (workspace / "a.txt").write_text("hello\n")

    def script(request):
        users = [t for role, t in request.transcript() if role == "user"]
        return reply("resumed fine") if users[-1:] == ["again"] else answer

    async with open_fake_llm(None, script=script) as server:
        configure(workspace, server.url_for("openai"), extra=extra)
        with trio.fail_after(60):
            proc = await run_nyz(workspace, home, "run", "go")
            again = await run_nyz(workspace, home, "run", "--continue", "again")
    assert proc.returncode == 1
    [line] = [ln for ln in proc.stderr.decode().splitlines() if "error" in ln]
    assert f"[agent.stream] {key}" in line and "Traceback" not in proc.stderr.decode()
    assert again.returncode == 0 and again.stdout.decode().strip() == "resumed fine"
