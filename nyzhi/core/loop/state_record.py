"""The state record compaction keeps verbatim: facts the runtime knows, not the model's memory.

A compaction replaces older history by the model's summary, and a summary can be empty, vague
or wrong. The facts the agent needs to carry on are known to the runtime without asking the
model, so they are kept next to the summary (never inside it), word for word:

* the user's first prompt of the session (what the work is for);
* the todo list (the ``todowrite`` tool's state);
* the files created, edited or deleted through tools, with paths (the tools' change log);
* the last failing command, with the end of its output;
* what the agent last saw of each file (the stale-write guard's ledger, ``nyzhi.tools.ledger``):
  kept but not rendered, so a compacted or resumed agent does not have to read everything
  again before it may write.

``StateKeeper`` builds the record when a compaction happens. The record is saved with the
compacted thread (``SessionWriter.replace_thread(..., state=convert.unstructure(record))``), so a resumed
session starts from it: its first prompt and files carry forward, and files written after the
snapshot are read back from the log's ``tool_done`` events.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from nyzhi import convert, jsonbound, records
from nyzhi.config.paths import display_path
from nyzhi.core import events as ev
from nyzhi.provider.types import Message
from nyzhi.tools.ledger import SeenFile

if TYPE_CHECKING:
    from nyzhi.core.runtime.sessions.store import Session
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


def _prompt(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _todos(value: Any) -> list[dict[str, Any]]:
    return [t for t in value if isinstance(t, dict) and "id" in t] if isinstance(value, list) else []


def _files(value: Any) -> list[tuple[str, str]]:
    """``[{"path", "action"}]`` on disk; an unknown action reads as ``changed``."""
    if not isinstance(value, list):
        return []
    return [
        (str(f["path"]), f["action"] if f.get("action") in ACTIONS else "changed")
        for f in value if isinstance(f, dict) and isinstance(f.get("path"), str)
    ]


def _seen(value: Any) -> tuple[SeenFile, ...] | None:
    """The stale-write ledger; malformed entries are skipped."""
    if not isinstance(value, list):
        return None
    return tuple(
        SeenFile(v["path"], v["sha256"], v["mtime_ns"] if isinstance(v.get("mtime_ns"), int) else 0)
        for v in value
        if isinstance(v, dict) and isinstance(v.get("path"), str) and isinstance(v.get("sha256"), str)
    )


def _ratios(value: Any) -> dict[str, float] | None:
    from nyzhi.core.loop.context_window import parse_ratios

    return parse_ratios(value) or None


def _failure(value: Any) -> Failure | None:
    if isinstance(value, dict) and isinstance(value.get("command"), str):
        return Failure(value["command"], str(value.get("output", "")))
    return None


# Read leniently: a field of the wrong shape is left empty (a newer or damaged log must not
# stop a resume). Files are written as objects ({"path", "action"}), not pairs.
@convert.wire(
    read={"first_prompt": _prompt, "todos": _todos, "files": _files, "last_failure": _failure,
          "seen": _seen, "calibration": _ratios},
    write={"files": lambda files: [{"path": p, "action": a} for p, a in files]},
    omit_if_none=("seen", "calibration"),
)
@records.frozen
class StateRecord:
    first_prompt: str = ""
    todos: tuple[dict[str, Any], ...] = attrs.field(default=(), converter=records.as_tuple)
    # (path, action) in first-touched order; action is one of ACTIONS
    files: tuple[tuple[str, str], ...] = attrs.field(default=(), converter=records.as_tuple)
    last_failure: Failure | None = None
    # The stale-write ledger (nyzhi.tools.ledger.FileLedger.snapshot()); None (left out of the
    # JSON, so records without it read and write as before) when the agent has seen nothing.
    seen: tuple[SeenFile, ...] | None = None
    # Tokens per character per "provider/model" (nyzhi.core.loop.context_window.Calibration): not
    # rendered for the model, saved so a resumed session estimates like the one it continues.
    # None (left out of the JSON) while nothing was learnt.
    calibration: dict[str, float] | None = None

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


def read_state(data: Any) -> StateRecord:
    """The state record saved with a compacted thread; an empty one when there is none or it
    is not an object."""
    try:
        return convert.structure(data, StateRecord, "state record")
    except convert.RecordError:
        return StateRecord()


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
        self._later_seen = _seen_after_snapshot(resumed)
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
            seen=(self._context.seen.snapshot() or None) if self._context.seen is not None else None,
            calibration=((self._calibration() if self._calibration is not None
                          else previous.calibration) or None),
        )
        return self.current

    def restore_ledger(self) -> None:
        """Give a resumed agent back what it had seen of each file: the saved record's ledger,
        then the ``seen`` metadata of its tool results logged after it."""
        ledger = self._context.seen
        if ledger is not None:
            ledger.restore(self._base.seen or ())
            ledger.merge(self._later_seen)


# ---- the parts ---------------------------------------------------------------------------


def _indent(text: str) -> str:
    return "\n".join(f"  {line}" if line else "" for line in text.splitlines()) or "  "


def _first_prompt(messages: Sequence[Message]) -> str:
    from nyzhi.core.loop.compaction import SUMMARY_HEADER

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
        args = jsonbound.loads(arguments or "{}")
    except ValueError:
        return None
    command = args.get("command") if isinstance(args, dict) else None
    return command if isinstance(command, str) and command.strip() else None


def _tail(output: str) -> str:
    lines = output.rstrip().splitlines()[-OUTPUT_LINES:]
    return "\n".join(lines)[-OUTPUT_CHARS:]


def _from_change_log(changes: ChangeLog, root: Path) -> list[tuple[str, str]]:
    """Net effect per file of this process's recorded changes (directories left out)."""
    first_before: dict[str, bool] = {}  # path -> existed before its first change
    last_after: dict[str, bool] = {}  # path -> exists after its last change
    for change in changes.changes:
        if change.kind != "file":
            continue
        key = display_path(change.path, root)
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


def _seen_after_snapshot(session: Session | None) -> dict[str, Any]:
    """The main agent's ``seen`` metadata (path -> sha256 or None) of the tool results logged
    after the session's last snapshot, in order (later entries win)."""
    seen: dict[str, Any] = {}
    if session is None:
        return seen
    for event in session.events[session.snapshot_events :]:
        if (
            isinstance(event, ev.ToolDone)
            and event.agent == ev.MAIN_AGENT
            and not event.is_error
            and isinstance(event.metadata.get("seen"), dict)
        ):
            seen.update(event.metadata["seen"])
    return seen


def _base_from_session(session: Session | None, root: Path) -> StateRecord:
    """What a resumed session knew: its saved record plus files written after it."""
    if session is None:
        return StateRecord()
    saved = read_state(session.state)
    later: list[tuple[str, str]] = []
    for event in session.events[session.snapshot_events :]:
        if (
            isinstance(event, ev.ToolDone)
            and event.agent == ev.MAIN_AGENT
            and not event.is_error
            and isinstance(event.metadata.get("paths"), list)
        ):
            action = "deleted" if event.name == "delete_file" else "changed"
            later += [(display_path(p, root), action) for p in event.metadata["paths"]]
    return attrs.evolve(saved, files=_merge(saved.files, later))
