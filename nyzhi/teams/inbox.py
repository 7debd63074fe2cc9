"""Member inboxes: one JSON array of messages per member, and a FIFO to wake its reader.

``inboxes/<member>.json`` is the truth: a sender appends under ``<member>.lock`` and replaces
the file atomically, so a reader (or a ``kill -9``) never sees half a message. After writing,
the sender *pokes* ``<member>.fifo`` with one byte so a waiting reader (``watch.InboxWatcher``)
wakes at once instead of polling. The poke is only a hint: nobody listening, or a full pipe,
is fine, since a reader reads the file whenever it starts or wakes.

Read messages are kept for ``nyz team status`` and history, but only the newest
``KEEP_READ`` of them: every append rewrites the file, and an inbox that grew forever would
make each message cost more than the last. Unread messages are never dropped.
"""

from __future__ import annotations

import errno
import os
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from nyzhi import convert, records
from nyzhi.teams.errors import TeamError
from nyzhi.teams.locking import file_lock, now_rfc3339, read_json, write_json
from nyzhi.teams.names import check_name

if TYPE_CHECKING:
    from nyzhi.teams.store import TeamStore

KEEP_READ = 50
KINDS = ("message", "idle_notification")


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
    """One member's inbox in ``path_dir`` (``teams/<team>/inboxes``). Blocking calls."""

    def __init__(self, path_dir: Path, member: str) -> None:
        self.dir = Path(path_dir)
        self.member = member
        self.path = self.dir / f"{member}.json"
        self.lock_path = self.dir / f"{member}.lock"
        self.fifo_path = self.dir / f"{member}.fifo"

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
        """Add ``messages`` (atomically, under the member's lock), then poke the reader."""
        if not messages:
            return
        with file_lock(self.lock_path):
            self._write(self._read() + list(messages))
        self.poke()

    def read_unread(self, mark_read: bool = True) -> list[Message]:
        """The unread messages, oldest first; with ``mark_read`` they are marked read in the
        same locked step, so two readers never both get one message."""
        with file_lock(self.lock_path):
            messages = self._read()
            unread = [m for m in messages if not m.read]
            if mark_read and unread:
                for m in unread:
                    m.read = True
                self._write(messages)
        return unread

    def unread_count(self) -> int:
        return sum(not m.read for m in self._read())

    def messages(self) -> list[Message]:
        """Every kept message, read or not, oldest first."""
        return self._read()

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


def deliver(store: TeamStore, team: str, sender: str, to: str, text: str,
            kind: str = "message") -> list[Message]:
    """Put ``text`` from ``sender`` into the inbox of ``to``: a member name, or ``all`` for
    every member except the sender. Returns the messages written, one per recipient."""
    check_name("sender", sender)
    if kind not in KINDS:
        raise TeamError(f"message kind {kind!r} is not one of {', '.join(KINDS)}")
    if not text.strip():
        raise TeamError("the message is empty")
    config = store.load(team)
    members = config.names()
    if to == "all":
        recipients = [m for m in members if m != sender]
    elif to in members:
        if to == sender:
            raise TeamError(f"'{to}' is you; send to another member or 'all'")
        recipients = [to]
    else:
        raise TeamError(f"no member '{to}' in team '{team}' (members: {', '.join(members)}; "
                        "or 'all')")
    now = now_rfc3339()
    sent = []
    for recipient in recipients:
        message = Message(new_id(), sender, to, text, now, kind=kind)
        store.inbox(team, recipient).append([message])
        sent.append(message)
    return sent
