"""The fake LLM speaks each wire as the provider documents it (issue 55): every scripted
stream (text, tool calls, parallel calls, thinking, a cut-off answer, usage, the quirks, an
error inside the stream) goes through the official ``openai`` and ``anthropic`` SDKs, over
real loopback HTTP to ``open_fake_llm``, two ways:

* strictly: each SSE event is validated against the SDK's own pydantic event union (the
  documented shapes, required fields included), except the quirk's deliberately unknown
  event types, which the real providers may add at any time;
* as an application uses it: the SDK's stream helper (``responses.stream()``,
  ``messages.stream()``) consumes the stream and its final object holds what was scripted.

The SDKs are test-only dependencies (``pip install -e '.[dev]'``; ``make test`` installs them).
"""

from __future__ import annotations

import json

import httpx
import pytest
import trio

from nyzhi.testing.fake_llm import FakeUsage, open_fake_llm, reply, stream_error, tool_call

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

SCRIPTS = {
    "text": reply("Hello there, the answer is 42."),
    "empty": reply(""),
    "tool_call": reply(tool_calls=[tool_call("read", {"file_path": "a.txt"})]),
    "parallel_calls": reply(tool_calls=[tool_call("read", {"file_path": "a.txt"}),
                                        tool_call("glob", {"pattern": "**/*.py"})]),
    "text_and_call": reply("Let me look.", tool_calls=[tool_call("grep", {"pattern": "x"})]),
    "thinking": reply("It is 4.", thinking="Two plus two is four, surely."),
    "max_tokens": reply("This answer was cut", stop="max_tokens"),
    "usage": reply("counted", usage=FakeUsage(input_tokens=1200, output_tokens=34,
                                              cache_read_tokens=800, thinking_tokens=5)),
    "unknown_events": reply("still understood", unknown_events=True),
}
UNKNOWN = {"response.mystery.event", "mystery_event"}  # the quirk's new event types


def _unknown(event: dict, skip: set[str]) -> bool:
    """One of the quirk's deliberately unknown events (a new event or delta type, which the
    providers say they may add at any time and a client must pass over)."""
    delta = event.get("delta")
    return event.get("type") in skip or (
        isinstance(delta, dict) and str(delta.get("type", "")).startswith("mystery"))


def _events(body: bytes) -> list[dict]:
    """The JSON data of each SSE event, with its ``event:`` name checked against its type."""
    found = []
    for block in body.decode().split("\n\n"):
        lines = [ln for ln in block.splitlines() if ln]
        if not lines:
            continue
        name = next((ln[7:] for ln in lines if ln.startswith("event: ")), None)
        data = json.loads("".join(ln[6:] for ln in lines if ln.startswith("data: ")))
        assert name is None or name == data.get("type"), (name, data)
        found.append(data)
    return found


async def _raw(url: str, path: str, body: dict) -> list[dict]:
    async with httpx.AsyncClient(timeout=30, trust_env=False) as client:
        answer = await client.post(url + path, json=body,
                                   headers={"authorization": "Bearer sk-test",
                                            "x-api-key": "sk-test"})
    assert answer.status_code == 200, answer.text
    return _events(answer.content)


def _strict(union, events: list[dict], skip: set[str]) -> list:
    """Each event validated by the SDK's model for its ``type`` (a member of the SDK's event
    ``union``): an unknown type, a missing or wrong-typed field fails here."""
    import typing

    members = typing.get_args(typing.get_args(union)[0])
    by_type = {typing.get_args(m.model_fields["type"].annotation)[0]: m for m in members}
    parsed = []
    for event in events:
        kind = event.get("type")
        if _unknown(event, skip):
            continue
        assert kind in by_type, f"an event type the SDK does not know: {kind!r}"
        parsed.append(by_type[kind].model_validate(event))  # raises on what the SDK rejects
    return parsed


# ---- OpenAI Responses ----------------------------------------------------------------------


def _responses_sdk(url: str):
    client = openai.OpenAI(base_url=url, api_key="sk-test", max_retries=0)
    with client.responses.stream(model="fake-model-1", input="hi") as stream:
        events = list(stream)
        # the helper's final response needs response.completed; a cut-off answer ends with
        # response.incomplete (as the API sends it), whose response is the final one
        final = (stream.get_final_response() if events[-1].type == "response.completed"
                 else getattr(events[-1], "response", events[-1]))
    return [e.type for e in events], final


