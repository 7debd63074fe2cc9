"""The team store of a member on another host: every call is a request the lead answers.

A member started on a node (``nyz team member … --remote-store``, over SSH) has no team files:
its ``TeamStore`` is a ``RemoteTeamStore``, whose calls (``load``, ``set_status``, an inbox's
``append``, ``read_unread`` and ``take``, the board's ``create`` and ``update``, …) become
``StoreCall`` lines on the member's stdout. The lead reads them with the member's events, runs
each against its own ``TeamStore`` (``serve``) and writes the ``StoreReply`` down the member's
stdin. So the lead's host is the only writer of the team's files: the locks and atomic writes
keep every guarantee they have on one host, and no other host needs the data.

What a remote member may ask is narrower than what a local process could do to the files
(``serve`` checks it): only its own team; only its own inbox read and its own status written;
messages sent only in its own name; no team created, deleted or joined by others.

Both sides here are blocking; ``nyzhi.core.runtime.teams.pipe`` carries the lines. Pokes are not
store calls: the lead writes a poke line when the member's inbox changes (``watch``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import attrs

from nyzhi import convert, records
from nyzhi.team_files.board import Task, TaskChange, check_task_id
from nyzhi.team_files.errors import TaskClaimError, TeamError, TeamNotFound
from nyzhi.team_files.inbox import Message
from nyzhi.team_files.names import check_name
from nyzhi.team_files.store import TeamConfig, TeamStore

# The errors a reply can carry, re-raised as themselves on the member's side.
ERRORS: dict[str, type[TeamError]] = {
    "TeamError": TeamError, "TeamNotFound": TeamNotFound, "TaskClaimError": TaskClaimError}


@convert.wire(tag="type")
@records.define
class StoreCall:
    """Member → lead: one store operation (``call``) with its arguments."""

    type: ClassVar[str] = "store_call"
    id: int
    call: str
    args: dict[str, Any] = attrs.field(factory=dict)


@convert.wire(tag="op", omit_if_none=("error", "error_type"), null_is_missing=True)
@records.define
class StoreReply:
    """Lead → member: the result of call ``id`` (plain JSON), or its error."""

    op: ClassVar[str] = "store_reply"
    id: int
    result: Any = None
    error: str | None = None
    error_type: str | None = None


Call = Callable[[str, dict[str, Any]], Any]


class RemoteTeamStore:
    """``TeamStore``'s interface for one member of one team, through ``call`` (blocking: send
    a ``StoreCall``, return the reply's result or raise its error). ``local`` is this host's
    own data directory, for what stays on the node: the team's write leases."""

    def __init__(self, team: str, member: str, call: Call, local: TeamStore | None = None,
                 watcher: Callable[[float], Any] | None = None) -> None:
        self.team = check_name("team", team)
        self.member = check_name("member", member)
        self.call = call
        self.local = local or TeamStore()
        self._watcher = watcher

    def team_dir(self, name: str) -> Path:
        """This node's directory for the team (leases, logs); the team's data is the lead's."""
        return self.local.team_dir(name)

    def exists(self, name: str) -> bool:
        return bool(self.call("exists", {"team": name}))

    def load(self, name: str) -> TeamConfig:
        return convert.structure(self.call("load", {"team": name}), TeamConfig,
                                 "the lead's team config", TeamError)

    def list(self) -> list[str]:
        return list(self.call("list", {}))

    def statuses(self, name: str) -> dict[str, dict[str, Any]]:
        return dict(self.call("statuses", {"team": name}))

    def set_status(self, name: str, member: str, **fields: Any) -> dict[str, Any]:
        return dict(self.call("set_status", {"team": name, "member": member, "fields": fields}))

    def inbox(self, name: str, member: str) -> RemoteInbox:
        return RemoteInbox(self, name, check_name("member", member))

    def board(self, name: str) -> RemoteBoard:
        return RemoteBoard(self, name)

    def watcher(self, name: str, member: str, fallback: float = 2.0) -> Any:
        if self._watcher is None:
            raise TeamError("a remote store without a pipe cannot wait for messages")
        return self._watcher(fallback)

    def create(self, config: TeamConfig) -> TeamConfig:
        raise TeamError("a member on another host cannot create teams (ask the lead)")

    def delete(self, name: str) -> None:
        raise TeamError("a member on another host cannot delete teams (ask the lead)")

    def add_member(self, name: str, member: Any) -> TeamConfig:
        raise TeamError("a member on another host cannot add members (ask the lead)")

    def update(self, name: str, fn: Any) -> TeamConfig:
        raise TeamError("a member on another host cannot change the team's config")


