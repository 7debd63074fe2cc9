"""Sessions: durable conversation logs that can be listed, resumed, exported and replayed.

Layout: ``records`` (record kinds, message codec, metadata, errors), ``store`` (the JSONL
log writer and reader, with the durability guarantee in its docstring), ``export``
(Markdown / JSON) and ``recorded`` (a provider that replays recorded model output).

Names are exported lazily: the runtime imports ``store`` and ``records`` only, and pays
nothing for the exporters and the replaying provider a plain run never uses.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "export_json": "nyzhi.core.runtime.sessions.export",
    "export_markdown": "nyzhi.core.runtime.sessions.export",
    "write_export": "nyzhi.core.runtime.sessions.export",
    "RecordedProvider": "nyzhi.core.runtime.sessions.recorded",
    "RecordingExhausted": "nyzhi.core.runtime.sessions.recorded",
    "AmbiguousSession": "nyzhi.core.runtime.sessions.records",
    "SessionError": "nyzhi.core.runtime.sessions.records",
    "SessionMeta": "nyzhi.core.runtime.sessions.records",
    "SessionNotFound": "nyzhi.core.runtime.sessions.records",
    "auto_title": "nyzhi.core.runtime.sessions.records",
    "message_from_json": "nyzhi.core.runtime.sessions.records",
    "message_to_json": "nyzhi.core.runtime.sessions.records",
    "Session": "nyzhi.core.runtime.sessions.store",
    "SessionStore": "nyzhi.core.runtime.sessions.store",
    "SessionWriter": "nyzhi.core.runtime.sessions.store",
    "default_sessions_dir": "nyzhi.core.runtime.sessions.store",
}

__all__ = list(_EXPORTS)

if TYPE_CHECKING:
    from nyzhi.core.runtime.sessions.export import export_json as export_json
    from nyzhi.core.runtime.sessions.export import export_markdown as export_markdown
    from nyzhi.core.runtime.sessions.export import write_export as write_export
    from nyzhi.core.runtime.sessions.recorded import RecordedProvider as RecordedProvider
    from nyzhi.core.runtime.sessions.recorded import RecordingExhausted as RecordingExhausted
    from nyzhi.core.runtime.sessions.records import AmbiguousSession as AmbiguousSession
    from nyzhi.core.runtime.sessions.records import SessionError as SessionError
    from nyzhi.core.runtime.sessions.records import SessionMeta as SessionMeta
    from nyzhi.core.runtime.sessions.records import SessionNotFound as SessionNotFound
    from nyzhi.core.runtime.sessions.records import auto_title as auto_title
    from nyzhi.core.runtime.sessions.records import message_from_json as message_from_json
    from nyzhi.core.runtime.sessions.records import message_to_json as message_to_json
    from nyzhi.core.runtime.sessions.store import Session as Session
    from nyzhi.core.runtime.sessions.store import SessionStore as SessionStore
    from nyzhi.core.runtime.sessions.store import SessionWriter as SessionWriter
    from nyzhi.core.runtime.sessions.store import default_sessions_dir as default_sessions_dir


def __getattr__(name: str) -> Any:
    try:
        module = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value
