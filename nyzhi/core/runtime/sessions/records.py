"""The on-disk vocabulary of a session: log record kinds, message codec, metadata.

A session log ``<id>.jsonl`` is a sequence of JSON objects, one per line, each tagged by
``"kind"``:

``header``
    first line: ``v`` (format version), ``id``, ``created``, ``cwd``, ``workspace_root``,
    ``provider``, ``model``. Enough to rebuild the metadata file from the log alone.
``message``
    ``message``: one thread message (user, assistant with tool calls and thinking, tool result).
    Appending messages in order rebuilds the thread a resumed agent continues from.
``thread``
    ``messages``: the thread was replaced wholesale (after compaction: summary + recent
    messages). Resume starts from the last such snapshot plus the messages after it; the
    full history stays earlier in the log for export. ``state`` (optional): the runtime's
    state record at that compaction (``nyzhi.core.loop.state_record``), so a resume keeps it.
``event``
    ``event``: one ``nyzhi.core.events`` event (codec ``events.to_json``), for replay.
    One event is also a thread message: a main-agent ``tool_done`` whose ``metadata`` has
    ``"interrupted": true`` is written on resume for a tool call the log has no result for
    (nyz was killed while it ran), and loads as that call's result (``pairing``). Being one
    line, a kill while writing it leaves the call either answered and marked, or neither.
``title``
    ``title``: the session was (re)named.

Every record also carries ``ts`` (seconds since the epoch, float). Unknown kinds are skipped
on load so that newer logs stay readable.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from typing import Any

import attrs

from nyzhi import convert, records
from nyzhi.provider.types import ImagePart, Message, ToolCall

FORMAT_VERSION = 1
TITLE_LIMIT = 80


class SessionError(Exception):
    """Base of session errors (user-facing messages)."""


class SessionNotFound(SessionError):
    pass


class AmbiguousSession(SessionError):
    def __init__(self, query: str, candidates: list[SessionMeta]) -> None:
        self.query = query
        self.candidates = candidates
        lines = [f"{m.id[:8]}  {m.title or '(untitled)'}" for m in candidates[:10]]
        more = f"\n  ... and {len(candidates) - 10} more" if len(candidates) > 10 else ""
        super().__init__(
            f"{len(candidates)} sessions match {query!r}; use a longer id prefix:\n  "
            + "\n  ".join(lines)
            + more
        )


def now_iso() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="microseconds")


def iso_from_ts(ts: float) -> str:
    return _dt.datetime.fromtimestamp(ts, _dt.UTC).isoformat(timespec="microseconds")


def empty_usage() -> dict[str, Any]:
    return {
        "input_tokens": 0,
        "output_tokens": 0,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
        "cost_usd": 0.0,
    }


def _usage(value: Any) -> dict[str, Any]:
    """Usage totals with every key (an older meta file may lack some)."""
    if not isinstance(value, dict):
        raise TypeError(f"must be an object, found {value!r:.80}")
    return {**empty_usage(), **value}


@convert.wire(read={"usage": _usage})
@records.define
class SessionMeta:
    """The small per-session summary kept in ``<id>.meta.json`` (a cache of the log).

    ``log_size`` is the log's byte size when the meta was written; a different size on disk
    means the meta is stale (a crash between a log append and the meta rewrite) and readers
    rebuild it from the log.
    """

    id: str
    title: str = ""
    created: str = ""
    updated: str = ""
    cwd: str = ""
    workspace_root: str = ""
    provider: str = ""
    model: str = ""
    message_count: int = 0
    usage: dict[str, Any] = attrs.field(factory=empty_usage)
    log_size: int = 0


def auto_title(prompt: str) -> str:
    """The first user prompt on one line, cut to ``TITLE_LIMIT`` characters."""
    text = " ".join(prompt.split())
    if len(text) > TITLE_LIMIT:
        text = text[: TITLE_LIMIT - 3].rstrip() + "..."
    return text


def message_to_json(message: Message) -> dict[str, Any]:
    """A compact dict: fields at their default value are left out."""
    out: dict[str, Any] = {"role": message.role}
    if message.content:
        out["content"] = message.content
    if message.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls
        ]
    for key in ("tool_call_id", "name", "thinking", "thinking_signature"):
        value = getattr(message, key)
        if value is not None:
            out[key] = value
    if message.is_error:
        out["is_error"] = True
    if message.images:  # by reference: the bytes are stored once, beside the log
        out["images"] = [{"sha256": i.sha256, "media_type": i.media_type} for i in message.images]
    return out


# Reads a stored image back by (sha256, media type); None when it is gone.
ImageLoader = Callable[[str, str], "ImagePart | None"]


def message_from_json(data: dict[str, Any], load_image: ImageLoader | None = None) -> Message:
    if not isinstance(data, dict) or data.get("role") not in ("system", "user", "assistant", "tool"):
        raise ValueError(f"not a message: {data!r:.80}")
    calls = tuple(
        ToolCall(id=str(c["id"]), name=str(c["name"]), arguments=str(c.get("arguments", "")))
        for c in data.get("tool_calls") or ()
    )
    return Message(
        role=data["role"],
        content=str(data.get("content", "")),
        tool_calls=calls,
        tool_call_id=data.get("tool_call_id"),
        name=data.get("name"),
        is_error=bool(data.get("is_error", False)),
        thinking=data.get("thinking"),
        thinking_signature=data.get("thinking_signature"),
        images=_images(data.get("images"), load_image),
    )


def _images(refs: Any, load_image: ImageLoader | None) -> tuple[ImagePart, ...]:
    if not refs or load_image is None or not isinstance(refs, list):
        return ()
    found = (load_image(str(r.get("sha256", "")), str(r.get("media_type", "")))
             for r in refs if isinstance(r, dict))
    return tuple(i for i in found if i is not None)
