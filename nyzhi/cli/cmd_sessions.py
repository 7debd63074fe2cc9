"""``nyz sessions``, ``nyz session show|rename|delete``, ``nyz export``, ``nyz replay``.

Every command takes a session as an id, an id prefix or a title substring; several matches
is an error listing the candidates. Module-level imports are stdlib only so ``nyz --help``
stays fast; the sessions package is imported inside the handlers.

``nyz replay`` renders the recorded events with ``nyzhi.headless.render`` (the renderers ``nyz run``
uses); ``nyz replay ID --rerun`` re-executes the session with its recorded model output
(``nyzhi.core.runtime.sessions.RecordedProvider``, see ``nyzhi.headless.rerun``).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

MAX_ROWS = 50


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sessions", help="list saved sessions, newest first",
                       description="List saved sessions (at most 50, newest first).")
    p.add_argument("query", nargs="?", help="only sessions whose id starts with or title contains this")
    p.set_defaults(handler=run_list)

    p = sub.add_parser("session", help="show, rename or delete one session")
    actions = p.add_subparsers(dest="session_action", metavar="ACTION", required=True)
    a = actions.add_parser("show", help="print a session's metadata and conversation")
    a.add_argument("query", metavar="ID", help="id, id prefix or title")
    a.set_defaults(handler=run_show)
    a = actions.add_parser("rename", help="set a session's title")
    a.add_argument("query", metavar="ID", help="id, id prefix or title")
    a.add_argument("title", nargs="+", help="the new title")
    a.set_defaults(handler=run_rename)
    a = actions.add_parser("delete", help="delete a session's files")
    a.add_argument("query", metavar="ID", help="id, id prefix or title")
    a.set_defaults(handler=run_delete)

    p = sub.add_parser("export", help="export a session as Markdown or JSON")
    p.add_argument("query", metavar="ID", help="id, id prefix or title")
    p.add_argument("--format", choices=("md", "json"), default="md", help="default: md")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    p.set_defaults(handler=run_export)

    p = sub.add_parser("replay", help="print a session's event timeline",
                       description="Print the recorded events of a session.")
    p.add_argument("query", metavar="ID", help="id, id prefix or title")
    p.add_argument("--filter", action="append", metavar="TYPE",
                   help="only these event types (repeatable or comma separated)")
    p.add_argument("--json", action="store_true", help="one JSON event per line, as stream-json printed it (the recorded "
                        "events: not the deltas nor the result)")
    p.add_argument("--rerun", action="store_true",
                   help="re-execute the session against its recorded model output")
    p.set_defaults(handler=run_replay)


def _fail(exc: Exception | str) -> int:
    print(f"nyz: {exc}", file=sys.stderr)
    return 1


def _store() -> Any:
    from nyzhi.core.runtime.sessions import SessionStore

    return SessionStore()


def _resolve(query: str) -> Any:
    """(store, meta), or raise SessionError with a user-facing message."""
    store = _store()
    return store, store.resolve(query)


def _local_time(iso: str) -> str:
    import datetime as dt

    try:
        return dt.datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return iso[:16]


def run_list(args: argparse.Namespace) -> int:
    from nyzhi.core.runtime.sessions import SessionError
    from nyzhi.textcut import cut as _cut

    store = _store()
    try:
        metas = store.list(args.query)
    except SessionError as exc:
        return _fail(exc)
    for note in store.notices:  # a damaged file repaired (kept beside it): said once
        print(f"nyz: {note}", file=sys.stderr)
    if not metas:
        print("No sessions found." if not args.query else f"No sessions match {args.query!r}.")
        return 0
    from nyzhi.core.protocol.live_socket import live_sessions

    live = live_sessions()  # a LIVE column only when a listed session runs now
    marked = any(m.id in live for m in metas[:MAX_ROWS])
    rows = [("ID", "TITLE", "MSGS", "PROVIDER/MODEL", "UPDATED", "LIVE")]
    for m in metas[:MAX_ROWS]:
        model = "/".join(x for x in (m.provider, m.model) if x) or "-"
        rows.append((m.id[:8], _cut(m.title or "(untitled)", 38), str(m.message_count),
                     _cut(model, 32), _local_time(m.updated), "live" if m.id in live else ""))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    for r in rows:
        cells = [r[0].ljust(widths[0]), r[1].ljust(widths[1]), r[2].rjust(widths[2]),
                 r[3].ljust(widths[3]), r[4].ljust(widths[4]) + "  " + r[5] if marked else r[4]]
        print("  ".join(cells).rstrip())
    if len(metas) > MAX_ROWS:
        print(f"({len(metas) - MAX_ROWS} older sessions not shown; narrow with a QUERY)",
              file=sys.stderr)
    return 0


def run_show(args: argparse.Namespace) -> int:
    from nyzhi.core.runtime.sessions import SessionError
    from nyzhi.textcut import cut as _cut

    try:
        store, meta = _resolve(args.query)
        session = store.load(meta.id)
    except SessionError as exc:
        return _fail(exc)
    m = session.meta
    usage = m.usage
    print(f"Session   {m.id}")
    print(f"Title     {m.title or '(untitled)'}")
    print(f"Provider  {m.provider or '-'} / {m.model or '-'}")
    print(f"Created   {_local_time(m.created)}")
    print(f"Updated   {_local_time(m.updated)}")
    print(f"Directory {m.cwd or '-'}")
    print(f"Messages  {m.message_count}")
    print(f"Usage     {usage.get('input_tokens', 0)} in, {usage.get('output_tokens', 0)} out, "
          f"${usage.get('cost_usd', 0.0):.4f}")
    if session.skipped_lines:
        print(f"Note      {session.skipped_lines} unreadable log line(s) skipped "
              "(an interrupted write)")
    print(f"Log       {store.log_path(m.id)}")
    for message in session.history:
        print()
        if message.role == "assistant":
            print("── assistant")
            if message.content:
                print(message.content)
            for call in message.tool_calls:
                print(f"  ⚙ {call.name} {_cut(call.arguments, 200)}")
        elif message.role == "tool":
            flag = " (error)" if message.is_error else ""
            print(f"── tool {message.name or message.tool_call_id or ''}{flag}")
            lines = message.content.splitlines()
            print("\n".join(lines[:20]) + (f"\n… {len(lines) - 20} more lines" if len(lines) > 20 else ""))
        else:
            print(f"── {message.role}")
            print(message.content)
    return 0


def run_rename(args: argparse.Namespace) -> int:
    from nyzhi.core.runtime.sessions import SessionError

    title = " ".join(args.title).strip()
    if not title:
        return _fail("the new title is empty")
    try:
        store, meta = _resolve(args.query)
        store.rename(meta.id, title)
    except SessionError as exc:
        return _fail(exc)
    print(f"Renamed {meta.id[:8]} to {title!r}")
    return 0


def run_delete(args: argparse.Namespace) -> int:
    from nyzhi.core.runtime.sessions import SessionError

    try:
        store, meta = _resolve(args.query)
        store.delete(meta.id)
    except SessionError as exc:
        return _fail(exc)
    print(f"Deleted {meta.id[:8]} ({meta.title or 'untitled'})")
    return 0


def run_export(args: argparse.Namespace) -> int:
    from nyzhi.core.runtime.sessions import SessionError, export_json, export_markdown

    try:
        store, meta = _resolve(args.query)
        session = store.load(meta.id)
    except SessionError as exc:
        return _fail(exc)
    if args.format == "json":
        text = json.dumps(export_json(session), indent=2, ensure_ascii=False) + "\n"
    else:
        text = export_markdown(session)
    if not args.output or args.output == "-":
        sys.stdout.write(text)
        return 0
    from pathlib import Path

    from nyzhi.core.runtime.sessions import write_export

    try:
        write_export(Path(args.output), text)
    except OSError as exc:  # a StorageError: one line naming the file and why
        return _fail(exc)
    print(f"Exported {meta.id[:8]} to {args.output}", file=sys.stderr)
    return 0


def run_replay(args: argparse.Namespace) -> int:
    from nyzhi.core.protocol import events as ev
    from nyzhi.core.runtime.sessions import SessionError
    from nyzhi.headless.render import JsonLines, Timeline

    try:
        store, meta = _resolve(args.query)
        session = store.load(meta.id)
    except SessionError as exc:
        return _fail(exc)
    if args.rerun:
        return _rerun(session, args)
    wanted = {t.strip() for f in args.filter or () for t in f.split(",") if t.strip()}
    unknown = wanted - set(ev.EVENT_TYPES)
    if unknown:
        return _fail(f"unknown event type(s) {', '.join(sorted(unknown))}; "
                     f"known: {', '.join(ev.EVENT_TYPES)}")
    renderer = JsonLines(sys.stdout) if args.json else Timeline(sys.stdout)
    if not args.json and session.agents and not wanted:
        print("\n".join(agent_tree(session)))
    shown = 0
    for event, ts in zip(session.events, session.event_times, strict=False):
        if wanted and event.type not in wanted:
            continue
        shown += 1
        if isinstance(renderer, Timeline):
            renderer.when = ts
        renderer.render(event)
    if not shown and not args.json:
        print("No events recorded." if not wanted else "No events of that type.", file=sys.stderr)
    return 0


def agent_tree(session: Any) -> list[str]:
    """The session's agents as an indented tree: the main agent, then each subagent under its
    parent with its role, model and thread length."""
    from nyzhi.core.protocol import events as ev

    lines = [f"agents: {ev.MAIN_AGENT}"]
    for path in sorted(session.agents):
        thread = session.agents[path]
        depth = path[len(ev.MAIN_AGENT):].count("/")
        info = thread.info
        lines.append(f"{'  ' * depth}└ {path.rsplit('/', 1)[-1]} ({info.get('role', '?')}, "
                     f"{info.get('model', '?')}, {len(thread.messages)} messages)")
    return lines


def _rerun(session: Any, args: argparse.Namespace) -> int:
    """Re-execute the session against its recorded model output (``nyzhi.headless.rerun``)."""
    from pathlib import Path

    from nyzhi.core.runtime.sessions import RecordedProvider
    from nyzhi.headless.rerun import rerun_session

    provider = RecordedProvider.from_session(session)
    if provider.remaining == 0:
        return _fail(f"session {session.id[:8]} has no recorded model output to rerun")
    prompts = [m.content for m in session.history if m.role == "user"]
    recorded_cwd = Path(session.meta.cwd) if session.meta.cwd else None
    return rerun_session(prompts, recorded_cwd, provider, args)
