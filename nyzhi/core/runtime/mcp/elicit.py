"""MCP elicitation: a server asks the user for a few values mid-call (a form), or to visit a
URL. The spec leaves the rendering to the client; nyz asks through the one ask-user path
(``ToolContext.ask_user``'s router, a ``user_question`` event every front end already shows),
one question per field, so the console, the line chat, the web console and ACP all answer it
without knowing MCP.

Headless (``nyz run``, a CI job) nobody can answer: the request is declined, unless the user's
config says ``[mcp] elicitation = "defaults"``, which accepts a form whose every required field
has a default in the server's schema (the conformance suite's "client defaults" scenario), with
those defaults applied. A URL is never opened by nyz; interactively its address is shown and
the user says whether they went there.

Every answer is bounded and checked against the field's type and ``enum`` before it is sent;
an answer that does not fit is asked again, up to ``ASKS_PER_FIELD`` times, then the whole
request is declined (a server must not get a value its own schema rejects).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

DECLINE, DEFAULTS = "decline", "defaults"
POLICIES = (DECLINE, DEFAULTS)
CANCELLED = "__cancelled__"  # what the ask-user router answers for a dismissed question
ASKS_PER_FIELD = 3
MAX_ANSWER = 4096  # characters of one field's answer
MAX_FIELDS = 32  # a form longer than this is declined unasked
MAX_TEXT = 2000  # characters of the server's message, a field's title or description shown

AskUser = Callable[[str, list[dict[str, str]], bool], Awaitable[str]]


class _Declined(Exception):
    """The user (or the rules) declined; ``action`` is decline or cancel."""

    def __init__(self, action: str) -> None:
        super().__init__(action)
        self.action = action


def schema_defaults(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The schema's defaults for every property that has one; None when a required property
    has none (then a form cannot be filled without a person)."""
    props = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    values = {name: spec["default"] for name, spec in props.items()
              if isinstance(spec, dict) and "default" in spec}
    return None if required - values.keys() else values


def coerce(spec: dict[str, Any], text: str) -> tuple[bool, Any]:
    """``text`` as the field's type, or (False, why)."""
    kind = spec.get("type", "string")
    text = text.strip()
    if len(text) > MAX_ANSWER:
        return False, f"at most {MAX_ANSWER} characters"
    choices = _choices(spec)
    if choices and kind != "array":
        return (True, text) if text in choices else (False, f"one of {', '.join(choices)}")
    if kind == "boolean":
        low = text.lower()
        if low in ("y", "yes", "true", "1"):
            return True, True
        if low in ("n", "no", "false", "0"):
            return True, False
        return False, "yes or no"
    if kind in ("integer", "number"):
        try:
            value: Any = int(text) if kind == "integer" else float(text)
        except ValueError:
            return False, f"a{'n integer' if kind == 'integer' else ' number'}"
        low, high = spec.get("minimum"), spec.get("maximum")
        if (low is not None and value < low) or (high is not None and value > high):
            return False, f"between {low} and {high}"
        return True, value
    if kind == "array":
        items = [part.strip() for part in text.split(",") if part.strip()]
        allowed = _choices(spec.get("items") or {})
        if allowed and any(item not in allowed for item in items):
            return False, f"a comma-separated list of {', '.join(allowed)}"
        return True, items
    low, high = spec.get("minLength"), spec.get("maxLength")
    if (low is not None and len(text) < low) or (high is not None and len(text) > high):
        return False, f"{low or 0} to {high or MAX_ANSWER} characters"
    return True, text


def _choices(spec: dict[str, Any]) -> list[str]:
    if isinstance(spec.get("enum"), list):
        return [str(v) for v in spec["enum"]]
    one_of = spec.get("oneOf") or spec.get("anyOf") or ()
    return [str(o["const"]) for o in one_of if isinstance(o, dict) and "const" in o]


async def _ask_field(ask: AskUser, server: str, message: str, name: str,
                     spec: dict[str, Any], required: bool) -> tuple[bool, Any]:
    """One field's value (True, value), or (False, None) for an optional field left out."""
    title = str(spec.get("title") or name)[:MAX_TEXT]
    detail = f" ({str(spec['description'])[:MAX_TEXT]})" if spec.get("description") else ""
    options = [{"label": c[:MAX_TEXT]} for c in _choices(spec)[:MAX_FIELDS]]
    if spec.get("type") == "boolean":
        options = [{"label": "yes"}, {"label": "no"}]
    has_default = "default" in spec
    if has_default:
        options.insert(0, {"label": "(default)", "description": str(spec["default"])})
    if not required and not has_default:
        options.append({"label": "(skip)"})
    options.append({"label": "(decline)", "description": "send the server nothing"})
    hint = ""
    for _ in range(ASKS_PER_FIELD):
        answer = await ask(f"MCP server {server!r} asks: {message}\n{title}{detail}{hint}",
                           options, not _choices(spec) and spec.get("type") != "boolean")
        if answer == CANCELLED:
            raise _Declined("cancel")
        if answer == "(decline)":
            raise _Declined("decline")
        if answer == "(skip)":
            return False, None
        if answer == "(default)" or (has_default and not answer.strip()):
            return True, spec["default"]
        ok, value = coerce(spec, answer)
        if ok:
            return True, value
        hint = f"\n(that was not {value}; try again)"
    raise _Declined("decline")


async def fill_form(ask: AskUser | None, policy: str, server: str, message: str,
                    schema: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """(action, content) for a form request, by the rules in the module docstring."""
    props = schema.get("properties") or {}
    if not isinstance(props, dict) or len(props) > MAX_FIELDS:
        return DECLINE, None
    message = str(message)[:MAX_TEXT]
    if ask is None:
        values = schema_defaults(schema) if policy == DEFAULTS else None
        return ("accept", values) if values is not None else (DECLINE, None)
    required = set(schema.get("required") or ())
    content: dict[str, Any] = {}
    try:
        for name, spec in props.items():
            if not isinstance(spec, dict):
                return DECLINE, None
            given, value = await _ask_field(ask, server, message, name, spec, name in required)
            if given:
                content[name] = value
    except _Declined as declined:
        return declined.action, None
    return "accept", content


async def visit_url(ask: AskUser | None, server: str, message: str, url: str) -> str:
    """The action for a URL request: declined headless; interactively the user is shown the
    address (nyz never opens it) and says whether they went there."""
    if ask is None:
        return DECLINE
    url, message = str(url)[:MAX_TEXT], str(message)[:MAX_TEXT]
    answer = await ask(f"MCP server {server!r} asks you to open {url}\n{message}",
                       [{"label": "I opened it"}, {"label": "(decline)"}], False)
    if answer == CANCELLED:
        return "cancel"
    return "accept" if answer == "I opened it" else DECLINE


def callback_for(server: str, ask: AskUser | None, policy: str) -> Any:
    """The SDK's ``elicitation_callback`` for one server."""

    async def elicit(context: Any, params: Any) -> Any:
        from mcp import types

        if getattr(params, "mode", "form") == "url":
            action = await visit_url(ask, server, params.message, params.url)
            return types.ElicitResult(action=action)  # type: ignore[arg-type]
        schema = params.requested_schema
        if hasattr(schema, "model_dump"):
            schema = schema.model_dump(mode="json", by_alias=True, exclude_none=True)
        action, content = await fill_form(ask, policy, server, params.message, dict(schema))
        return types.ElicitResult(action=action, content=content)  # type: ignore[arg-type]

    return elicit
