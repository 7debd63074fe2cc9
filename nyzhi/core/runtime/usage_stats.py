"""Usage analytics read from the session journals: ``nyz stats``, ``nyz cost`` and ``/stats``.

The journal is the analytics record: there is no second log. Each session's log is folded
once into a small summary (rows of tokens, cost, turns and tool calls by local day, model and
agent role), and the summaries are kept in an index under the XDG cache dir, keyed by each
log's size and mtime. A warm run only ``stat``s the logs and reads the index; a log that
changed (a session went on, was renamed or repaired) is folded again, alone. The index is
only a cache: it is replaced atomically, and a missing, corrupt or foreign one is rebuilt.

Days are local calendar days (the index remembers the time zone it was built in and is
rebuilt when that changes). A subagent's usage counts under its role (``explorer``,
``worker``…, from its ``agent`` record), the main agent's under ``main``; a session's
project is its workspace root.

``nyz --help`` imports this module (for the choices of ``--by``): it imports only what every
start-up has loaded already, the rest where it is used.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

INDEX_VERSION = 1
MAIN = "main"
# The numbers of a row, in order; a row is ``[day, model, agent, *NUMBERS]``.
NUMBERS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
           "cost_usd", "turns", "tool_calls")
_KEY_FIELDS = 3
_USAGE_KEYS = NUMBERS[:4]
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_NICK_SUFFIX = re.compile(r"-\d+$")
PERIODS = ("daily", "weekly", "monthly")
GROUPS = ("model", "project", "agent")


def _zero() -> dict[str, Any]:
    return {k: 0.0 if k == "cost_usd" else 0 for k in NUMBERS}


def _day(ts: float) -> str:
    return time.strftime("%Y-%m-%d", time.localtime(ts))


def _tz() -> str:
    return f"{time.timezone}/{time.altzone}/{'/'.join(time.tzname)}"


def _role(path: str, roles: dict[str, str]) -> str:
    """The role an agent path counts under: ``main``, or its ``agent`` record's role, else
    its nickname without the counter (``/agents/main/explorer-2`` → ``explorer``)."""
    if path in ("", "/agents/main"):
        return MAIN
    if path in roles:
        return roles[path]
    return _NICK_SUFFIX.sub("", path.rstrip("/").rsplit("/", 1)[-1]) or path


def summarize(lines: Iterable[bytes]) -> dict[str, Any]:
    """One session's summary from its log lines (a torn or unknown line is skipped)."""
    tally = _Tally()
    for line in lines:
        try:
            record = json.loads(line)
            kind = record.get("kind")
            ts = float(record.get("ts") or 0.0)
        except (ValueError, TypeError, AttributeError):
            continue
        tally.take(record, kind, ts)
    return tally.summary()


class _Tally:
    """A session's usage being counted from its log (``summarize``): one row of numbers per
    (day, model, role), and who used which model."""

    def __init__(self) -> None:
        self.header: dict[str, Any] = {}
        self.roles: dict[str, str] = {}
        self.models: dict[str, str] = {}  # agent path -> the model it last used
        self.rows: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.first = self.last = 0.0

    def row(self, ts: float, agent: str) -> dict[str, Any]:
        key = (_day(ts), self.models.get(agent) or self.header.get("model") or "",
               _role(agent, self.roles))
        found = self.rows.get(key)
        if found is None:
            found = self.rows[key] = _zero()
        return found

    def take(self, record: dict[str, Any], kind: Any, ts: float) -> None:
        if ts:
            self.first = ts if not self.first else min(self.first, ts)
            self.last = max(self.last, ts)
        if kind == "header":
            self.header = record
        elif kind == "agent" and isinstance(record.get("info"), dict):
            info = record["info"]
            path = str(record.get("agent", ""))
            self.roles[path] = str(info.get("role") or "") or _role(path, {})
            if info.get("model"):
                self.models[path] = str(info["model"])
        elif kind == "event" and isinstance(record.get("event"), dict):
            try:
                self._event(record["event"], ts)
            except (TypeError, ValueError):
                pass

    def _event(self, event: dict[str, Any], ts: float) -> None:
        """Usage, turns and tool calls count on the agent's row; a model named by usage or
        the main agent's start is the one its later rows count under."""
        etype = event.get("type")
        agent = str(event.get("agent") or "")
        if etype == "usage":
            if event.get("model"):
                self.models[agent] = str(event["model"])
            r = self.row(ts, agent)
            for key in _USAGE_KEYS:
                r[key] += int(event.get(key) or 0)
            r["cost_usd"] += float(event.get("cost_usd") or 0.0)
        elif etype == "turn_start":
            self.row(ts, agent)["turns"] += 1
        elif etype == "tool_done":
            self.row(ts, agent)["tool_calls"] += 1
        elif etype == "session_start" and agent in ("", "/agents/main"):
            if event.get("model"):
                self.models[agent] = str(event["model"])
                self.header.setdefault("model", event["model"])

    def summary(self) -> dict[str, Any]:
        header = self.header
        return {
            "created": _iso(self.first), "updated": _iso(self.last),
            "project": str(header.get("workspace_root") or header.get("cwd") or ""),
            "provider": str(header.get("provider") or ""),
            "rows": [[*key, *(r[k] for k in NUMBERS)] for key, r in sorted(self.rows.items())],
        }


