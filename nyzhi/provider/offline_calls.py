"""Tool calls for the offline model: its own tool-call format, under a llama.cpp grammar.

SmolLM2-135M cannot use llama-cpp-python's ``chatml-function-calling`` tool choice (its first
step picks ``message:`` every time and then writes made-up tool output), and a JSON reply
format of our own with examples did not work either: the model copied the example nearest the
request, so "list the files here" became a ``list_dir`` of an example's path, or the example
greeting. What works is the format the model was fine-tuned on (SmolLM2's instruct data has
function-calling conversations): a system prompt listing the tools as JSON inside ``<tools>``,
and a reply ``<tool_call>[{"name": ..., "arguments": {...}}]</tool_call>``, an empty list when
no call is needed. Measured on nyz's requests, that prompt with no examples picks ``list_dir``
for "list the files here" and its rephrasings, ``read`` for "read README.md", and no call for
"hello, what can you do?".

So for the offline model one request becomes up to two (``offline_calls`` below):

1. **The decision**: that prompt, no nyz system prompt (a 135M model loses a long one: with
   it, it stopped calling), and a GBNF grammar (``call_grammar``) that allows exactly one call
   of an offered tool with valid arguments, or none. Paths are constrained to what the tools
   take relative to the working directory: a directory is ``.`` or ``./a/b`` (the model wrote
   ``/Users/...`` or ``file.txt`` for "here" otherwise; starting it at ``.`` is what made it
   stop there) and a file path is relative, so ``read`` gets the name the user wrote.
2. **The answer**, asked only when the decision was "no call" (the provider sends it as the
   decision's ``then``, see ``HttpCall``) or right after a tool result: a short system
   prompt saying what the model can do with one example exchange (a greeting, which it copies
   for greetings), and the conversation with results shown as user messages. Streamed.

``decode_decision`` turns the decision back into an OpenAI-style message (one ``tool_calls``
entry) or says that the answer is wanted.
"""

from __future__ import annotations

import json
import re
import secrets
from typing import Any

from nyzhi import jsonbound

#: The decision prompt: SmolLM2's tool-calling instructions, in our words, with the tool list.
_DECISION = """\
You compose function calls. Given a question and a set of functions, make the function/tool \
calls that achieve its purpose.
If no function fits, or the question lacks a required parameter, say so.

You have access to the following tools:
<tools>%s</tools>

Reply in exactly this format and with no other text; keep the parameter types right. If no \
function call is needed, make the list of tool calls empty: '[]'.
<tool_call>[
{"name": "func_name1", "arguments": {"argument1": "value1", "argument2": "value2"}},
... (more tool calls as required)
]</tool_call>"""

#: The answer prompt, with one exchange the model copies for a greeting. Without it, "hello,
#: what can you do?" got paragraphs about debugging and C++ programs it cannot write; the same
#: exchange as earlier turns of the conversation was copied less often than written here.
_ANSWER = """\
You are nyzhi, a coding agent in a terminal, running a small offline model. You can list the \
files in this folder and read them. Answer in one or two short sentences.
Example:
user: hi, what can you do?
you: Hello! I am nyzhi. I can list the files in this folder and read them: ask me to "list \
the files here" or "read README.md"."""

#: Argument names whose values are paths relative to the working directory, constrained by
#: the grammar (below); their descriptions in the prompt say what the grammar allows.
_DIR_ARGUMENTS = ("path",)
_FILE_ARGUMENTS = ("file_path",)
_DIR_DESCRIPTION = "A folder: '.' for the files here, './src' for the src folder."
_FILE_DESCRIPTION = "The file's name as the user wrote it, e.g. README.md."

#: A word of the user's that names a file: a relative path with an extension, or with a slash.
_FILE_NAME = re.compile(r"(?<![\w./-])([A-Za-z0-9_][\w./-]*(?:\.[A-Za-z0-9]+|/[\w.-]+))")

