"""Tool calls for the offline model as grammar-constrained JSON.

SmolLM2-135M cannot use llama-cpp-python's ``chatml-function-calling`` tool choice: its first
step picks between ``message:`` and ``functions.NAME:`` at temperature 0, and this model
picked ``message:`` every time, then wrote made-up tool output. (That template also drops
``tool`` messages, so a result never reached the model.) Instead, for the offline model the
request carries no ``tools``: the system prompt describes them in one reply format, and
``response_format`` (``json_object`` with a JSON schema, which the installed
llama-cpp-python turns into a llama.cpp grammar) makes the reply exactly one of

* ``{"tool": NAME, "arguments": {...}}``: arguments valid for that tool's parameter schema,
  so any call the model makes is a real call of an offered tool; or
* ``{"answer": "text"}``.

The conversation is rewritten in the same format (a call as its JSON, a result as a user
message naming the tool), and after a tool result only an answer is allowed: one look, then
say what it showed, which is what this model can do. ``decode_reply`` turns the reply back
into an OpenAI-style message (content, or one ``tool_calls`` entry).
"""

from __future__ import annotations

import json
import re
import secrets
from typing import Any

#: How the reply format is explained, after the system prompt, with examples. A 135M model
#: copies the example closest to the request (its wording, its path, its answer), so they were
#: chosen by measuring nyz's real requests against the model: this set made "list the files
#: here" a list_dir call of the working directory most often and a greeting an answer. Examples
#: as earlier turns of the conversation, a closing "thanks" example (copied as the answer to
#: everything) and a greeting mentioning files (copied for "list the files") did worse.
_FORMAT = """\
# Reply format
Reply with one JSON object and nothing else.
To call a tool: {"tool": "NAME", "arguments": {...}}. To answer: {"answer": "TEXT"}.
Tools:
%s
Examples:
%s"""

#: The examples, each shown only when the tools it calls are offered.
_EXAMPLES = (
    ((), 'user: hi -> {"answer": "Hello! I am nyzhi. I can look at the code in this folder '
         'for you."}'),
    (("list_dir",), 'user: what files are in this folder? -> {"tool": "list_dir", '
                    '"arguments": {"path": "."}}'),
    (("read",), 'user: what is in notes.txt? -> {"tool": "read", "arguments": '
                '{"file_path": "notes.txt"}}'),
)

_ANSWER = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
}


def _parameters(tool: dict[str, Any]) -> dict[str, Any]:
    params = dict(tool.get("parameters") or {})
    params.setdefault("type", "object")
    params.setdefault("properties", {})
    return params


def reply_schema(tools: list[dict[str, Any]], *, answer_only: bool = False) -> dict[str, Any]:
    """The JSON schema of a reply: a call of one of ``tools`` (OpenAI ``function`` dicts) with
    valid arguments, or an answer."""
    if answer_only or not tools:
        return _ANSWER
    calls = [
        {
            "type": "object",
            "properties": {"tool": {"const": t["name"]}, "arguments": _parameters(t)},
            "required": ["tool", "arguments"],
        }
        for t in tools
    ]
    return {"anyOf": [*calls, _ANSWER]}


def _tool_line(tool: dict[str, Any]) -> str:
    params = _parameters(tool)
    names = list(params["properties"])
    required = set(params.get("required") or ())
    shown = ", ".join(n if n in required else f"{n}?" for n in names)
    description = (tool.get("description") or "").strip().split("\n")[0]
    return f"- {tool['name']}({shown}): {description}"


def json_call_body(body: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI chat request body for the offline model, rewritten to the JSON reply format
    (module docstring). A body without tools is returned as it is."""
    tools = [t["function"] for t in body.get("tools") or () if isinstance(t, dict)]
    if not tools:
        return body
    out = {k: v for k, v in body.items()
           if k not in ("tools", "tool_choice", "parallel_tool_calls", "stream_options")}
    messages, last_was_result = _rewrite(body.get("messages") or [])
    offered = {t["name"] for t in tools}
    instructions = _FORMAT % (
        "\n".join(_tool_line(t) for t in tools),
        "\n".join(line for needs, line in _EXAMPLES if offered.issuperset(needs)),
    )
    if messages and messages[0].get("role") == "system":
        messages[0] = {"role": "system",
                       "content": f"{messages[0].get('content') or ''}\n\n{instructions}"}
    else:
        messages.insert(0, {"role": "system", "content": instructions})
    out["messages"] = messages
    out["stream"] = False
    out["response_format"] = {
        "type": "json_object", "schema": reply_schema(tools, answer_only=last_was_result)}
    return out


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _rewrite(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], bool]:
    """Messages in the reply format: calls as JSON, results as user messages."""
    out: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    last_was_result = False
    for message in messages:
        role = message.get("role")
        last_was_result = role == "tool"
        if role == "assistant":
            calls = message.get("tool_calls") or []
            parts = []
            text = _text(message.get("content")).strip()
            if text:
                parts.append(json.dumps({"answer": text}, ensure_ascii=False))
            for call in calls:
                fn = call.get("function") or {}
                names[call.get("id", "")] = fn.get("name", "")
                try:
                    arguments = json.loads(fn.get("arguments") or "{}")
                except ValueError:
                    arguments = {}
                parts.append(json.dumps({"tool": fn.get("name", ""), "arguments": arguments},
                                        ensure_ascii=False))
            out.append({"role": "assistant", "content": "\n".join(parts)})
        elif role == "tool":
            name = names.get(message.get("tool_call_id", ""), "the tool")
            out.append({"role": "user",
                        "content": f"Result of {name}:\n{_text(message.get('content'))}"})
        else:
            out.append({"role": role, "content": _text(message.get("content"))})
    return out, last_was_result


#: The start of an answer whose JSON never closed (the output cap cut it).
_CUT_ANSWER = re.compile(r'\s*\{\s*"answer"\s*:\s*"(.*)\Z', re.S)


def _partial_string(body: str) -> str:
    """The text of a JSON string literal cut short (escapes decoded where complete)."""
    body = re.sub(r'"\s*\}?\s*\Z', "", body)
    for end in range(len(body), max(-1, len(body) - 8), -1):  # drop a half escape
        try:
            return json.loads(f'"{body[:end]}"')
        except ValueError:
            continue
    return body


def decode_reply(message: dict[str, Any]) -> None:
    """A reply in the JSON format turned back into an OpenAI message (in place): its answer
    as ``content``, or its call as one ``tool_calls`` entry. Anything else is left alone."""
    content = message.get("content")
    if not isinstance(content, str):
        return
    try:
        reply = json.loads(content)
    except ValueError:
        cut = _CUT_ANSWER.match(content)  # an answer cut by max_tokens: its text so far
        if cut is not None:
            message["content"] = _partial_string(cut.group(1))
        return
    if not isinstance(reply, dict):
        return
    if isinstance(reply.get("tool"), str) and isinstance(reply.get("arguments"), dict):
        message["content"] = None
        message["tool_calls"] = [{
            "id": f"call_{secrets.token_hex(4)}", "type": "function",
            "function": {"name": reply["tool"],
                         "arguments": json.dumps(reply["arguments"], ensure_ascii=False)},
        }]
    elif isinstance(reply.get("answer"), str):
        message["content"] = reply["answer"]
