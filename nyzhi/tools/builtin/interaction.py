"""Interaction and discovery: ask_user and tool_search.

``ask_user`` goes to whichever front end runs the agent through ``ctx.ask_user``. A headless run
has none: the call is an error telling the model to decide itself, unless the run configured a
default answer (``ctx.state["ask_user_default"]``), which is then returned and labelled as such.
"""

from __future__ import annotations

import json
import re
from typing import Any

from nyzhi.tools.base import ToolContext, ToolResult
from nyzhi.tools.builtin.common import ArgError, BuiltinTool, error, opt_bool, req_str

CANCELLED = "__cancelled__"


class AskUserTool(BuiltinTool):
    name = "ask_user"
    description = (
        "Ask the user a multiple-choice question and wait for the answer: the chosen value, or "
        "their own words if allow_custom. Use it only for a decision that changes the outcome "
        "and that you cannot make yourself, never for permission to do what was asked. In a "
        "headless run nobody can answer and the call fails: decide, state your assumption and "
        "go on."
    )
    parameters = {
        "type": "object",
        "properties": {
            "question": {"type": "string", "description": "The question, understandable on its own."},
            "options": {
                "type": "array",
                "minItems": 2,
                "maxItems": 6,
                "description": "2 to 6 choices.",
                "items": {
                    "type": "object",
                    "properties": {
                        "value": {"type": "string", "description": "Returned when chosen."},
                        "label": {"type": "string", "description": "Shown to the user."},
                    },
                    "required": ["value", "label"],
                },
            },
            "allow_custom": {"type": "boolean", "description": "Offer a free-text answer (default true)."},
        },
        "required": ["question", "options"],
    }

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        question = req_str(args, "question")
        raw = args.get("options")
        if not isinstance(raw, list) or not 2 <= len(raw) <= 6:
            raise ArgError("'options' must be an array of 2 to 6 {value, label} objects")
        options = []
        for i, opt in enumerate(raw, start=1):
            if not isinstance(opt, dict) or not isinstance(opt.get("value"), str) or not isinstance(opt.get("label"), str):
                raise ArgError(f"options[{i}] must be an object with string 'value' and 'label'")
            options.append({"value": opt["value"], "label": opt["label"]})
        allow_custom = opt_bool(args, "allow_custom", True)
        if ctx.ask_user is None:
            default = ctx.state.get("ask_user_default")
            if default is not None:
                return ToolResult(
                    output=f"No user is present (headless run); using the configured default answer: {default}",
                    metadata={"answer": default, "default": True},
                )
            return error(
                "ask_user is not available: no user is attached to this run (headless). "
                "Make the decision yourself, state the assumption, and continue."
            )
        answer = await ctx.ask_user(question, options, allow_custom)
        if answer == CANCELLED:
            return ToolResult(output="The user dismissed the question without answering.", metadata={"answer": None})
        return ToolResult(output=answer, metadata={"answer": answer})


class ToolSearchTool(BuiltinTool):
    name = "tool_search"
    description = (
        "Find tools that are available but not loaded (the system prompt lists them by name) "
        "and load the matches, so you can call them from the next step on. 'keyword' search "
        "needs every word in a tool's name or description; 'regex' searches both with a "
        "regular expression."
    )
    parameters = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Words or a regular expression naming the tool you need."},
            "search_type": {"type": "string", "enum": ["keyword", "regex"], "description": "How to match query (default keyword)."},
        },
        "required": ["query"],
    }

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        query = req_str(args, "query")
        search_type = args.get("search_type") or "keyword"
        if search_type not in ("keyword", "regex"):
            raise ArgError(f"search_type must be 'keyword' or 'regex', got {search_type!r}")
        registry = ctx.registry
        if registry is None:
            return error("tool_search is unavailable: no tool registry in this context")
        try:
            found = registry.search(query, search_type)
        except re.error as exc:
            raise ArgError(f"invalid regex {query!r}: {exc}") from exc
        if not found:
            return ToolResult(
                output=f"No deferred tools match {query!r}. Try fewer or other words, or "
                "search_type 'regex'.",
                metadata={"tools": []},
            )
        lines = [f"Loaded {len(found)} tool{'s' if len(found) != 1 else ''}; you can call them now:"]
        for tool in found:
            registry.discover(tool.name)
            lines.append(f"- {tool.name}: {tool.description.strip()}")
            lines.append(f"  parameters: {json.dumps(tool.parameters, separators=(',', ':'))}")
        return ToolResult(output="\n".join(lines), metadata={"tools": [t.name for t in found]})


TOOLS = (AskUserTool, ToolSearchTool)
