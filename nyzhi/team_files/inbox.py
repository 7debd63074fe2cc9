"""Member inboxes: one JSON array of messages per member, and a FIFO to wake its reader.

``inboxes/<member>.json`` is the truth: a sender appends under ``<member>.lock`` and replaces
the file atomically, so a reader (or a ``kill -9``) never sees half a message. After writing,
the sender *pokes* ``<member>.fifo`` with one byte so a waiting reader (``watch.InboxWatcher``)
wakes at once instead of polling. The poke is only a hint: nobody listening, or a full pipe,
is fine, since a reader reads the file whenever it starts or wakes.

Read messages are kept for ``nyz team status`` and history, but only the newest
``KEEP_READ`` of them: every append rewrites the file, and an inbox that grew forever would
make each message cost more than the last. Unread messages are never dropped.

Broadcasts (``to="all"``) are not copied into each inbox: they are one line each in the team's
broadcast log (``nyzhi.team_files.broadcast``), which every inbox reads from its own cursor
(``<member>.cursor``). ``read_unread``, ``unread_count`` and ``messages`` merge the two, oldest
first, so a reader sees one stream of messages as before.

A member's driver *takes* its messages for a turn (``take``): they are marked read (and the
cursor moved) as ``read_unread`` does, but first copied to ``<member>.taken.json``, where they
stay until the turn has started (``started``). A turn that never started (its agent crashed,
was restarted or was stopped while the turn waited in its queue; or the whole process was
killed) leaves them there, and the next ``take`` returns them again, oldest first, before
anything newer (as does ``read_unread(taken=True)``, for a reader feeding a turn that is
already running, such as a restarted member's "you were restarted" turn). So a message read
for a turn reaches the agent exactly once (a kill of the process in the moment between a
turn's start and ``started`` delivers that batch once more; none is lost). Taken messages
count as unread for ``unread_count`` and ``undelivered``, the reads that tell whether a team
is done.
"""

from __future__ import annotations

import errno
import os
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from nyzhi import convert, records
from nyzhi.team_files.broadcast import BroadcastLog
from nyzhi.team_files.errors import TeamError
from nyzhi.team_files.locking import file_lock, now_rfc3339, read_json, write_json
from nyzhi.team_files.names import check_name
from nyzhi.textcut import cut

if TYPE_CHECKING:
    from nyzhi.team_files.store import TeamStore

KEEP_READ = 50
KINDS = ("message", "idle_notification")
MAX_TEXT_CHARS = 200_000  # one message; a report longer than this belongs in a file
_ID_RE = re.compile(r"[A-Za-z0-9_-]{0,64}")
_TIME_RE = re.compile(r"[0-9A-Za-z:.+-]{0,40}")


def check_message(m: Message) -> Message:
    """``m`` if every field that goes into a reader's framing is within its vocabulary: a
    ``TeamError`` naming the field otherwise. The framing quotes what it shows
    (``nyzhi.team_files.framing``), but a field is refused where it enters, wherever that is (a
    local ``deliver``, or ``inbox.append`` from a member on another host): a remote member's
    ``kind`` holding a newline once put an unquoted ``[message from user]`` in the lead's
    prompt."""
    if not isinstance(m.kind, str) or m.kind not in KINDS:
        raise TeamError(f"message kind {_shown(m.kind)} is not one of {', '.join(KINDS)}")
    check_name("sender", m.sender)
    if m.to != "all":
        check_name("member", m.to)
    for field, value, rx in (("id", m.id, _ID_RE), ("time", m.time, _TIME_RE)):
        if not isinstance(value, str) or not rx.fullmatch(value):
            raise TeamError(f"message {field} {_shown(value)} is not a plain {field} "
                            "(letters, digits and -_:.+ only, 64 at most)")
    if not isinstance(m.text, str):
        raise TeamError("a message's text must be a string")
    if len(m.text) > MAX_TEXT_CHARS:
        raise TeamError(f"the message is {len(m.text):,} characters, over the "
                        f"{MAX_TEXT_CHARS:,} a message may have; write it to a file and "
                        "send its path")
    return m


def _shown(value: object) -> str:
    """A refused value in an error line: repr (escapes every line boundary), cut short."""
    return cut(repr(value), 60, one_line=False)


def new_id() -> str:
    return uuid.uuid4().hex[:12]


# On disk: the sender is ``from``; ``timestamp`` is read for ``time``; a null reads as absent;
# only ``from`` and ``text`` are required (older writers left the others out).
@convert.wire(rename={"sender": "from"}, aliases={"time": ("timestamp",)}, null_is_missing=True,
              defaults={"id": "", "to": "", "time": ""})
