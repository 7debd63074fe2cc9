"""Plans and notepads: where they live in the workspace, their file format, plan-mode texts.

- A plan is ``<root>/.nyzhi/plans/<session>.plan.md``: front matter (``name``, ``overview``,
  ``todos``) and a markdown body, written by the ``create_plan`` tool. Each value is written
  as JSON on one line (todos one array), with the characters YAML refuses raw escaped, so the
  file is ordinary YAML front matter that the one front matter parser
  (``nyzhi.knowledge.frontmatter``) reads back, hand edits included. A new call merges todos
  by id and replaces the body.
- A notepad is ``<root>/.nyzhi/notepads/<plan>/<category>.md`` (learnings, decisions, issues),
  one ``## [time]`` entry per ``notepad_write``: what a long task learns along the way, kept
  with the project so the next session (or a teammate) can read it.

Plan mode lets the agent investigate with read-only tools only and write the plan; its
instructions travel with each user message (``PLAN_MODE_NOTE``), not in the system prompt,
which stays byte-identical for the session. Leaving plan mode sends ``execute_plan_prompt``.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

from nyzhi.config.modes import TodoStatus, choices
from nyzhi.config.prompt_files import prompt_roots, read_prompt_file
from nyzhi.knowledge import frontmatter as fm

NOTEPAD_CATEGORIES: tuple[str, ...] = ("learnings", "decisions", "issues")
TODO_STATUSES: tuple[str, ...] = choices(TodoStatus)

PLAN_MODE_NOTE = """<plan_mode>
Plan mode is on: only read-only tools run, and anything that changes files or state is refused.
Investigate what the request needs, then write the plan with create_plan (steps, files to
change, how to verify, todos) and summarise it. Do not try to make the changes yet.
</plan_mode>"""


def _safe(name: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", name.strip()).strip("-.")
    if not safe:
        raise ValueError(f"{name!r} is not usable as a file name: use letters and digits")
    return safe[:80]


def plans_dir(root: Path) -> Path:
    return Path(root) / ".nyzhi" / "plans"


def plan_path(root: Path, session_id: str) -> Path:
    return plans_dir(root) / f"{_safe(session_id)}.plan.md"


def execute_plan_prompt(path: Path) -> str:
    """The message that leaves plan mode: act on the plan written while planning."""
    return (
        f"Plan mode is off. Execute the plan in {path}: follow its steps and todos in order, "
        "update the todos as you go, and verify the result."
    )


def render_plan(name: str, overview: str, body: str, todos: list[dict[str, Any]]) -> str:
    return (
        f"---\nname: {_json(name)}\noverview: {_json(overview)}\ntodos: {_json(todos)}\n"
        f"---\n\n{body.strip()}\n"
    )


@functools.cache
def _not_yaml() -> re.Pattern[str]:
    """What YAML does not read back as written (C0 and C1 controls, DEL, its own line breaks
    NEL, LS and PS, surrogates, U+FFFE/F): JSON leaves them raw, so they are written as \\uXXXX
    escapes, which JSON and YAML read alike. Compiled at the first plan written, not at import
    (its Unicode ranges take milliseconds to compile, on every start-up)."""
    return re.compile(
        r"[^\x09\x0a\x0d\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
    )


def _json(value: Any) -> str:
    """``value`` as one line of JSON that is also valid YAML."""
    text = json.dumps(value, ensure_ascii=False)
    return _not_yaml().sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def read_plan(path: Path, root: Path | None = None) -> tuple[dict[str, Any], str]:
    """(front matter with ``todos`` as a list, body); an absent or hand-mangled file gives
    what could be read ({} and "" at worst; front matter that is not YAML: no fields). The
    file must resolve inside ``root`` (default: the workspace holding ``.nyzhi/plans``), as
    every prompt file (``config.prompt_files``)."""
    root = root if root is not None else path.parent.parent.parent
    try:
        text = read_prompt_file(path, prompt_roots(root))
    except (FileNotFoundError, NotADirectoryError):
        return {}, ""
    try:
        meta, body = fm.split_front_matter(text, path)
    except fm.FrontMatterError:
        meta, body = {}, text.split("\n---", 2)[-1].strip() if text.startswith("---") else text
    todos = meta.get("todos")
    meta["todos"] = [t for t in todos if isinstance(t, dict) and "id" in t] if isinstance(
        todos, list) else []
    return meta, body


def merge_todos(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``old`` updated by id from ``new`` (new ids appended, in order)."""
    merged = [dict(t) for t in old]
    by_id = {str(t["id"]): t for t in merged}
    for item in new:
        tid = str(item["id"])
        if tid in by_id:
            by_id[tid].update({k: v for k, v in item.items() if v is not None})
        else:
            entry = {"id": tid, "content": item.get("content", ""),
                     "status": item.get("status") or TodoStatus.PENDING}
            merged.append(entry)
            by_id[tid] = entry
    return merged


def read_notepad(root: Path, path: Path) -> str:
    """A notepad file's text ("" when absent); refused like any prompt file when it resolves
    outside the workspace ``root``."""
    try:
        return read_prompt_file(path, prompt_roots(root))
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return ""


def notepads_dir(root: Path) -> Path:
    return Path(root) / ".nyzhi" / "notepads"


def notepad_path(root: Path, plan: str, category: str) -> Path:
    if category not in NOTEPAD_CATEGORIES:
        raise ValueError(
            f"category must be one of {', '.join(NOTEPAD_CATEGORIES)}, got {category!r}"
        )
    return notepads_dir(root) / _safe(plan) / f"{category}.md"


def list_notepads(root: Path) -> list[str]:
    base = notepads_dir(root)
    return sorted(p.name for p in base.iterdir() if p.is_dir()) if base.is_dir() else []