@pytest.mark.parametrize("name", sorted(SCRIPTS))
async def test_the_openai_sdk_accepts_every_responses_stream(name):
    from openai.types.responses import ResponseStreamEvent

    script = SCRIPTS[name]
    async with open_fake_llm(script=[script, script]) as server:
        url = server.url_for("openai-responses")
        raw = await _raw(url, "/responses", {"model": "fake-model-1", "input": "hi",
                                              "stream": True})
        types, final = await trio.to_thread.run_sync(_responses_sdk, url)
    parsed = _strict(ResponseStreamEvent, raw, UNKNOWN)
    assert [e.sequence_number for e in parsed] == sorted({e.sequence_number for e in parsed})
    assert types[0] == "response.created"
    assert types[-1] == ("response.incomplete" if script.stop == "max_tokens"
                         else "response.completed")
    assert final.output_text == script.text
    calls = [item for item in final.output if item.type == "function_call"]
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [
        (c.name, c.arguments) for c in script.tool_calls]
    if script.thinking:
        [reasoning] = [item for item in final.output if item.type == "reasoning"]
        assert reasoning.summary[0].text == script.thinking
    if script.text:
        [message] = [item for item in final.output if item.type == "message"]
        assert message.status == "completed" and message.content[0].text == script.text
    if name == "usage":
        assert final.usage.input_tokens == 2000 and final.usage.output_tokens == 34
        assert final.usage.input_tokens_details.cached_tokens == 800


async def test_the_openai_sdk_reads_an_error_in_the_stream_as_its_error_event():
    fault = stream_error("Overloaded", after_frames=3, reply=reply("partial answer"))
    async with open_fake_llm(script=[fault, fault]) as server:
        url = server.url_for("openai-responses")
        raw = await _raw(url, "/responses", {"model": "fake-model-1", "input": "hi",
                                              "stream": True})
        types, error = await trio.to_thread.run_sync(_responses_sdk, url)
    from openai.types.responses import ResponseStreamEvent

    parsed = _strict(ResponseStreamEvent, raw, set())
    assert [e.sequence_number for e in parsed] == list(range(len(parsed)))
    assert types[-1] == "error" and error.message == "Overloaded"


# ---- Anthropic Messages --------------------------------------------------------------------


def _anthropic_sdk(url: str):
    client = anthropic.Anthropic(base_url=url.removesuffix("/v1"), api_key="sk-test",
                                 max_retries=0)
    with client.messages.stream(model="fake-model-1", max_tokens=1024,
                                messages=[{"role": "user", "content": "hi"}]) as stream:
        types = [event.type for event in stream]
        final = stream.get_final_message()
    return types, final


@pytest.mark.parametrize("name", sorted(SCRIPTS))
async def test_the_anthropic_sdk_accepts_every_messages_stream(name):
    from anthropic.types import RawMessageStreamEvent

    script = SCRIPTS[name]
    async with open_fake_llm(script=[script, script]) as server:
        url = server.url_for("anthropic")
        raw = await _raw(url, "/messages", {"model": "fake-model-1", "max_tokens": 1024,
                                             "stream": True,
                                             "messages": [{"role": "user", "content": "hi"}]})
        types, final = await trio.to_thread.run_sync(_anthropic_sdk, url)
    # ping is documented (and skipped by the SDK's decoder before the union)
    _strict(RawMessageStreamEvent, raw, UNKNOWN | {"ping"})
    assert types[0] == "message_start" and types[-1] == "message_stop"
    text = "".join(b.text for b in final.content if b.type == "text")
    assert text == script.text
    uses = [b for b in final.content if b.type == "tool_use"]
    assert [(u.name, u.input) for u in uses] == [(c.name, c.arguments) for c in script.tool_calls]
    if script.thinking:
        [block] = [b for b in final.content if b.type == "thinking"]
        assert block.thinking == script.thinking and block.signature == script.signature
    expected_stop = {"max_tokens": "max_tokens"}.get(script.stop or "",
                                                     "tool_use" if script.tool_calls else "end_turn")
    assert final.stop_reason == expected_stop
    if name == "usage":
        assert final.usage.output_tokens == 34 and final.usage.cache_read_input_tokens == 800


async def test_the_anthropic_sdk_raises_its_api_error_for_an_error_in_the_stream():
    async with open_fake_llm(script=[stream_error("Overloaded", after_frames=2,
                                                  reply=reply("partial answer"))]) as server:
        url = server.url_for("anthropic")
        with pytest.raises(anthropic.APIError, match="Overloaded"):
            await trio.to_thread.run_sync(_anthropic_sdk, url)
