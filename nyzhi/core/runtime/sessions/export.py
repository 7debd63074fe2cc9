"""Exporting a session: Markdown for people, JSON for programs.

Both use the full ``history`` (every message ever appended, compaction notwithstanding), so an
export shows the whole conversation rather than the summarised thread a resume would use.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from nyzhi import convert, jsonbound
from nyzhi.core import events as ev
from nyzhi.core.runtime.sessions.records import message_to_json
from nyzhi.core.runtime.sessions.store import Session


def _fence(text: str, lang: str = "") -> str:
    """A code block whose fence is longer than any backtick run inside ``text``."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text.rstrip(chr(10))}\n{fence}"


def _pretty_args(arguments: str) -> str:
    try:
        return json.dumps(jsonbound.loads(arguments), indent=2, ensure_ascii=False)
    except ValueError:
        return arguments


def export_markdown(session: Session) -> str:
    meta = session.meta
    out = [f"# {meta.title or 'Untitled session'}", ""]
    facts = [
        ("Session", f"`{meta.id}`"),
        ("Provider / model", f"{meta.provider or '?'} / {meta.model or '?'}"),
        ("Created", meta.created),
        ("Updated", meta.updated),
        ("Directory", f"`{meta.cwd}`" if meta.cwd else ""),
        ("Messages", str(meta.message_count)),
        (
            "Usage",
            f"{meta.usage.get('input_tokens', 0)} in / {meta.usage.get('output_tokens', 0)} out"
            f", ${meta.usage.get('cost_usd', 0.0):.4f}",
        ),
    ]
    out += [f"- **{k}:** {v}" for k, v in facts if v]
    tool_names: dict[str, str] = {}
    for message in session.history:
        out.append("")
        if message.role == "system":
            out += ["## System", "", message.content]
        elif message.role == "user":
            out += ["## User", "", message.content]
        elif message.role == "assistant":
            out += ["## Assistant", ""]
            if message.thinking:
                out += ["<details><summary>Thinking</summary>", "", message.thinking, "",
                        "</details>", ""]
            if message.content:
                out += [message.content, ""]
            for call in message.tool_calls:
                tool_names[call.id] = call.name
                out += [f"### Tool call: `{call.name}` ({call.id})", "",
                        _fence(_pretty_args(call.arguments), "json"), ""]
        else:  # tool result
            name = message.name or tool_names.get(message.tool_call_id or "", "tool")
            label = "Tool error" if message.is_error else "Tool result"
            out += [f"### {label}: `{name}` ({message.tool_call_id or '?'})", "",
                    _fence(message.content)]
    return "\n".join(out).rstrip() + "\n"


def export_json(session: Session) -> dict[str, Any]:
    """``{"meta", "messages" (the resumable thread), "history", "events"}``."""
    return {
        "meta": convert.unstructure(session.meta),
        "messages": [message_to_json(m) for m in session.messages],
        "history": [message_to_json(m) for m in session.history],
        "events": [ev.to_json(e) for e in session.events],
    }


def write_export(path: Path, text: str, *, parents: bool = False) -> None:
    """Write an export (``nyz export -o``, ``/export``) where the user named it, through the
    one atomic write: fsynced, so a crash or a full disk leaves the old file or the whole new
    one. A symlink there is refused (replacing the user's link with a file, or writing through
    it to wherever it points, would both surprise them). ``parents``: make missing folders
    (``/export``); else a mistyped folder is an error. Raises a one-line ``StorageError``."""
    from nyzhi.config.fsutil import atomic_write

    atomic_write(Path(path), text.encode("utf-8"), what="the export", parents=parents,
                 refuse_link=True)