@records.define
class Message:
    id: str
    sender: str  # JSON key "from"
    to: str  # a member, or "all" for a broadcast
    text: str
    time: str
    read: bool = False
    kind: str = "message"  # or "idle_notification"


class Inbox:
    """One member's inbox in ``path_dir`` (``teams/<team>/inboxes``), and its view of the
    team's broadcast log (``channel``; by default the one in the team directory above).
    Blocking calls."""

    def __init__(self, path_dir: Path, member: str, channel: BroadcastLog | None = None) -> None:
        self.dir = Path(path_dir)
        self.member = member
        self.path = self.dir / f"{member}.json"
        self.lock_path = self.dir / f"{member}.lock"
        self.fifo_path = self.dir / f"{member}.fifo"
        self.cursor_path = self.dir / f"{member}.cursor"
        self.taken_path = self.dir / f"{member}.taken.json"
        self.channel = channel if channel is not None else BroadcastLog(self.dir.parent)

    # --- the broadcast log, through this member's cursor --------------------------------------

    def _cursor(self) -> int:
        value = read_json(self.cursor_path, 0)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 \
            else 0

    def _write_cursor(self, offset: int) -> None:
        write_json(self.cursor_path, offset)

    def start_cursor(self) -> None:
        """A new member: broadcasts sent before it joined are not for it (as when every
        broadcast was copied to the members of the moment). Kept if it has one already."""
        with file_lock(self.lock_path):
            if not self.cursor_path.exists():
                self._write_cursor(self.channel.size())

    def _broadcasts(self, cursor: int) -> tuple[list[Message], int]:
        """Broadcasts after ``cursor`` that are for this member (not its own), unread."""
        records, end = self.channel.read_from(cursor)
        messages = []
        for record in records:
            try:
                m = convert.structure(record, Message, self.channel.path, TeamError)
            except TeamError:
                continue  # one bad line does not block the inbox
            if m.sender != self.member:
                m.read = False
                messages.append(m)
        return messages, end

    def _read(self) -> list[Message]:
        data = read_json(self.path, [])
        if not isinstance(data, list):
            raise TeamError(f"{self.path}: expected a JSON array of messages")
        return convert.structure(data, list[Message], self.path, TeamError)

    def _write(self, messages: list[Message]) -> None:
        read = [i for i, m in enumerate(messages) if m.read]
        if len(read) > KEEP_READ:
            drop = set(read[: len(read) - KEEP_READ])
            messages = [m for i, m in enumerate(messages) if i not in drop]
        write_json(self.path, convert.unstructure(messages))

    def append(self, messages: list[Message]) -> None:
        """Add ``messages`` (atomically, under the member's lock), then poke the reader. Each is
        checked first (``check_message``): one bad field refuses them all."""
        if not messages:
            return
        for m in messages:
            check_message(m)
        with file_lock(self.lock_path):
            self._write(self._read() + list(messages))
        self.poke()

    def read_unread(self, mark_read: bool = True, taken: bool = False) -> list[Message]:
        """The unread messages (broadcasts too), oldest first; with ``mark_read`` they are
        marked read in the same locked step, so two readers never both get one message. The
        inbox is written before the cursor: a crash between delivers broadcasts twice, never
        loses one. With ``taken``, the messages taken for a turn that never started come
        first, and are delivered too (the taken file goes last): for a reader that puts
        them into a turn that is running."""
        with file_lock(self.lock_path):
            held = self.taken() if taken else []
            pending, mark = self._unread_locked()
            if mark_read:
                mark()
                if held:
                    self.taken_path.unlink(missing_ok=True)
        if not held:
            return pending
        seen = {_identity(m) for m in held}
        return held + [m for m in pending if _identity(m) not in seen]

    def _unread_locked(self) -> tuple[list[Message], Callable[[], None]]:
        """Under the member's lock: the unread messages and broadcasts, oldest first, and the
        step that marks them read (the inbox, then the broadcast cursor), for the caller to
        run when what it keeps of them is safe."""
        messages = self._read()
        unread = [m for m in messages if not m.read]
        cursor = self._cursor()
        broadcasts, end = self._broadcasts(cursor)

        def mark() -> None:
            if unread:
                for m in unread:
                    m.read = True
                self._write(messages)
            if end != cursor:
                self._write_cursor(end)

        return _merged(unread, broadcasts), mark

    # --- messages taken for a turn ----------------------------------------------------------

    def taken(self) -> list[Message]:
        """The messages taken for a turn that has not started (see the module's docstring)."""
        data = read_json(self.taken_path, [])
        if not isinstance(data, list):
            raise TeamError(f"{self.taken_path}: expected a JSON array of messages")
        return convert.structure(data, list[Message], self.taken_path, TeamError)

    def take(self) -> list[Message]:
        """For a turn: the messages taken before for a turn that never started, then the
        unread ones (broadcasts too), oldest first, marked read in the same locked step and
        kept as taken until ``started``. The taken file is written first, so a crash at any
        point loses nothing; a message it already holds is not taken twice."""
        with file_lock(self.lock_path):
            taken = self.taken()
            pending, mark = self._unread_locked()
            held = {_identity(m) for m in taken}
            new = [m for m in pending if _identity(m) not in held]
            if new:
                write_json(self.taken_path, convert.unstructure(taken + new))
            mark()
        return taken + new

    def started(self) -> None:
        """The turn the taken messages were for has started: they are delivered."""
        with file_lock(self.lock_path):
            self.taken_path.unlink(missing_ok=True)

    def undelivered(self) -> list[Message]:
        """What ``take`` would return, taking nothing: the taken messages, then the unread.
        Read without the lock, the inbox before the taken file: a ``take`` in between shows
        a message in both (counted once), never in neither."""
        unread = [m for m in self.messages() if not m.read]
        taken = self.taken()
        held = {_identity(m) for m in taken}
        return taken + [m for m in unread if _identity(m) not in held]

    def unread_count(self) -> int:
        """Unread messages, and those taken for a turn that has not started."""
        return len(self.undelivered())

    def messages(self) -> list[Message]:
        """Every kept message, read or not, and the broadcasts not read yet, oldest first.
        (Read broadcasts stay in the team's log, not here.)"""
        return _merged(self._read(), self._broadcasts(self._cursor())[0])

    def poke(self) -> None:
        """Wake the member's reader: one byte into its FIFO, never blocking. No FIFO (ENOENT),
        no reader (ENXIO) or a full pipe (EAGAIN) are fine: the message is in the file."""
        try:
            fd = os.open(self.fifo_path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ENXIO):
                return
            raise
        try:
            os.write(fd, b"\x01")
        except OSError as exc:
            if exc.errno != errno.EAGAIN:
                raise
        finally:
            os.close(fd)