@attrs.define
class RemoteInbox:
    store: RemoteTeamStore
    team: str
    member: str

    def _args(self, **more: Any) -> dict[str, Any]:
        return {"team": self.team, "member": self.member, **more}

    def append(self, messages: list[Message]) -> None:
        if messages:
            self.store.call("inbox.append", self._args(messages=convert.unstructure(messages)))

    def read_unread(self, mark_read: bool = True, taken: bool = False) -> list[Message]:
        data = self.store.call("inbox.read_unread", self._args(mark_read=mark_read,
                                                               taken=taken))
        return convert.structure(data, list[Message], "the lead's inbox", TeamError)

    def take(self) -> list[Message]:
        data = self.store.call("inbox.take", self._args())
        return convert.structure(data, list[Message], "the lead's inbox", TeamError)

    def started(self) -> None:
        self.store.call("inbox.started", self._args())

    def undelivered(self) -> list[Message]:
        data = self.store.call("inbox.undelivered", self._args())
        return convert.structure(data, list[Message], "the lead's inbox", TeamError)

    def messages(self) -> list[Message]:
        data = self.store.call("inbox.messages", self._args())
        return convert.structure(data, list[Message], "the lead's inbox", TeamError)

    def unread_count(self) -> int:
        return int(self.store.call("inbox.unread_count", self._args()))

    def poke(self) -> None:
        """Nothing to do: the lead pokes the recipient when it appends."""


@attrs.define
class RemoteBoard:
    store: RemoteTeamStore
    team: str

    def _call(self, call: str, **args: Any) -> Any:
        return self.store.call(f"board.{call}", {"team": self.team, **args})

    def get(self, task_id: str) -> Task:
        data = self._call("get", task_id=check_task_id(task_id))
        return convert.structure(data, Task, "the lead's board", TeamError)

    def list(self, status: str | None = None) -> list[Task]:
        data = self._call("list", status=status)
        return convert.structure(data, list[Task], "the lead's board", TeamError)

    def create(self, subject: str, description: str = "", blocked_by: Iterable[str] = (),
               active_form: str | None = None) -> Task:
        data = self._call("create", subject=subject, description=description,
                          blocked_by=[str(b) for b in blocked_by], active_form=active_form)
        return convert.structure(data, Task, "the lead's board", TeamError)

    def update(self, task_id: str, *, status: str | None = None, owner: str | None = None,
               by: str | None = None) -> TaskChange:
        data = self._call("update", task_id=check_task_id(task_id), status=status, owner=owner,
                          by=by)
        return convert.structure(data, TaskChange, "the lead's board", TeamError)

    def delete_all(self) -> None:
        raise TeamError("a member on another host cannot clear the board")


# ---- the lead's side -------------------------------------------------------------------------


def serve(store: TeamStore, team: str, member: str, call: StoreCall) -> StoreReply:
    """Answer ``call`` from ``member`` of ``team`` (a remote member) against ``store``. Never
    raises for a bad call: the reply carries the error, one line, for the member's tools."""
    try:
        result = _dispatch(store, team, member, call.call, call.args)
    except (TeamError, convert.RecordError) as exc:
        kind = type(exc).__name__ if type(exc).__name__ in ERRORS else "TeamError"
        return StoreReply(call.id, error=str(exc), error_type=kind)
    except (TypeError, ValueError, KeyError) as exc:
        return StoreReply(call.id, error=f"bad store call {call.call!r}: {exc}",
                          error_type="TeamError")
    return StoreReply(call.id, result=convert.unstructure(result))


