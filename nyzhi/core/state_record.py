"""The state record compaction keeps verbatim: facts the runtime knows, not the model's memory.

A compaction replaces older history by the model's summary, and a summary can be empty, vague
or wrong. The facts the agent needs to carry on are known to the runtime without asking the
model, so they are kept next to the summary (never inside it), word for word:

* the user's first prompt of the session (what the work is for);
* the todo list (the ``todowrite`` tool's state);
* the files created, edited or deleted through tools, with paths (the tools' change log);
* the last failing command, with the end of its output.

``StateKeeper`` builds the record when a compaction happens. The record is saved with the
compacted thread (``SessionWriter.replace_thread(..., state=record.to_json())``), so a resumed
session starts from it: its first prompt and files carry forward, and files written after the
snapshot are read back from the log's ``tool_done`` events.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from nyzhi import records
from nyzhi.core import events as ev
from nyzhi.provider.types import Message

if TYPE_CHECKING:
    from nyzhi.core.sessions.store import Session
    from nyzhi.tools.base import ChangeLog, ToolContext

HEADER = "[Session state, kept by nyz verbatim (not a summary)]"
PROMPT_LIMIT = 4000  # characters of the first prompt kept (a piped file can be huge)
OUTPUT_LINES = 12  # lines of a failing command's output kept (its end, where errors are)
OUTPUT_CHARS = 1500
ACTIONS = ("created", "edited", "deleted", "changed")  # "changed": known from a log, kind unknown


@records.frozen
class Failure:
    """The last command that failed: what ran and how its output ended."""

    command: str
    output: str = ""


@records.frozen
class StateRecord:
    first_prompt: str = ""
    todos: tuple[dict[str, Any], ...] = attrs.field(default=(), converter=tuple)
    # (path, action) in first-touched order; action is one of ACTIONS
    files: tuple[tuple[str, str], ...] = attrs.field(default=(), converter=tuple)
    last_failure: Failure | None = None
    # tokens per character per "provider/model" (nyzhi.core.context_window.Calibration): not
    # rendered for the model, saved so a resumed session estimates like the one it continues
    calibration: dict[str, float] = attrs.field(factory=dict)

    def render(self) -> str:
        from nyzhi.tools.builtin.planning import render as render_todos

        lines = [HEADER, "First request of the session:", _indent(self.first_prompt or "(none)")]
        lines += ["Todos:", _indent(render_todos(list(self.todos)))]
        if self.files:
            lines.append("Files changed in this session:")
            lines += [f"  {action} {path}" for path, action in self.files]
        else:
            lines.append("Files changed in this session: none")
        if self.last_failure is not None:
            lines.append(f"Last failing command: {self.last_failure.command}")
            if self.last_failure.output:
                lines.append(_indent(self.last_failure.output))
        else:
            lines.append("Last failing command: none")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "first_prompt": self.first_prompt,
            "todos": [dict(t) for t in self.todos],
            "files": [{"path": p, "action": a} for p, a in self.files],
            "last_failure": attrs.asdict(self.last_failure) if self.last_failure else None,
            "calibration": dict(self.calibration),
        }

    @classmethod
    def from_json(cls, data: Any) -> StateRecord:
        """Tolerant: a field of the wrong shape is left empty (a newer or damaged log must
        not stop a resume)."""
        if not isinstance(data, dict):
            return cls()
        prompt = data.get("first_prompt")
        todos = [t for t in data.get("todos") or () if isinstance(t, dict) and "id" in t]
        files = [
            (str(f["path"]), f["action"] if f.get("action") in ACTIONS else "changed")
            for f in data.get("files") or ()
            if isinstance(f, dict) and isinstance(f.get("path"), str)
        ]
        failure = data.get("last_failure")
        last = (
            Failure(failure["command"], str(failure.get("output", "")))
            if isinstance(failure, dict) and isinstance(failure.get("command"), str)
            else None
        )
        from nyzhi.core.context_window import parse_ratios

        return cls(prompt if isinstance(prompt, str) else "", todos, files, last,
                   parse_ratios(data.get("calibration")))


class StateKeeper:
    """Builds an agent's state record from its tool context and thread.

    ``base`` is what an earlier process of the session knew (the record saved at the last
    compaction, plus the files its tools wrote after it); this process's file changes come
    from the tool context's change log, which holds all of them (an ``/undo`` removes its
    entries, so an undone change is not reported).
    """

    def __init__(
        self, context: ToolContext, resumed: Session | None = None,
        calibration: Callable[[], dict[str, float]] | None = None,
    ) -> None:
        self._context = context
        self._base = _base_from_session(resumed, Path(context.workspace_root))
        self._calibration = calibration  # the runtime's current ratios
        self.current: StateRecord | None = None

    def build(self, messages: Sequence[Message]) -> StateRecord:
        from nyzhi.tools.builtin.planning import load_todos

        previous = self.current or self._base
        root = Path(self._context.workspace_root)
        files = _merge(self._base.files, _from_change_log(self._context.changes, root))
        self.current = StateRecord(
            first_prompt=previous.first_prompt or _first_prompt(messages),
            todos=[dict(t) for t in load_todos(self._context)],
            files=files,
            last_failure=last_failure(messages) or previous.last_failure,
            calibration=(self._calibration() if self._calibration is not None
                         else previous.calibration),
        )
        return self.current


# ---- the parts ---------------------------------------------------------------------------


def _indent(text: str) -> str:
    return "\n".join(f"  {line}" if line else "" for line in text.splitlines()) or "  "


def _first_prompt(messages: Sequence[Message]) -> str:
    from nyzhi.core.compaction import SUMMARY_HEADER

    for m in messages:
        if m.role == "user" and m.content and not m.content.startswith(SUMMARY_HEADER):
            text = m.content
            if len(text) > PROMPT_LIMIT:
                text = text[:PROMPT_LIMIT] + f"\n[... cut: {len(m.content)} characters in all]"
            return text
    return ""


def last_failure(messages: Sequence[Message]) -> Failure | None:
    """The last failed tool call that ran a command (a ``command`` argument), or None."""
    commands: dict[str, str] = {}
    found: Failure | None = None
    for m in messages:
        for call in m.tool_calls:
            command = _command(call.arguments)
            if command is not None:
                commands[call.id] = command
        if m.role == "tool" and m.is_error and m.tool_call_id in commands:
            found = Failure(commands[m.tool_call_id], _tail(m.content))
    return found


def _command(arguments: str) -> str | None:
    try:
        args = json.loads(arguments or "{}")
    except ValueError:
        return None
    command = args.get("command") if isinstance(args, dict) else None
    return command if isinstance(command, str) and command.strip() else None


def _tail(output: str) -> str:
    lines = output.rstrip().splitlines()[-OUTPUT_LINES:]
    return "\n".join(lines)[-OUTPUT_CHARS:]


def _display(path: Path | str, root: Path) -> str:
    p = Path(path)
    try:
        return str(p.relative_to(root))
    except ValueError:
        return str(p)


def _from_change_log(changes: ChangeLog, root: Path) -> list[tuple[str, str]]:
    """Net effect per file of this process's recorded changes (directories left out)."""
    first_before: dict[str, bool] = {}  # path -> existed before its first change
    last_after: dict[str, bool] = {}  # path -> exists after its last change
    for change in changes.changes:
        if change.kind != "file":
            continue
        key = _display(change.path, root)
        first_before.setdefault(key, change.before is not None)
        last_after[key] = change.after is not None
    out = []
    for key, existed in first_before.items():
        exists = last_after[key]
        if existed and exists:
            out.append((key, "edited"))
        elif existed:
            out.append((key, "deleted"))
        elif exists:
            out.append((key, "created"))
        # created and deleted again: no change left to report
    return out


