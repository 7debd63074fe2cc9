"""``nyz run --output-schema FILE.json`` against the scripted fake LLM: each wire format's own
constraint, an answer that matches (exit 0), one that does not (an error result, exit 1)."""

from __future__ import annotations

import json

import pytest

from nyzhi.testing.cli import json_lines, run_nyz
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "count": {"type": "integer"}},
    "required": ["name", "count"],
    "additionalProperties": False,
}


def constraint(wire: str, body: dict) -> object:
    """The wire format's own constraint on the answer, or None where it has none."""
    if wire == "openai":
        return body["response_format"]["json_schema"]["schema"]
    if wire == "openai-responses":
        fmt = body["text"]["format"]
        assert fmt["type"] == "json_schema" and fmt["name"]
        return fmt["schema"]
    if wire == "gemini":
        config = body["generationConfig"]
        assert config["responseMimeType"] == "application/json"
        return config["responseSchema"]
    if wire == "ollama":
        return body["format"]
    for key in ("response_format", "text", "format", "output_format"):
        assert key not in body
    return None


@pytest.mark.parametrize("wire", ["openai", "openai-responses", "anthropic", "gemini", "ollama"])
async def test_a_matching_answer_is_accepted(wire, workspace, home, configure):
    (workspace / "schema.json").write_text(json.dumps(SCHEMA))
    script = [reply(tool_calls=[tool_call("think", {"thought": "count them"})]),
              reply('```json\n{"name": "apples", "count": 3}\n```')]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for(wire), api_style=wire)
        proc = await run_nyz(workspace, home, "run", "--output-schema", "schema.json",
                             "--output-format", "json", "count the apples")
    assert proc.returncode == 0, proc.stderr.decode()
    [result] = json_lines(proc.stdout)
    assert result["is_error"] is False and '"count": 3' in result["result"]
    for request in server.requests:  # every step, tools offered alongside
        sent = constraint(wire, request.json)
        if wire == "gemini":
            assert sent == {k: v for k, v in SCHEMA.items() if k != "additionalProperties"}
        elif wire != "anthropic":
            assert sent == SCHEMA
        assert '"required"' in request.system_text()  # the schema is in the system prompt too


@pytest.mark.parametrize("answer,says", [
    ('{"name": "apples", "count": "three"}', "at count: 'three' is not of type 'integer'"),
    ('{"name": "apples"}', "at (the top level): 'count' is a required property"),
    ("three apples", "the answer is not JSON"),
])
async def test_a_mismatch_is_an_error_result(answer, says, workspace, home, configure):
    (workspace / "schema.json").write_text(json.dumps(SCHEMA))
    async with open_fake_llm(script=[reply(answer)] * 3) as server:
        configure(workspace, server.url_for("openai"))
        stream = await run_nyz(workspace, home, "run", "--output-schema", "schema.json",
                               "--output-format", "stream-json", "count")
        text = await run_nyz(workspace, home, "run", "--output-schema", "schema.json", "count")
        as_json = await run_nyz(workspace, home, "run", "--output-schema", "schema.json",
                                "--output-format", "json", "count")
    assert stream.returncode == 1 and text.returncode == 1 and as_json.returncode == 1
    [result] = json_lines(as_json.stdout)  # json: only the result on stdout, the why on stderr
    assert result["subtype"] == "output_schema" and says in as_json.stderr.decode()
    events = json_lines(stream.stdout)
    [error] = [e for e in events if e["type"] == "error"]
    assert error["kind"] == "output_schema" and says in error["message"]
    assert events[-1]["type"] == "result" and events[-1]["is_error"] is True
    assert events[-1]["subtype"] == "output_schema" and says in events[-1]["error"]
    assert events[-1]["result"] == answer  # the answer is kept, marked as an error
    assert says in text.stderr.decode()


async def test_a_bad_schema_file_is_one_line(workspace, home, configure):
    configure(workspace, "http://127.0.0.1:9/v1")
    (workspace / "broken.json").write_text("{not json")
    (workspace / "wrong.json").write_text('{"type": "nonesuch"}')
    for name, says in (("missing.json", "cannot read it"), ("broken.json", "not JSON"),
                       ("wrong.json", "not a valid JSON schema")):
        proc = await run_nyz(workspace, home, "run", "--output-schema", name, "hi")
        err = proc.stderr.decode()
        assert proc.returncode == 1 and f"--output-schema {name}: {says}" in err, err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1
