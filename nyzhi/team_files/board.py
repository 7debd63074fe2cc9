"""The team's task board: one JSON file per task, dependencies, and claiming.

``tasks/<team>/<id>.json`` per task, ids "1", "2", ... from ``.highwatermark``. Every change
happens under ``tasks/<team>/.lock``, so the checks and the write are one step for every
process of the team: of two members claiming one task, the second sees the first's owner.

Dependencies: ``blocked_by`` is the truth, ``blocks`` its mirror (for display). A task with
unfinished blockers is ``blocked``; completing (or deleting) a task removes it from its
dependents' ``blocked_by`` and flips those left with none from ``blocked`` to ``pending``.

Crash order: the high-water mark is written before the new task (a crash skips an id, never
reuses one), and a finished task before its dependents. A crash between the two leaves a
dependent blocked by a finished task; the next change to the board's tasks mends it (the
blockers' real states are read whenever they matter), so no task stays stuck.

Listing: ``index.json`` holds every task, so ``list`` reads one file, not one per task. Each
change, under the lock, first creates ``.index-dirty``, then writes the task files, then the
index (atomically, without an fsync of its own: see ``_write_index``), then removes the marker. The task files stay the truth: an index that is
missing, does not parse, names other ids than the task files on disk, or has the marker beside
it (a writer died between the task files and the index) is rebuilt from the task files.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs

from nyzhi import convert, records
from nyzhi.team_files.errors import TaskClaimError, TeamError
from nyzhi.team_files.locking import file_lock, now_rfc3339, read_json, write_json
from nyzhi.team_files.names import check_name
from nyzhi.team_files.status import TaskStatus as TaskStatus

FINISHED = (TaskStatus.COMPLETED, TaskStatus.DELETED)
INDEX_FILE = "index.json"
_ID_RE = re.compile(r"[1-9][0-9]{0,8}")
MAX_SUBJECT_CHARS = 300
MAX_DESCRIPTION_CHARS = 20_000


def check_line(field: str, value: object, limit: int) -> str:
    """``value`` if it is a string of one line (no line boundary of any kind: a task's subject
    is shown on one line of ``task_list``, where a second line could pass for anything) and at
    most ``limit`` characters; a ``TeamError`` naming ``field`` otherwise."""
    if not isinstance(value, str):
        raise TeamError(f"a task's {field} must be a string")
    if value and value.splitlines() != [value]:
        raise TeamError(f"a task's {field} is one line; put the rest in its description")
    if len(value) > limit:
        raise TeamError(f"a task's {field} is {len(value):,} characters, over {limit:,}")
    return value


def _ids(value: Any) -> list[str]:
    """Task ids as written by any version: strings, or numbers (read as their text)."""
    if not isinstance(value, list):
        raise TypeError(f"must be an array of task ids, found {value!r:.80}")
    return [str(i) for i in value]


# On disk: ``blockedBy`` (``blocked_by`` read too), ``active_form`` only when set, a JSON null
# read as absent (the default applies).
@convert.wire(rename={"blocked_by": "blockedBy"}, aliases={"blockedBy": ("blocked_by",)},
              omit_if_none=("active_form",), null_is_missing=True,
              read={"blocks": _ids, "blocked_by": _ids})
@records.define
class Task:
    id: str
    subject: str
    description: str = ""
    active_form: str | None = None
    status: TaskStatus = TaskStatus.PENDING
    owner: str | None = None
    blocks: list[str] = attrs.field(factory=list)
    blocked_by: list[str] = attrs.field(factory=list)
    created_at: str = ""
    updated_at: str = ""


@records.define
class TaskChange:
    """What one ``update`` did: the task as written, the dependents it unblocked, and whether
    this call is the one that completed it (so a ``task_completed`` hook fires once)."""

    task: Task
    unblocked: list[Task] = attrs.field(factory=list)
    completed: bool = False


def check_task_id(task_id: object) -> str:
    text = str(task_id).strip().lstrip("#")
    if not _ID_RE.fullmatch(text):
        raise TeamError(f"invalid task id {task_id!r}: task ids are numbers like 3 "
                        "(task_list shows them)")
    return text


def _status(value: str) -> TaskStatus:
    try:
        return TaskStatus(value)
    except ValueError:
        raise TeamError(f"invalid task status {value!r}: use one of "
                        f"{', '.join(TaskStatus)}") from None


class TaskBoard:
    """One team's tasks in ``dir`` (``tasks/<team>``). Blocking calls."""

    def __init__(self, dir: Path) -> None:
        self.dir = Path(dir)
        self.lock_path = self.dir / ".lock"
        self.mark_path = self.dir / ".highwatermark"
        self.index_path = self.dir / INDEX_FILE
        self.dirty_path = self.dir / ".index-dirty"
        self.rebuilds = 0  # times this object rebuilt the index from the task files

    # --- reading ----------------------------------------------------------------------------

    def _path(self, task_id: str) -> Path:
        return self.dir / f"{task_id}.json"

    def _load(self, task_id: str) -> Task | None:
        path = self._path(task_id)
        data = read_json(path, None)
        return None if data is None else convert.structure(data, Task, path, TeamError)

    def get(self, task_id: str) -> Task:
        """The task, or a ``TeamError`` when there is none of that id."""
        task_id = check_task_id(task_id)
        task = self._load(task_id)
        if task is None:
            raise TeamError(f"no task {task_id} on this board (task_list shows the tasks)")
        return task

    def _ids(self) -> list[str]:
        try:
            names = os.listdir(self.dir)
        except FileNotFoundError:
            return []
        ids = [n[:-5] for n in names if n.endswith(".json") and _ID_RE.fullmatch(n[:-5])]
        return sorted(ids, key=int)

    def list(self, status: str | None = None) -> list[Task]:
        """Every task (deleted ones too), by id; only those in ``status`` when given. Read
        from the index (rebuilt first when it cannot be trusted)."""
        wanted = None if status is None else _status(status)
        by_id = self._read_index()
        if by_id is None:
            with file_lock(self.lock_path):
                by_id = self._indexed()
        tasks = sorted(by_id.values(), key=lambda t: int(t.id))
        return [t for t in tasks if wanted is None or t.status == wanted]

    # --- the index --------------------------------------------------------------------------

    def _read_index(self) -> dict[str, Task] | None:
        """The tasks by id from ``index.json``, or None when it must be rebuilt."""
        if self.dirty_path.exists():
            return None
        try:
            data = read_json(self.index_path, None)
        except TeamError:
            return None  # does not parse
        if not isinstance(data, dict) or not isinstance(data.get("tasks"), list):
            return None
        try:
            tasks = [convert.structure(t, Task, self.index_path, TeamError)
                     for t in data["tasks"]]
        except TeamError:
            return None
        by_id = {t.id: t for t in tasks}
        if set(by_id) != set(self._ids()):  # a task file added or removed behind its back
            return None
        return by_id

    def _indexed(self) -> dict[str, Task]:
        """The tasks by id, the index rebuilt from the task files if needed. Under the lock."""
        by_id = self._read_index()
        if by_id is None:
            by_id = {t.id: t for t in (self._load(i) for i in self._ids()) if t is not None}
            self._write_index(by_id)
            self.rebuilds += 1
        return by_id

    def _begin(self) -> None:
        """Before a change writes task files: the index is stale until ``_write_index``."""
        self.dir.mkdir(parents=True, exist_ok=True)
        os.close(os.open(self.dirty_path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600))

    def _write_index(self, by_id: dict[str, Task]) -> None:
        tasks = sorted(by_id.values(), key=lambda t: int(t.id))
        # Not fsynced: the index is a cache of the task files, which are. A killed process
        # leaves the marker (so a rebuild); after a power cut, a file system that orders data
        # before the rename it belongs to (ext4's default, xfs, btrfs) shows the old index with
        # the marker or the new one without it, and a torn one does not parse (a rebuild).
        write_json(self.index_path, {"version": 1,
                                     "tasks": [convert.unstructure(t) for t in tasks]},
                   sync=False)
        self.dirty_path.unlink(missing_ok=True)

    # --- changing ---------------------------------------------------------------------------

    def _next_id(self) -> str:
        mark = read_json(self.mark_path, 0)
        last = mark if isinstance(mark, int) and not isinstance(mark, bool) else 0
        ids = self._ids()
        last = max(last, int(ids[-1]) if ids else 0)  # a lost or edited mark never reuses ids
        write_json(self.mark_path, last + 1)
        return str(last + 1)

    def create(self, subject: str, description: str = "", blocked_by: Iterable[str] = (),
               active_form: str | None = None) -> Task:
        """A new task, ``blocked`` when any dependency is unfinished, else ``pending``."""
        if not isinstance(subject, str) or not subject.strip():
            raise TeamError("a task needs a subject")
        check_line("subject", subject, MAX_SUBJECT_CHARS)
        if active_form is not None:
            check_line("active_form", active_form, MAX_SUBJECT_CHARS)
        if not isinstance(description, str) or len(description) > MAX_DESCRIPTION_CHARS:
            raise TeamError(f"a task's description is a string of at most "
                            f"{MAX_DESCRIPTION_CHARS:,} characters")
        deps = list(dict.fromkeys(check_task_id(d) for d in blocked_by))
        with file_lock(self.lock_path):
            blockers = []
            for dep in deps:
                task = self._load(dep)
                if task is None:
                    raise TeamError(f"no task {dep} to depend on (task_list shows the tasks)")
                if task.status == TaskStatus.DELETED:
                    raise TeamError(f"task {dep} is deleted; it cannot block a new task")
                blockers.append(task)
            open_deps = [t.id for t in blockers if t.status != TaskStatus.COMPLETED]
            by_id = self._indexed()
            self._begin()
            now = now_rfc3339()
            task = Task(
                id=self._next_id(), subject=subject, description=description,
                active_form=active_form,
                status=TaskStatus.BLOCKED if open_deps else TaskStatus.PENDING,
                blocked_by=open_deps, created_at=now, updated_at=now,
            )
            write_json(self._path(task.id), convert.unstructure(task))
            by_id[task.id] = task
            for blocker in blockers:
                if blocker.status != TaskStatus.COMPLETED and task.id not in blocker.blocks:
                    blocker.blocks.append(task.id)
                    write_json(self._path(blocker.id), convert.unstructure(blocker))
                by_id[blocker.id] = blocker
            self._write_index(by_id)
        return task

    def update(self, task_id: str, *, status: str | None = None, owner: str | None = None,
               by: str | None = None) -> TaskChange:
        """Change a task's status and/or owner, as member ``by``.

        Claiming: setting ``owner``, or ``in_progress`` with ``by`` on an unowned task (the
        owner becomes ``by``), is refused with ``TaskClaimError`` when another member owns it;
        ``owner=""`` releases it. A task with unfinished blockers can only be ``blocked`` or
        ``deleted``; a deleted task cannot change. Completing or deleting a task unblocks its
        dependents (``TaskChange.unblocked``)."""
        task_id = check_task_id(task_id)
        new_status = None if status is None else _status(status)
        if owner:  # "" releases the task
            check_name("member", owner)
        if by is not None:
            check_name("sender", by)
        with file_lock(self.lock_path):
            task = self.get(task_id)
            if task.status == TaskStatus.DELETED:
                raise TeamError(f"task {task_id} is deleted")
            old_status = task.status
            if owner is None and new_status == TaskStatus.IN_PROGRESS and by:
                owner = by  # starting work claims the task
            if owner:
                if task.owner and task.owner != owner:
                    raise TaskClaimError(f"task {task_id} is owned by {task.owner}")
                task.owner = owner
            elif owner == "":
                task.owner = None
            if task.blocked_by:
                self._mend(task)
            if new_status is not None:
                if task.blocked_by and new_status not in (TaskStatus.BLOCKED, TaskStatus.DELETED):
                    raise TeamError(
                        f"task {task_id} is blocked by unfinished tasks "
                        f"{', '.join(task.blocked_by)}; finish those first")
                task.status = new_status
            task.updated_at = now_rfc3339()
            by_id = self._indexed()
            self._begin()
            write_json(self._path(task_id), convert.unstructure(task))
            by_id[task.id] = task
            unblocked = []
            if task.status in FINISHED and old_status not in FINISHED:
                unblocked = self._release(task, by_id)
            self._write_index(by_id)
        return TaskChange(task, unblocked,
                          task.status == TaskStatus.COMPLETED
                          and old_status != TaskStatus.COMPLETED)

    def release_owned_by(self, members: Iterable[str]) -> list[Task]:
        """Put back to ``pending``, unowned, every task ``in_progress`` owned by ``members``,
        whose previous incarnation is gone (nyz killed mid-task, then the team restarted): a
        task whose owner is gone would otherwise stay in progress forever (issue 55)."""
        gone = set(members)
        released = []
        for task in self.list():
            if task.status == TaskStatus.IN_PROGRESS and task.owner in gone:
                released.append(self.update(task.id, status=TaskStatus.PENDING.value,
                                            owner="").task)
        return released

    def unfinished(self) -> list[Task]:
        """Tasks neither completed nor deleted."""
        return [t for t in self.list() if t.status not in FINISHED]

    def _mend(self, task: Task) -> None:
        """Drop blockers that are finished (or gone): they were, and a crash kept the news
        from this task. A task left with none is no longer blocked."""
        still = []
        for dep in task.blocked_by:
            blocker = self._load(dep)
            if blocker is not None and blocker.status not in FINISHED:
                still.append(dep)
        task.blocked_by = still
        if not still and task.status == TaskStatus.BLOCKED:
            task.status = TaskStatus.PENDING

    def _release(self, done: Task, by_id: dict[str, Task]) -> list[Task]:
        """Remove ``done`` from every dependent's ``blocked_by``; return those it unblocked.
        Every task is looked at (in the index), not only ``done.blocks``: a crash may have
        lost a mirror."""
        unblocked = []
        for task in sorted(by_id.values(), key=lambda t: int(t.id)):
            if done.id not in task.blocked_by:
                continue
            task.blocked_by.remove(done.id)
            if not task.blocked_by and task.status == TaskStatus.BLOCKED:
                task.status = TaskStatus.PENDING
                unblocked.append(task)
            task.updated_at = now_rfc3339()
            write_json(self._path(task.id), convert.unstructure(task))
            by_id[task.id] = task
        return unblocked

    def delete_all(self) -> None:
        """Remove every task and the id counter (ids start at 1 again)."""
        with file_lock(self.lock_path):
            self._begin()
            for task_id in self._ids():
                self._path(task_id).unlink(missing_ok=True)
            self.mark_path.unlink(missing_ok=True)
            self.index_path.unlink(missing_ok=True)
            self.dirty_path.unlink(missing_ok=True)