def _iso(ts: float) -> str:
    import datetime as _dt

    return _dt.datetime.fromtimestamp(ts).isoformat(timespec="seconds") if ts else ""


def index_path(sessions_root: Path, cache_root: Path | None = None) -> Path:
    """Where the index of ``sessions_root`` lives: one file per sessions directory."""
    if cache_root is None:
        from nyzhi.config.paths import cache_dir

        cache_root = cache_dir()
    import hashlib

    digest = hashlib.sha256(str(sessions_root.resolve()).encode()).hexdigest()[:16]
    return cache_root / "stats" / f"{digest}.json"


def _read_index(path: Path, root: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_bytes())
        if (data.get("v") == INDEX_VERSION and data.get("root") == str(root)
                and data.get("tz") == _tz() and isinstance(data.get("sessions"), dict)):
            return data["sessions"]
    except (OSError, ValueError, AttributeError):
        pass
    return {}


def session_summaries(sessions_root: Path, cache_root: Path | None = None,
                      ) -> dict[str, dict[str, Any]]:
    """Every session's summary by id, folding only the logs changed since the index was
    written, and writing the index back (atomically) when anything changed. A log being
    written right now is folded as it is; the next run sees the rest."""
    from nyzhi.config.fsutil import atomic_write
    from nyzhi.oserror import StorageError

    path = index_path(sessions_root, cache_root)
    old = _read_index(path, sessions_root)
    fresh: dict[str, Any] = {}
    changed = False
    try:
        entries = list(os.scandir(sessions_root))
    except (FileNotFoundError, NotADirectoryError):
        entries = []
    for entry in entries:
        name = entry.name
        if not name.endswith(".jsonl") or not _ID_RE.match(name[:-6]):
            continue
        try:
            st = entry.stat()
        except OSError:
            continue
        sid = name[:-6]
        known = old.get(sid)
        if known and known.get("size") == st.st_size and known.get("mtime") == st.st_mtime_ns:
            fresh[sid] = known
            continue
        try:
            with open(entry.path, "rb") as f:
                summary = summarize(f)
        except OSError:
            continue
        fresh[sid] = {"size": st.st_size, "mtime": st.st_mtime_ns, "summary": summary}
        changed = True
    if changed or len(fresh) != len(old):
        data = {"v": INDEX_VERSION, "root": str(sessions_root), "tz": _tz(), "sessions": fresh}
        try:  # a cache: a read-only cache dir only costs the next run the folding again
            atomic_write(path, json.dumps(data, separators=(",", ":")).encode(), mode=0o600,
                         dir_mode=0o700, what="the stats index")
        except StorageError:
            pass
    return {sid: entry["summary"] for sid, entry in fresh.items()}


# ---- aggregation --------------------------------------------------------------------------


def period_of(day: str, period: str) -> str:
    """``2026-11-26`` as its day, ISO week (``2026-W48``) or month (``2026-11``)."""
    if period == "monthly":
        return day[:7]
    if period == "weekly":
        import datetime as _dt

        year, week, _ = _dt.date.fromisoformat(day).isocalendar()
        return f"{year}-W{week:02d}"
    return day


def _grouper(by: str | None, summary: dict[str, Any]) -> Callable[[list[Any]], str]:
    if by == "model":
        return lambda row: row[1] or "(unknown)"
    if by == "agent":
        return lambda row: row[2]
    if by == "project":
        project = summary["project"] or "(unknown)"
        return lambda _row: project
    return lambda _row: ""


def _add(total: dict[str, Any], row: list[Any]) -> None:
    for key, value in zip(NUMBERS, row[_KEY_FIELDS:], strict=True):
        total[key] += value


def _finish(total: dict[str, Any]) -> dict[str, Any]:
    prompt = total["input_tokens"] + total["cache_read_tokens"] + total["cache_write_tokens"]
    return {**total, "cost_usd": round(total["cost_usd"], 6),
            "cache_hit_rate": round(total["cache_read_tokens"] / prompt, 4) if prompt else 0.0}


