"""Team configs and member status on disk, and where every team file lives.

Layout (under ``$XDG_DATA_HOME/nyzhi``; user-level, not per project, because a team outlives
the directory it was started from and ``nyz team list`` works anywhere)::

    teams/<team>/config.json             TeamConfig: members, mode, defaults
    teams/<team>/.lock                   flock for config.json read-modify-writes
    teams/<team>/inboxes/<member>.json   Inbox: that member's messages (+ .lock, + .fifo,
                                         + .cursor: how far it read the broadcast log,
                                         + .taken.json: read for a turn not started yet)
    teams/<team>/broadcast.jsonl         BroadcastLog: every message to "all", one a line
    teams/<team>/model_calls.json        SharedSlots: model calls in flight (process teams)
    teams/<team>/members/<member>.json   runtime status: status, pid, session_id, restarts
    tasks/<team>/<id>.json               TaskBoard: one file per task
    tasks/<team>/.highwatermark          the last task id handed out (+ .lock)

A team exists when its ``config.json`` does: it is written last on create and removed first
on delete, so a crash half-way leaves either a whole team or none (stray files are ignored).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from nyzhi import convert, records
from nyzhi.config.modes import TeammateMode, choices
from nyzhi.config.paths import data_dir
from nyzhi.team_files.board import TaskBoard
from nyzhi.team_files.broadcast import BroadcastLog
from nyzhi.team_files.errors import TeamError, TeamNotFound
from nyzhi.team_files.inbox import Inbox
from nyzhi.team_files.locking import (
    DIR_MODE,
    file_lock,
    now_rfc3339,
    read_json,
    write_json,
)
from nyzhi.team_files.names import LEAD, check_name

TEAMMATE_MODES = choices(TeammateMode)
# Ten colours members get in order (the original's palette size), so a front end can tell
# teammates apart without configuring anything.
PALETTE = ("#e06c75", "#61afef", "#98c379", "#e5c07b", "#c678dd",
           "#56b6c2", "#d19a66", "#be5046", "#7ec699", "#abb2bf")


def teams_root(env: Mapping[str, str] | None = None) -> Path:
    """data_dir()/teams: one directory per team."""
    return data_dir(env) / "teams"


def tasks_root(env: Mapping[str, str] | None = None) -> Path:
    """data_dir()/tasks: one task board per team."""
    return data_dir(env) / "tasks"


# On disk (the team's config.json): ``agentType`` (``agent_type`` read too), ``worktree``
# (``worktree_path`` read too), ``model`` and ``worktree`` only when set; a null reads as absent.
@convert.wire(rename={"agent_type": "agentType"},
              aliases={"agentType": ("agent_type",), "worktree": ("worktree_path",)},
              omit_if_none=("model", "worktree", "node"), null_is_missing=True)
@records.define
class Member:
    name: str
    role: str = "default"
    model: str | None = None
    agent_type: str = "teammate"  # "leader" for the lead
    color: str = ""
    worktree: str | None = None  # on ``node`` when the member has one (its clone there)
    node: str | None = None  # a ``[[nodes]]`` name: the member runs on that host over SSH


# Tolerant: unknown keys are ignored and optional ones defaulted; name, created_at and members
# are required. The optional defaults are written only when set.
@convert.wire(omit_if_none=("default_model", "default_role", "trust"), null_is_missing=True,
              required=("created_at", "members"))
@records.define
class TeamConfig:
    name: str
    created_at: str = attrs.field(factory=now_rfc3339)
    members: list[Member] = attrs.field(factory=list)
    teammate_mode: str = TeammateMode.IN_PROCESS
    cwd: str = ""  # the workspace the team works in
    default_model: str | None = None
    default_role: str | None = None
    max_steps: int = 0
    worktrees: bool = False
    detach: bool = False
    trust: str | None = None

    def member(self, name: str) -> Member | None:
        return next((m for m in self.members if m.name == name), None)

    def names(self) -> list[str]:
        return [m.name for m in self.members]


def _checked(config: TeamConfig) -> TeamConfig:
    """``config`` with valid names, no duplicate member, the lead first and colours assigned."""
    check_name("team", config.name)
    if config.teammate_mode not in TEAMMATE_MODES:
        raise TeamError(f"teammate mode {config.teammate_mode!r} is not one of "
                        f"{', '.join(TEAMMATE_MODES)}")
    seen: set[str] = set()
    for m in config.members:
        check_name("member", m.name)
        if m.name in seen:
            raise TeamError(f"member '{m.name}' is listed twice in team '{config.name}'")
        seen.add(m.name)
    lead = config.member(LEAD)
    if lead is None:
        lead = Member(LEAD, agent_type="leader")
    else:
        config.members.remove(lead)
        lead.agent_type = "leader"
    config.members.insert(0, lead)
    for i, m in enumerate(config.members):
        if not m.color:
            m.color = PALETTE[i % len(PALETTE)]
    return config


class TeamStore:
    """Every team of one user. Blocking calls: trio code runs them in a worker thread."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self.env = env
        self.root = teams_root(env)
        self.tasks = tasks_root(env)

    # --- where ------------------------------------------------------------------------------

    def team_dir(self, name: str) -> Path:
        return self.root / check_name("team", name)

    def _config_path(self, name: str) -> Path:
        return self.team_dir(name) / "config.json"

    def _lock(self, name: str):
        return file_lock(self.team_dir(name) / ".lock")

    def inbox(self, name: str, member: str) -> Inbox:
        return Inbox(self.team_dir(name) / "inboxes", check_name("member", member),
                     self.broadcasts(name))

    def broadcasts(self, name: str) -> BroadcastLog:
        """The team's broadcast log (messages to ``all``), read by each inbox from its cursor."""
        return BroadcastLog(self.team_dir(name))

    def board(self, name: str) -> TaskBoard:
        return TaskBoard(self.tasks / check_name("team", name))

    def watcher(self, name: str, member: str, fallback: float = 2.0) -> Any:
        """What a member's driver waits on for new mail: here, the FIFO beside its inbox
        (a ``RemoteTeamStore`` answers with the lead's pokes down the pipe instead)."""
        from nyzhi.team_files.watch import InboxWatcher

        return InboxWatcher(self.team_dir(name) / "inboxes", check_name("member", member),
                            fallback=fallback)

    # --- configs ----------------------------------------------------------------------------

    def exists(self, name: str) -> bool:
        return self._config_path(name).is_file()

    def load(self, name: str) -> TeamConfig:
        path = self._config_path(name)
        data = read_json(path, None)
        if data is None:
            raise TeamNotFound(f"no team '{name}' (nyz team list shows the teams)")
        return convert.structure(data, TeamConfig, path, TeamError)

    def list(self) -> list[str]:
        """The names of existing teams, sorted."""
        try:
            entries = os.listdir(self.root)
        except FileNotFoundError:
            return []
        return sorted(
            e for e in entries
            if not e.startswith(".") and (self.root / e / "config.json").is_file()
        )

    def create(self, config: TeamConfig) -> TeamConfig:
        """Write a new team (the lead member added first if absent, colours assigned) and its
        empty board. ``TeamError`` if a team of that name exists."""
        config = _checked(config)
        team_dir = self.team_dir(config.name)
        team_dir.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
        with self._lock(config.name):
            if self.exists(config.name):
                raise TeamError(f"team '{config.name}' already exists (nyz team delete "
                                f"{config.name} removes it)")
            # a board (or broadcasts) left by a team whose delete was interrupted is not ours
            shutil.rmtree(self.tasks / config.name, ignore_errors=True)
            self.broadcasts(config.name).path.unlink(missing_ok=True)
            for sub in ("inboxes", "members"):
                (team_dir / sub).mkdir(exist_ok=True, mode=DIR_MODE)
            write_json(team_dir / "config.json", convert.unstructure(config), indent=2)
        return config

    def update(self, name: str, fn: Callable[[TeamConfig], None]) -> TeamConfig:
        """Load, ``fn(config)`` (changes it in place), check and write back, all under the team
        lock, so concurrent updates from several processes never lose one another's change."""
        with self._lock(name):
            config = self.load(name)
            before = set(config.names())
            fn(config)
            if config.name != name:
                raise TeamError(f"a team cannot be renamed ('{name}' to '{config.name}')")
            config = _checked(config)
            write_json(self._config_path(name), convert.unstructure(config), indent=2)
        for member in config.names():
            if member not in before:  # a newcomer reads broadcasts from now on
                self.inbox(name, member).start_cursor()
        return config

    def add_member(self, name: str, member: Member) -> TeamConfig:
        """Add ``member``, or replace the member of that name (keeping its colour unless the new
        one has its own): a name is never listed twice."""
        check_name("member", member.name)

        def add(config: TeamConfig) -> None:
            old = config.member(member.name)
            if old is not None:
                member.color = member.color or old.color
                config.members[config.members.index(old)] = member
            else:
                member.color = member.color or PALETTE[len(config.members) % len(PALETTE)]
                config.members.append(member)

        return self.update(name, add)

    def delete(self, name: str) -> None:
        """Remove the team (``teams/<name>``) and its board (``tasks/<name>``). The config goes
        first, so the team stops existing at once even if the rest is interrupted."""
        with self._lock(name):
            path = self._config_path(name)
            if not path.is_file():
                raise TeamNotFound(f"no team '{name}' (nyz team list shows the teams)")
            path.unlink()
            shutil.rmtree(self.tasks / name, ignore_errors=True)
            shutil.rmtree(self.team_dir(name), ignore_errors=True)

    # --- member runtime status ------------------------------------------------------------

    def set_status(self, name: str, member: str, **fields: Any) -> dict[str, Any]:
        """Merge ``fields`` (status, pid, session_id, restarts, ...) into the member's status
        file, stamping ``updated_at``; returns the merged status."""
        path = self.team_dir(name) / "members" / f"{check_name('member', member)}.json"
        with file_lock(path.with_suffix(".lock")):
            status = read_json(path, {})
            if not isinstance(status, dict):
                raise TeamError(f"{path}: expected a JSON object")
            status.update(fields, name=member, updated_at=now_rfc3339())
            write_json(path, status)
        return status

    def status(self, name: str, member: str) -> dict[str, Any]:
        """One member's last status ({} if it never started): one file read, however many
        members the team has."""
        path = self.team_dir(name) / "members" / f"{check_name('member', member)}.json"
        data = read_json(path, None)
        return data if isinstance(data, dict) else {}

    def statuses(self, name: str) -> dict[str, dict[str, Any]]:
        """Each member's last status, by member name (members never started have none)."""
        folder = self.team_dir(name) / "members"
        out: dict[str, dict[str, Any]] = {}
        try:
            entries = sorted(os.listdir(folder))
        except FileNotFoundError:
            return out
        for entry in entries:
            if entry.endswith(".json") and not entry.startswith("."):
                data = read_json(folder / entry, None)
                if isinstance(data, dict):
                    out[entry[: -len(".json")]] = data
        return out
