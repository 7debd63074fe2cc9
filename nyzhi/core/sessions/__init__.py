"""Sessions: durable conversation logs that can be listed, resumed, exported and replayed.

Layout: ``records`` (record kinds, message codec, metadata, errors), ``store`` (the JSONL
log writer and reader, with the durability guarantee in its docstring), ``export``
(Markdown / JSON) and ``recorded`` (a provider that replays recorded model output).
"""

from nyzhi.core.sessions.export import export_json as export_json
from nyzhi.core.sessions.export import export_markdown as export_markdown
from nyzhi.core.sessions.recorded import RecordedProvider as RecordedProvider
from nyzhi.core.sessions.recorded import RecordingExhausted as RecordingExhausted
from nyzhi.core.sessions.records import AmbiguousSession as AmbiguousSession
from nyzhi.core.sessions.records import SessionError as SessionError
from nyzhi.core.sessions.records import SessionMeta as SessionMeta
from nyzhi.core.sessions.records import SessionNotFound as SessionNotFound
from nyzhi.core.sessions.records import auto_title as auto_title
from nyzhi.core.sessions.records import message_from_json as message_from_json
from nyzhi.core.sessions.records import message_to_json as message_to_json
from nyzhi.core.sessions.store import Session as Session
from nyzhi.core.sessions.store import SessionStore as SessionStore
from nyzhi.core.sessions.store import SessionWriter as SessionWriter
from nyzhi.core.sessions.store import default_sessions_dir as default_sessions_dir
