"""The main agent's conversation as a Claude Code transcript, for hooks' ``transcript_path``.

Claude Code hooks get the path of the session's transcript, a JSONL file of one object per
message, and many read it (a Stop hook looking for the last answer, a loop counting turns).
nyz's own session log has another shape, so when Claude Code hooks are configured the runtime
also writes this file, at ``data_dir()/transcripts/<session id>.jsonl`` (mode 0600): each line
carries ``type`` (``user`` or ``assistant``), ``message`` (``role`` and ``content``: the
prompt as a string; an answer as ``text`` and ``tool_use`` blocks with Claude Code's tool and
parameter names; tool results as ``tool_result`` blocks with ``tool_use_id`` and
``is_error``), ``uuid``, ``parentUuid``, ``sessionId``, ``cwd``, ``timestamp`` and
``isSidechain`` (false). What nyz cannot give is left out: Claude Code's usage figures,
request ids and version. Only the main agent's messages are written; text and tool results
are the redacted ones the event bus carries.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from typing import Any

from nyzhi.core import events as ev
from nyzhi.tools.claude_names import claude_tool_inputs, claude_tool_name


def transcript_path(session_id: str, env: Any = None) -> Path:
    from nyzhi.config.paths import data_dir

    return data_dir(env) / "transcripts" / f"{session_id}.jsonl"


class ClaudeTranscript:
    """A bus listener (``only=LISTENS``) appending the main agent's messages to ``path``."""

    LISTENS = (ev.TurnStart, ev.TextDelta, ev.ToolStart, ev.ToolDone, ev.TurnComplete)

    def __init__(self, path: Path, session_id: str, cwd: str) -> None:
        self.path = path
        self.session_id = session_id
        self.cwd = cwd
        self._parent: str | None = None
        self._text: list[str] = []
        self._failed = False

    async def __call__(self, event: ev.Event) -> None:
        if event.agent != ev.MAIN_AGENT or self._failed:
            return
        if isinstance(event, ev.TextDelta):
            self._text.append(event.text)
        elif isinstance(event, ev.TurnStart):
            self._write("user", {"role": "user", "content": event.prompt})
        elif isinstance(event, ev.ToolStart):
            content = self._flush_text()
            name = claude_tool_name(event.name)
            try:
                args = json.loads(event.arguments or "{}")
            except ValueError:
                args = {}
            tool_input = claude_tool_inputs(event.name, args if isinstance(args, dict) else {},
                                            self.cwd)[0]
            content.append({"type": "tool_use", "id": event.call_id, "name": name,
                            "input": tool_input})
            self._write("assistant", {"role": "assistant", "content": content})
        elif isinstance(event, ev.ToolDone):
            self._write("user", {"role": "user", "content": [{
                "type": "tool_result", "tool_use_id": event.call_id, "content": event.output,
                "is_error": event.is_error}]})
        elif isinstance(event, ev.TurnComplete):
            content = self._flush_text()
            if not content and event.text:
                content = [{"type": "text", "text": event.text}]
            if content:
                self._write("assistant", {"role": "assistant", "content": content})

    def _flush_text(self) -> list[dict[str, Any]]:
        text = "".join(self._text)
        self._text.clear()
        return [{"type": "text", "text": text}] if text else []

    def _write(self, kind: str, message: dict[str, Any]) -> None:
        line_id = str(uuid.uuid4())
        record = {
            "parentUuid": self._parent, "isSidechain": False, "type": kind,
            "message": message, "uuid": line_id, "sessionId": self.session_id,
            "cwd": self.cwd,
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + "Z",
        }
        self._parent = line_id
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            with os.fdopen(fd, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        except OSError:
            self._failed = True  # hooks then read what was written; the run goes on