#: GBNF pieces. A directory starts at ``.`` (``.``, ``./src``); a file path is relative (or
#: one the user named: ``call_grammar``).
_ANY_FILE = r'"\"" [A-Za-z0-9_] [A-Za-z0-9_./-]* "\""'
_RULES = r'''
dir ::= "\"." ("/" [A-Za-z0-9_-]+)* "\""
string ::= "\"" char* "\""
char ::= [^"\\\x00-\x1f] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])
integer ::= "-"? [0-9] [0-9]? [0-9]? [0-9]? [0-9]? [0-9]? [0-9]? [0-9]? [0-9]?
number ::= integer ("." [0-9]+)?
boolean ::= "true" | "false"
value ::= string | number | boolean | "null"
'''


def _parameters(tool: dict[str, Any]) -> dict[str, Any]:
    params = dict(tool.get("parameters") or {})
    params.setdefault("type", "object")
    params.setdefault("properties", {})
    return params


def _described(tool: dict[str, Any]) -> dict[str, Any]:
    """A tool as the decision prompt lists it: path arguments described as the grammar
    constrains them (the tools' own descriptions allow absolute paths, which the model then
    made up)."""
    params = _parameters(tool)
    props = {}
    for name, schema in params["properties"].items():
        if isinstance(schema, dict) and schema.get("type") == "string":
            if name in _DIR_ARGUMENTS:
                schema = {**schema, "description": _DIR_DESCRIPTION}
            elif name in _FILE_ARGUMENTS:
                schema = {**schema, "description": _FILE_DESCRIPTION}
        props[name] = schema
    return {"name": tool["name"], "description": tool.get("description") or "",
            "parameters": {**params, "properties": props}}


