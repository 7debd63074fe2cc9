"""Turning a model's raw tool-argument text into a dict, without ever raising: the one parser.

Models do produce broken JSON (truncated at max_tokens, trailing commas, prose). The stream
passes the raw text through untouched in ``ToolCallEnd.arguments``; the agent's tool step
(``nyzhi.core.loop.tool_step``) calls ``parse_tool_arguments`` and, on a ``ToolArgumentError``,
sends the model a tool error it can correct instead of crashing the turn. The wire encoders
call it too, for formats that carry arguments as objects.
"""

from __future__ import annotations

from typing import Any

from nyzhi import jsonbound, records
from nyzhi.jsonbound import JsonTooDeep, LoneSurrogate


@records.frozen
class ToolArgumentError:
    """Why a tool call's arguments could not be used; ``str()`` is meant for the model."""

    raw: str
    message: str

    def __str__(self) -> str:
        raw = jsonbound.scrub(self.raw)
        shown = raw if len(raw) <= 200 else raw[:200] + "…"
        return f"invalid tool arguments: {self.message}. Arguments received: {shown!r}"


def parse_tool_arguments(raw: str | None) -> dict[str, Any] | ToolArgumentError:
    """The arguments as a dict; empty text means no arguments (``{}``)."""
    if raw is None or not raw.strip():
        return {}
    try:
        value = jsonbound.loads(raw, surrogates="refuse")
    except (JsonTooDeep, LoneSurrogate) as exc:
        return ToolArgumentError(raw, str(exc))
    except ValueError as exc:
        return ToolArgumentError(raw, f"not valid JSON ({exc})")
    if not isinstance(value, dict):
        return ToolArgumentError(raw, f"expected a JSON object, got {type(value).__name__}")
    return value