def _then(earlier: str | None, later: str) -> str | None:
    """One path's action after an ``earlier`` one (None: nothing to report) and a ``later``."""
    if earlier is None:
        return later
    if earlier == "created":
        return None if later == "deleted" else "created"
    if later == "changed":
        return "edited" if earlier == "deleted" else earlier
    if earlier == "deleted" and later == "created":
        return "edited"
    return later


def _merge(*groups: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    merged: dict[str, str | None] = {}
    for group in groups:
        for path, action in group:
            merged[path] = _then(merged.get(path), action)
    return [(p, a) for p, a in merged.items() if a is not None]


def _base_from_session(session: Session | None, root: Path) -> StateRecord:
    """What a resumed session knew: its saved record plus files written after it."""
    if session is None:
        return StateRecord()
    saved = StateRecord.from_json(session.state)
    later: list[tuple[str, str]] = []
    for event in session.events[session.snapshot_events :]:
        if (
            isinstance(event, ev.ToolDone)
            and event.agent == ev.MAIN_AGENT
            and not event.is_error
            and isinstance(event.metadata.get("paths"), list)
        ):
            action = "deleted" if event.name == "delete_file" else "changed"
            later += [(_display(p, root), action) for p in event.metadata["paths"]]
    return attrs.evolve(saved, files=_merge(saved.files, later))