def _literal(text: str) -> str:
    """``text`` as a GBNF string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _value_rule(name: str, schema: dict[str, Any]) -> str:
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return "(" + " | ".join(_literal(json.dumps(v)) for v in schema["enum"]) + ")"
    kind = schema.get("type")
    if kind == "string":
        if name in _DIR_ARGUMENTS:
            return "dir"
        if name in _FILE_ARGUMENTS:
            return "file"
        return "string"
    return {"integer": "integer", "number": "number", "boolean": "boolean"}.get(kind, "value")


def named_files(text: str) -> list[str]:
    """The file names in ``text`` (``README.md``, ``src/app.py``), in order, once each."""
    names = [m.rstrip(".") for m in _FILE_NAME.findall(text)]
    return list(dict.fromkeys(n for n in names if n and ".." not in n.split("/")))


def call_grammar(tools: list[dict[str, Any]], files: list[str] | tuple[str, ...] = ()) -> str:
    """A GBNF grammar for the decision: ``<tool_call>[`` one call of one of ``tools`` (OpenAI
    ``function`` dicts) with its required arguments in order and any optional ones after
    them, or nothing ``]</tool_call>``. A file argument is one of ``files`` when given (the
    names the user wrote: the model copies a name from the request poorly, and picks one from
    a short list well), else any relative path."""
    file_rule = " | ".join(_literal(json.dumps(f)) for f in files) if files else _ANY_FILE
    lines = ['root ::= "<tool_call>[" call? "]</tool_call>"', f"file ::= {file_rule}"]
    alternatives = []
    for i, tool in enumerate(tools):
        params = _parameters(tool)
        props: dict[str, Any] = params["properties"]
        required = [n for n in props if n in set(params.get("required") or ())]
        optional = [n for n in props if n not in required]
        head = _literal('{"name": ' + json.dumps(tool["name"]) + ', "arguments": {')
        parts = []
        for j, name in enumerate(required):
            sep = ", " if j else ""
            parts.append(_literal(f"{sep}{json.dumps(name)}: ") + " " + _value_rule(name, props[name]))
        keys = [_literal(f"{json.dumps(n)}: ") + " " + _value_rule(n, props[n]) for n in optional]
        if required:
            parts += [f"({_literal(', ')} {key})?" for key in keys]
        elif keys:  # nothing before them to put a comma after: at most one
            parts.append(f"({' | '.join(keys)})?")
        lines.append(f"call{i} ::= {head} {' '.join(parts)} " + _literal("}}"))
        alternatives.append(f"call{i}")
    lines.insert(2, "call ::= " + " | ".join(alternatives))
    return "\n".join(lines) + _RULES


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _conversation(messages: list[dict[str, Any]], *, calls_as_text: bool) -> list[dict[str, Any]]:
    """The conversation without its system prompt: a result as a user message naming the tool;
    a call in the decision format (``calls_as_text``), or left out (the answer prompt has no
    format for it, and its result says what was called)."""
    out: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    for message in messages:
        role = message.get("role")
        if role == "system":
            continue
        if role == "assistant":
            text = _text(message.get("content")).strip()
            calls = []
            for call in message.get("tool_calls") or []:
                fn = call.get("function") or {}
                names[call.get("id", "")] = fn.get("name", "")
                try:
                    arguments = jsonbound.loads(fn.get("arguments") or "{}")
                except ValueError:
                    arguments = {}
                calls.append({"name": fn.get("name", ""), "arguments": arguments})
            if calls and calls_as_text:
                text = f"<tool_call>{json.dumps(calls, ensure_ascii=False)}</tool_call>"
            if text:
                out.append({"role": "assistant", "content": text})
        elif role == "tool":
            name = names.get(message.get("tool_call_id", ""), "the tool")
            out.append({"role": "user",
                        "content": f"Result of {name}:\n{_text(message.get('content'))}"})
        else:
            out.append({"role": role, "content": _text(message.get("content"))})
    return out


#: Output cap of a decision: one call with short arguments fits easily.
DECISION_MAX_TOKENS = 160


def offline_calls(body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """An OpenAI chat request body with tools, for the offline model, as (first body, the
    answer body to send if the first one's reply is "no call", or None): the decision and its
    answer, or only the answer right after a tool result (one look, then say what it showed,
    which is what this model can do). See the module docstring."""
    tools = [t["function"] for t in body.get("tools") or () if isinstance(t, dict)]
    messages = body.get("messages") or []
    common = {k: v for k, v in body.items()
              if k not in ("tools", "tool_choice", "parallel_tool_calls", "messages",
                           "response_format", "stream", "stream_options")}
    answer = {**common, "stream": True, "stream_options": {"include_usage": True},
              "messages": [{"role": "system", "content": _ANSWER},
                           *_conversation(messages, calls_as_text=False)]}
    if not tools or (messages and messages[-1].get("role") == "tool"):
        return answer, None
    listed = json.dumps([_described(t) for t in tools], ensure_ascii=False)
    asked = next((_text(m.get("content")) for m in reversed(messages)
                  if m.get("role") == "user"), "")
    decision = {**common, "stream": False,
                "max_tokens": min(DECISION_MAX_TOKENS, common.get("max_tokens") or 10**9),
                "grammar": call_grammar(tools, named_files(asked)),
                "messages": [{"role": "system", "content": _DECISION % listed},
                             *_conversation(messages, calls_as_text=True)]}
    return decision, answer


_DECISION_REPLY = re.compile(r"\s*<tool_call>\s*(\[.*\])\s*</tool_call>\s*\Z", re.S)


def decode_decision(message: dict[str, Any]) -> bool:
    """A decision reply turned into an OpenAI message (in place): its call as one
    ``tool_calls`` entry. Returns True when it made no call (the answer is to be asked for).
    A reply not in the format is left alone, as the model's text."""
    content = message.get("content")
    match = _DECISION_REPLY.match(content) if isinstance(content, str) else None
    if match is None:
        return False
    try:
        calls = json.loads(match.group(1))
    except ValueError:
        return False
    calls = [c for c in calls if isinstance(c, dict) and isinstance(c.get("name"), str)
             and isinstance(c.get("arguments"), dict)] if isinstance(calls, list) else []
    if not calls:
        return True
    message["content"] = None
    message["tool_calls"] = [{
        "id": f"call_{secrets.token_hex(4)}", "type": "function",
        "function": {"name": c["name"], "arguments": json.dumps(c["arguments"], ensure_ascii=False)},
    } for c in calls[:1]]
    return False