def _identity(m: Message) -> tuple[str, ...]:
    """One message, whatever its read flag (ids alone: older writers left them out)."""
    return (m.id, m.sender, m.to, m.time, m.kind, m.text)


def _merged(inbox: list[Message], broadcasts: list[Message]) -> list[Message]:
    """One stream, oldest first (the time stamps are RFC 3339 UTC with milliseconds, so they
    sort as text; the sort is stable, so equal stamps keep their order within each source:
    one sender's messages of one millisecond, direct ones before broadcasts)."""
    if not broadcasts:
        return inbox
    return sorted(inbox + broadcasts, key=lambda m: m.time)


def recipients(store: TeamStore, team: str, sender: str, to: str) -> list[str]:
    """Who a message from ``sender`` to ``to`` (a member, or ``all``: every member but the
    sender) reaches; a ``TeamError`` naming the members for an unknown one."""
    members = store.load(team).names()
    if to == "all":
        return [m for m in members if m != sender]
    if to in members:
        if to == sender:
            raise TeamError(f"'{to}' is you; send to another member or 'all'")
        return [to]
    raise TeamError(f"no member '{to}' in team '{team}' (members: {', '.join(members)}; "
                    "or 'all')")


def deliver(store: TeamStore, team: str, sender: str, to: str, text: str,
            kind: str = "message") -> list[Message]:
    """Put ``text`` from ``sender`` into the inbox of ``to``: a member name, or ``all`` for
    every member except the sender. Returns the messages written: one, also for ``all`` (a
    broadcast is one line in the team's broadcast log, read by every other member); none
    when ``all`` reaches nobody."""
    check_name("sender", sender)
    if kind not in KINDS:
        raise TeamError(f"message kind {_shown(kind)} is not one of {', '.join(KINDS)}")
    if not isinstance(text, str) or not text.strip():
        raise TeamError("the message is empty")
    message = check_message(Message(new_id(), sender, to, text, now_rfc3339(), kind=kind))
    reached = recipients(store, team, sender, to)
    if not reached:
        return []
    if to == "all":
        store.broadcasts(team).append(convert.unstructure(message))
        for name in reached:
            store.inbox(team, name).poke()
    else:
        store.inbox(team, to).append([message])
    return [message]
