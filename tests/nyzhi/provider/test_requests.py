"""What each adapter puts on the wire, as recorded by the fake server."""

from __future__ import annotations

from provider_helpers import READ_TOOL, collect, make_spec, simple_request

from nyzhi.provider.types import ChatRequest, Message, ThinkingConfig, ToolCall
from nyzhi.testing.fake_llm import open_fake_llm, reply

HISTORY = (
    Message("user", "read a.py and b.py"),
    Message(
        "assistant",
        "Reading both.",
        tool_calls=(ToolCall("c1", "read_file", '{"path": "a.py"}'), ToolCall("c2", "read_file", '{"path": "b.py"}')),
        thinking="I should read them",
        thinking_signature="SIG-1",
    ),
    Message("tool", "print('a')", tool_call_id="c1", name="read_file"),
    Message("tool", "no such file", tool_call_id="c2", name="read_file", is_error=True),
    Message("user", "thanks, now summarise"),
)


async def _sent(style: str, request: ChatRequest, **spec_kw: object) -> tuple[dict, dict, str]:
    async with open_fake_llm(None, script=[reply("ok")]) as server:
        await collect(make_spec(server, style, **spec_kw), request)
        (req,) = server.requests
    return req.json, req.headers, req.path + ("?" + req.query if req.query else "")


async def test_openai_chat_request() -> None:
    request = simple_request(messages=HISTORY, system="be brief", tools=(READ_TOOL,), tool_choice="auto",
                             max_tokens=500, temperature=0.3)
    body, headers, path = await _sent("openai", request)
    assert path == "/v1/chat/completions"
    assert headers["authorization"] == "Bearer test-key"
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["model"] == "fake-model-1"
    assert body["max_tokens"] == 500 and body["temperature"] == 0.3
    assert body["tools"] == [{"type": "function", "function": {
        "name": "read_file", "description": "Read a file", "parameters": READ_TOOL.parameters}}]
    assert body["tool_choice"] == "auto"
    msgs = body["messages"]
    assert msgs[0] == {"role": "system", "content": "be brief"}
    assert msgs[2]["tool_calls"][1] == {"id": "c2", "type": "function",
                                       "function": {"name": "read_file", "arguments": '{"path": "b.py"}'}}
    assert msgs[3] == {"role": "tool", "tool_call_id": "c1", "content": "print('a')"}
    assert msgs[-1] == {"role": "user", "content": "thanks, now summarise"}


async def test_openai_chat_thinking_uses_reasoning_effort_and_drops_temperature() -> None:
    request = simple_request(thinking=ThinkingConfig(enabled=True, effort="medium"), temperature=0.5)
    body, _, _ = await _sent("openai", request)
    assert body["reasoning_effort"] == "medium"
    assert "temperature" not in body


async def test_llama_cpp_is_the_openai_format() -> None:
    body, _, path = await _sent("llama-cpp", simple_request(), key=None)
    assert path == "/v1/chat/completions" and body["stream_options"] == {"include_usage": True}


async def test_no_key_sends_no_auth_header() -> None:
    _, headers, _ = await _sent("openai", simple_request(), key=None)
    assert "authorization" not in headers


async def test_responses_request() -> None:
    request = simple_request(messages=HISTORY, system="be brief", tools=(READ_TOOL,), max_tokens=300,
                             thinking=ThinkingConfig(enabled=True, effort="low"))
    body, headers, path = await _sent("openai-responses", request)
    assert path == "/v1/responses"
    assert headers["authorization"] == "Bearer test-key"
    assert body["instructions"] == "be brief" and body["store"] is False and body["stream"] is True
    assert body["reasoning"] == {"effort": "low", "summary": "auto"}
    assert body["max_output_tokens"] == 300
    assert body["tools"][0]["type"] == "function" and body["tools"][0]["name"] == "read_file"
    kinds = [item.get("type") or item.get("role") for item in body["input"]]
    assert kinds == ["user", "assistant", "function_call", "function_call", "function_call_output",
                     "function_call_output", "user"]
    assert body["input"][4] == {"type": "function_call_output", "call_id": "c1", "output": "print('a')"}


