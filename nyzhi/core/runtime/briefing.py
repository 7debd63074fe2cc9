"""The context briefing a subagent gets from its parent at spawn.

A child starts with an empty thread; without a briefing it would re-discover what its parent
just did (which files changed, what the plan is, what the user asked). The briefing is a
short section appended to the child's system prompt: the project root, the parent's recent
file changes (net effect per path, newest first), its open todos, and a preview of its last
messages, capped at ``MAX_LINES`` so it never crowds out the task.

Pure functions of the parent's state; nothing here reads files or talks to actors.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from nyzhi.config.modes import TODO_MARKS, TodoStatus
from nyzhi.config.paths import display_path
from nyzhi.textcut import cut

HEADING = "# Context Briefing (from parent)"
MAX_LINES = 60
MAX_CHANGES = 20
MAX_MESSAGES = 5
PREVIEW_CHARS = 200



def build_briefing(
    project_root: Path | str,
    *,
    changes: Iterable[Any] = (),
    todos: Iterable[Mapping[str, Any]] = (),
    messages: Sequence[Any] = (),
    max_lines: int = MAX_LINES,
) -> str:
    """The briefing text.

    ``changes`` are ``FileChange`` records in the order they happened (a ``ChangeLog``'s
    ``changes``); ``todos`` the todo items (``id``, ``content``, ``status``); ``messages`` the
    parent's thread (``Message`` objects with ``role``, ``content``, ``tool_calls``).
    """
    root = Path(project_root)
    lines = [HEADING, f"Project root: {root}"]
    changed = change_lines(changes, root)
    if changed:
        lines += ["", "## Recent File Changes", *changed]
    active = todo_lines(todos)
    if active:
        lines += ["", "## Active Todos", *active]
    recent = message_lines(messages)
    if recent:
        lines += ["", "## Recent Conversation", *recent]
    if len(lines) > max_lines:
        lines = lines[: max_lines - 1] + ["… (briefing truncated)"]
    return "\n".join(lines)


def change_lines(changes: Iterable[Any], root: Path, limit: int = MAX_CHANGES) -> list[str]:
    """One line per path, newest change first: its net effect over the whole log (a file
    created and then edited is "created"), at most ``limit`` and an "… and N more" line."""
    first_before: dict[Path, Any] = {}
    last: dict[Path, Any] = {}
    for change in changes:
        path = Path(change.path)
        first_before.setdefault(path, change.before)
        last.pop(path, None)  # re-insert: dict order becomes "last touched"
        last[path] = change
    newest = list(reversed(last))
    out = []
    for path in newest[:limit]:
        change = last[path]
        before, after = first_before[path], change.after
        is_dir = getattr(change, "kind", "file") == "dir"
        if before is None and after is None:
            verb = "created and removed"
        elif before is None:
            verb = "created"
        elif after is None:
            verb = "deleted"
        else:
            verb = "modified"
        shown = display_path(path, root) + ("/" if is_dir else "")
        out.append(f"- {verb} {shown}")
    if len(newest) > limit:
        out.append(f"- … and {len(newest) - limit} more")
    return out


def todo_lines(todos: Iterable[Mapping[str, Any]]) -> list[str]:
    """Todos that are neither completed nor cancelled."""
    out = []
    for todo in todos:
        status = str(todo.get("status", TodoStatus.PENDING))
        if status in (TodoStatus.COMPLETED, TodoStatus.CANCELLED):
            continue
        mark = TODO_MARKS.get(status, "[?]")
        out.append(f"- {mark} {todo.get('id', '?')}: {_one_line(str(todo.get('content', '')))}")
    return out


def message_lines(messages: Sequence[Any], count: int = MAX_MESSAGES) -> list[str]:
    """The last ``count`` user and assistant messages, each on one line of at most
    ``PREVIEW_CHARS`` characters. Tool results are left out; an assistant message that only
    called tools says which."""
    shown = []
    for message in reversed(messages):
        role = getattr(message, "role", "")
        if role not in ("user", "assistant"):
            continue
        text = _one_line(getattr(message, "content", "") or "")
        if not text and role == "assistant":
            names = [c.name for c in getattr(message, "tool_calls", ()) or ()]
            text = f"(called {', '.join(names)})" if names else ""
        if not text:
            continue
        shown.append(f"- {role}: {cut(text, PREVIEW_CHARS, one_line=False, rstrip=True)}")
        if len(shown) == count:
            break
    return list(reversed(shown))


def _one_line(text: str) -> str:
    return " ".join(text.split())


def briefing_from_context(context: Any, messages: Sequence[Any]) -> str:
    """The briefing for a child of the agent whose ``ToolContext`` is ``context`` and whose
    thread is ``messages``: its change log, its todos (``context.state["todos"]``) and root."""
    return build_briefing(
        context.workspace_root,
        changes=context.changes.changes,
        todos=context.state.get("todos") or (),
        messages=messages,
    )