def _str(args: Mapping[str, Any], key: str, optional: bool = False) -> Any:
    value = args.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise TeamError(f"store call: '{key}' must be a string")
    return value


def _dispatch(store: TeamStore, team: str, member: str, call: str,
              args: Mapping[str, Any]) -> Any:
    if call == "list":
        return [team] if store.exists(team) else []
    asked = _str(args, "team")
    if asked != team:
        raise TeamError(f"member {member} of team {team} cannot reach team {asked!r}")
    if call == "exists":
        return store.exists(team)
    if call == "load":
        return store.load(team)
    if call == "statuses":
        return store.statuses(team)
    if call == "set_status":
        if _str(args, "member") != member:
            raise TeamError(f"{member} can only set its own status")
        fields = args.get("fields")
        if not isinstance(fields, dict):
            raise TeamError("store call: 'fields' must be an object")
        return store.set_status(team, member, **{str(k): v for k, v in fields.items()})
    if call.startswith("inbox."):
        return _inbox(store, team, member, call, args)
    if call.startswith("board."):
        return _board(store, team, member, call, args)
    raise TeamError(f"store call {call!r} is not served to a member on another host")


def _inbox(store: TeamStore, team: str, member: str, call: str,
           args: Mapping[str, Any]) -> Any:
    owner = check_name("member", _str(args, "member"))
    if store.load(team).member(owner) is None:
        raise TeamError(f"no member '{owner}' in team '{team}'")
    inbox = store.inbox(team, owner)
    if call == "inbox.append":
        messages = convert.structure(args.get("messages"), list[Message], "inbox.append",
                                     TeamError)
        for m in messages:
            # in its own name only; "hook" (its teammate_idle hook's feedback) only to itself
            if m.sender != member and not (m.sender == "hook" and owner == member):
                raise TeamError(f"{member} cannot send a message as {m.sender!r}")
            if m.read:
                raise TeamError("a message is delivered unread")
        inbox.append(messages)
        return None
    if owner != member:
        raise TeamError(f"{member} can only read its own inbox, not {owner}'s")
    if call == "inbox.read_unread":
        return inbox.read_unread(mark_read=bool(args.get("mark_read", True)),
                                 taken=bool(args.get("taken", False)))
    if call == "inbox.take":
        return inbox.take()
    if call == "inbox.started":
        inbox.started()
        return None
    if call == "inbox.undelivered":
        return inbox.undelivered()
    if call == "inbox.messages":
        return inbox.messages()
    if call == "inbox.unread_count":
        return inbox.unread_count()
    raise TeamError(f"store call {call!r} is not served to a member on another host")


def _board(store: TeamStore, team: str, member: str, call: str,
           args: Mapping[str, Any]) -> Any:
    board = store.board(team)
    if call == "board.get":
        return board.get(_str(args, "task_id"))
    if call == "board.list":
        return board.list(_str(args, "status", optional=True))
    if call == "board.create":
        blocked_by = args.get("blocked_by") or []
        if not isinstance(blocked_by, list):
            raise TeamError("store call: 'blocked_by' must be an array")
        return board.create(_str(args, "subject"), _str(args, "description", True) or "",
                            [str(b) for b in blocked_by], _str(args, "active_form", True))
    if call == "board.update":
        by = _str(args, "by", optional=True)
        if by not in (None, member):
            raise TeamError(f"{member} cannot update a task as {by!r}")
        return board.update(_str(args, "task_id"), status=_str(args, "status", True),
                            owner=_str(args, "owner", True), by=by)
    raise TeamError(f"store call {call!r} is not served to a member on another host")
