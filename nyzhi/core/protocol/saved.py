"""The saved sessions, as a front end may see them: whether one is kept, the list of them, and
one's recorded events (what a front end replays when it resumes or loads a session).

Session-level functions of the protocol: a front end offers to resume a session, lists the
sessions of a folder (ACP's ``session/list``) or replays one (ACP's ``session/load``, the
console's redraw) through these, never through the session store itself. They read files, so
a trio front end calls them in a thread. ``SessionError`` (``nyzhi.core.runtime.sessions``) is what they
raise, with the one line a person is shown: a session that cannot be found or read.
"""

from __future__ import annotations

import os
from typing import Any

from nyzhi.core.runtime.sessions.records import SessionError, SessionMeta


def session_kept(session_id: str) -> bool:
    """Whether ``session_id`` is saved (a session that never took a turn is not): what a
    front end may offer to resume."""
    from nyzhi.core.runtime.sessions.store import SessionStore

    if not session_id:
        return False
    try:
        return SessionStore().log_path(session_id).is_file()
    except (OSError, ValueError):
        return False


def saved_sessions(cwd: str | None = None) -> list[SessionMeta]:
    """The saved sessions newest first, only those started in ``cwd`` (the same folder once
    links are resolved) when it is given."""
    from nyzhi.core.runtime.sessions.store import SessionStore

    sessions = SessionStore().list()
    if cwd is None:
        return sessions
    wanted = os.path.realpath(cwd)
    return [m for m in sessions if m.cwd and os.path.realpath(m.cwd) == wanted]


def recorded_events(session_id: str) -> list[Any]:
    """The events a saved session recorded, in order (an id, id prefix or title names it).

    Raises:
        SessionError: no such session, or it cannot be read.
    """
    from nyzhi.core.runtime.sessions.store import SessionStore

    store = SessionStore()
    return list(store.load(store.resolve(session_id).id).events)


__all__ = ["SessionError", "SessionMeta", "recorded_events", "saved_sessions", "session_kept"]