def stats(summaries: dict[str, dict[str, Any]], by: str | None = None) -> dict[str, Any]:
    """Totals over every session (``sessions``, first and last activity, the numbers and the
    cache hit rate: cached prompt tokens of all prompt tokens), and by ``by`` if given."""
    total = _zero()
    groups: dict[str, dict[str, Any]] = {}
    first = [s["created"] for s in summaries.values() if s["created"]]
    last = [s["updated"] for s in summaries.values() if s["updated"]]
    for summary in summaries.values():
        key = _grouper(by, summary)
        for row in summary["rows"]:
            _add(total, row)
            if by:
                _add(groups.setdefault(key(row), _zero()), row)
    out: dict[str, Any] = {"sessions": len(summaries), "first": min(first, default=""),
                           "last": max(last, default=""), **_finish(total)}
    if by:
        out["by"] = by
        out["groups"] = {k: _finish(v) for k, v in
                         sorted(groups.items(), key=lambda kv: -kv[1]["cost_usd"])}
    return out


def cost(summaries: dict[str, dict[str, Any]], period: str = "daily",
         by: str | None = None) -> dict[str, Any]:
    """Usage per day, ISO week or month, oldest first, each split by ``by`` when given; and
    the total. Periods without usage are left out."""
    periods: dict[str, dict[str, Any]] = {}
    for summary in summaries.values():
        key = _grouper(by, summary)
        for row in summary["rows"]:
            entry = periods.setdefault(period_of(row[0], period),
                                       {"total": _zero(), "groups": {}})
            _add(entry["total"], row)
            if by:
                _add(entry["groups"].setdefault(key(row), _zero()), row)
    rows = []
    total = _zero()
    for name in sorted(periods):
        entry = periods[name]
        _add(total, ["", "", "", *(entry["total"][k] for k in NUMBERS)])
        item: dict[str, Any] = {"period": name, **_finish(entry["total"])}
        if by:
            item["groups"] = {k: _finish(v) for k, v in sorted(
                entry["groups"].items(), key=lambda kv: -kv[1]["cost_usd"])}
        rows.append(item)
    return {"period": period, "by": by, "periods": rows, "total": _finish(total)}


# ---- text ---------------------------------------------------------------------------------


def _n(value: int) -> str:
    return f"{value:,}"


def _usd(value: float) -> str:
    return f"${value:,.4f}" if value < 1 else f"${value:,.2f}"


def stats_lines(data: dict[str, Any]) -> list[str]:
    """``nyz stats`` and ``/stats`` as text."""
    if not data["sessions"]:
        return ["no sessions yet"]
    lines = [
        f"sessions    {_n(data['sessions'])}  ({data['first'][:10]} to {data['last'][:10]})",
        f"turns       {_n(data['turns'])}",
        f"tool calls  {_n(data['tool_calls'])}",
        f"tokens      input {_n(data['input_tokens'])} · output {_n(data['output_tokens'])}",
        f"cache       read {_n(data['cache_read_tokens'])} · write "
        f"{_n(data['cache_write_tokens'])} · hit rate {data['cache_hit_rate']:.0%}",
        f"cost        {_usd(data['cost_usd'])}",
    ]
    if data.get("groups"):
        lines.append(f"by {data['by']}:")
        width = max(len(k) for k in data["groups"]) + 2
        for name, g in data["groups"].items():
            lines.append(f"  {name.ljust(width)}{_usd(g['cost_usd']):>12}  "
                         f"{_n(g['input_tokens'] + g['output_tokens']):>14} tokens  "
                         f"{_n(g['turns']):>6} turns  {_n(g['tool_calls']):>6} tool calls")
    return lines


def cost_lines(data: dict[str, Any]) -> list[str]:
    """``nyz cost`` as text: one line per period (and per group under it), then the total."""
    if not data["periods"]:
        return ["no usage recorded yet"]
    lines = []
    for p in data["periods"]:
        lines.append(f"{p['period']:<12}{_usd(p['cost_usd']):>12}  "
                     f"{_n(p['input_tokens'] + p['output_tokens']):>14} tokens  "
                     f"cache hit {p['cache_hit_rate']:.0%}")
        for name, g in (p.get("groups") or {}).items():
            lines.append(f"  {name:<30}{_usd(g['cost_usd']):>12}  "
                         f"{_n(g['input_tokens'] + g['output_tokens']):>14} tokens")
    t = data["total"]
    lines.append(f"{'total':<12}{_usd(t['cost_usd']):>12}  "
                 f"{_n(t['input_tokens'] + t['output_tokens']):>14} tokens")
    return lines