async def test_anthropic_request_caching_thinking_and_signed_history() -> None:
    request = simple_request(messages=HISTORY, system="be brief", tools=(READ_TOOL, READ_TOOL),
                             thinking=ThinkingConfig(enabled=True, budget_tokens=2048), temperature=0.2)
    body, headers, path = await _sent("anthropic", request)
    assert path == "/v1/messages"
    assert headers["x-api-key"] == "test-key" and headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in headers
    assert body["system"] == [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}]
    assert "cache_control" not in body["tools"][0]
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["tools"][0]["input_schema"] == READ_TOOL.parameters
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] > 2048 and "temperature" not in body
    msgs = body["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"]
    assistant = msgs[1]["content"]
    assert assistant[0] == {"type": "thinking", "thinking": "I should read them", "signature": "SIG-1"}
    assert assistant[2] == {"type": "tool_use", "id": "c1", "name": "read_file", "input": {"path": "a.py"}}
    results = msgs[2]["content"]  # both results and the next user text share one turn
    assert results[0] == {"type": "tool_result", "tool_use_id": "c1", "content": "print('a')"}
    assert results[1]["is_error"] is True
    assert results[-1] == {"type": "text", "text": "thanks, now summarise", "cache_control": {"type": "ephemeral"}}
    cached = [b for m in msgs for b in m["content"] if "cache_control" in b]
    assert len(cached) == 1


async def test_anthropic_defaults_max_tokens_and_maps_tool_choice() -> None:
    body, _, _ = await _sent("anthropic", simple_request(tool_choice="required", tools=(READ_TOOL,)))
    assert body["max_tokens"] == 4096 and body["tool_choice"] == {"type": "any"}
    assert "thinking" not in body and "system" not in body


async def test_gemini_request() -> None:
    tool = READ_TOOL.__class__("read_file", "Read", {"$schema": "x", "type": "object", "additionalProperties": False,
                                                      "properties": {"path": {"type": "string"}}})
    request = simple_request(messages=HISTORY, system="be brief", tools=(tool,), max_tokens=256, temperature=0.1,
                             thinking=ThinkingConfig(enabled=True, budget_tokens=1024))
    body, headers, path = await _sent("gemini", request)
    assert path == "/v1beta/models/fake-model-1:streamGenerateContent?alt=sse"
    assert headers["x-goog-api-key"] == "test-key" and "key=" not in path
    assert body["systemInstruction"] == {"parts": [{"text": "be brief"}]}
    decl = body["tools"][0]["functionDeclarations"][0]
    assert decl["parameters"] == {"type": "object", "properties": {"path": {"type": "string"}}}
    assert body["generationConfig"] == {"maxOutputTokens": 256, "temperature": 0.1,
                                        "thinkingConfig": {"thinkingBudget": 1024, "includeThoughts": True}}
    roles = [c["role"] for c in body["contents"]]
    assert roles == ["user", "model", "user"]
    model_parts = body["contents"][1]["parts"]
    assert model_parts[1] == {"functionCall": {"name": "read_file", "args": {"path": "a.py"}}, "thoughtSignature": "SIG-1"}
    answers = body["contents"][2]["parts"]
    assert answers[0] == {"functionResponse": {"name": "read_file", "response": {"result": "print('a')"}}}
    assert answers[1] == {"functionResponse": {"name": "read_file", "response": {"error": "no such file"}}}
    assert answers[2] == {"text": "thanks, now summarise"}


async def test_ollama_request() -> None:
    request = simple_request(messages=HISTORY, system="be brief", tools=(READ_TOOL,), max_tokens=64,
                             temperature=0.7, thinking=ThinkingConfig(enabled=True))
    body, headers, path = await _sent("ollama", request, key=None)
    assert path == "/api/chat" and "authorization" not in headers
    assert body["stream"] is True and body["think"] is True
    assert body["options"] == {"num_predict": 64, "temperature": 0.7}
    assert body["tools"][0]["function"]["name"] == "read_file"
    msgs = body["messages"]
    assert msgs[0] == {"role": "system", "content": "be brief"}
    assert msgs[2]["tool_calls"][0] == {"function": {"name": "read_file", "arguments": {"path": "a.py"}}}
    assert msgs[3] == {"role": "tool", "content": "print('a')", "tool_name": "read_file"}


async def test_request_model_overrides_spec_model(style: str) -> None:
    async with open_fake_llm(None, script=[reply("ok")]) as server:
        await collect(make_spec(server, style), simple_request(model="other-model"))
        (req,) = server.requests
    assert req.model == "other-model"


async def test_spec_headers_are_sent(style: str) -> None:
    async with open_fake_llm(None, script=[reply("ok")]) as server:
        await collect(make_spec(server, style, headers={"X-Title": "nyzhi"}))
        (req,) = server.requests
    assert req.headers["x-title"] == "nyzhi"
