"""Auto-compaction: summarise older history with the model, keep the recent messages.

The full history is saved first (JSONL, one message per line, in the session log's message
format: ``sessions.records.message_to_json``, which ``message_from_json`` reads back) so
nothing is lost; the thread is then rebuilt as a summary message followed by the most recent
messages. The cut never separates an assistant's tool calls from their results, so the thread
stays valid for every wire format.

The summary message also carries the runtime's state record (``nyzhi.core.loop.state_record``)
verbatim, in its own section after the model's summary: the first prompt, todos, changed files
and last failing command survive even when the model's summary is empty or wrong.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from nyzhi import records
from nyzhi.config.scaffold import ignore_runtime_files
from nyzhi.core.runtime.sessions.records import message_to_json
from nyzhi.oserror import StorageError
from nyzhi.provider.types import ChatRequest, Message, Provider, TextDelta

if TYPE_CHECKING:
    from nyzhi.core.loop.state_record import StateRecord

SUMMARY_PROMPT = """Summarise the conversation so far so that work can continue from the summary alone.
Use these sections: Primary request; Key decisions; Files touched; Errors and fixes;
Current state; Pending tasks; Next step. Be specific (paths, names, commands); no preamble."""

KEEP_RECENT_MESSAGES = 6
SUMMARY_HEADER = "[Conversation summary]"


@records.frozen
class CompactionResult:
    messages: list[Message]
    summary: str
    archived_path: Path | None
    removed: int
    state: StateRecord | None = None


def cut_index(messages: list[Message], keep_recent: int = KEEP_RECENT_MESSAGES) -> int:
    """Index where the kept tail starts: at least ``keep_recent`` messages from the end,
    moved back so the tail starts on a user message or an assistant message (never on a
    tool result, whose call would be cut off)."""
    i = max(0, len(messages) - keep_recent)
    while i > 0 and messages[i].role == "tool":
        i -= 1
    return i


def archive_history(messages: Sequence[Message], directory: Path, stem: str) -> Path:
    """Write the whole thread to ``directory/stem-N.jsonl`` (a new file each time), fsynced.
    Blocking: ``compact`` runs it in a worker thread.

    On a full or read-only disk the partial file is removed and ``StorageError`` names it:
    compaction does not go on without its archive, so the thread stays whole."""
    path = directory / f"{stem}-1.jsonl"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        ignore_runtime_files(directory)  # under .nyzhi/: listed in its .gitignore first
        n = 1
        while (directory / f"{stem}-{n}.jsonl").exists():
            n += 1
        path = directory / f"{stem}-{n}.jsonl"
        with open(path, "w", encoding="utf-8") as fh:
            for m in messages:
                fh.write(json.dumps(message_to_json(m), ensure_ascii=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        with contextlib.suppress(OSError):
            path.unlink()
        raise StorageError.wrap(
            exc, "write the compaction archive", path, "the thread was not compacted"
        ) from exc
    return path


def render_for_summary(messages: list[Message]) -> str:
    lines = []
    for m in messages:
        if m.role == "tool":
            lines.append(f"[tool result {m.name or ''}]\n{m.content[:2000]}")
        elif m.tool_calls:
            calls = ", ".join(f"{c.name}({c.arguments[:200]})" for c in m.tool_calls)
            lines.append(f"[{m.role}] {m.content}\n[calls] {calls}")
        else:
            lines.append(f"[{m.role}] {m.content}")
    return "\n\n".join(lines)


async def summarize(
    provider: Provider, messages: Sequence[Message], prompt: str,
    system: str = "You write precise working summaries of coding sessions.",
) -> str:
    """One model call: ``messages`` rendered as text, then ``prompt``; the answer's text.
    Compaction's summary and ``/handoff``'s note."""
    request = ChatRequest(
        messages=(Message("user", render_for_summary(list(messages)) + "\n\n" + prompt),),
        system=system,
        temperature=0,
    )
    parts: list[str] = []
    async with contextlib.aclosing(provider.stream(request)) as stream:
        async for event in stream:
            if isinstance(event, TextDelta):
                parts.append(event.text)
    return "".join(parts).strip()


async def compact(
    provider: Provider,
    messages: list[Message],
    *,
    archive_dir: Path | None,
    stem: str,
    keep_recent: int = KEEP_RECENT_MESSAGES,
    instructions: str = "",
    state: StateRecord | None = None,
) -> CompactionResult | None:
    """Summarise ``messages[:cut]`` with the model. Returns None when there is too little to
    compact (everything would be kept). ``state`` is put verbatim after the summary."""
    cut = cut_index(messages, keep_recent)
    if cut <= 1:
        return None
    archived = None
    if archive_dir:
        # Writing and fsyncing can stall on a slow disk: keep it off the trio thread, where
        # it would stall every agent. A snapshot, since the thread is not ours to freeze.
        archived = await trio.to_thread.run_sync(
            archive_history, tuple(messages), archive_dir, stem
        )
    prompt = SUMMARY_PROMPT + (f"\nAlso: {instructions}" if instructions else "")
    summary = await summarize(provider, messages[:cut], prompt) or "(no summary)"
    sections = [f"{SUMMARY_HEADER}\n{summary}"]
    if state is not None:
        sections.append(state.render())
    sections.append("[Working state restored after compaction]")
    head = Message("user", "\n\n".join(sections))
    kept = messages[cut:]
    # Most wire formats want user/assistant alternation: an ack keeps it when the tail
    # starts with a user message.
    if kept and kept[0].role == "user":
        new = [head, Message("assistant", "Understood; continuing from the summary."), *kept]
    else:
        new = [head, *kept]
    return CompactionResult(new, summary, archived, cut, state)
