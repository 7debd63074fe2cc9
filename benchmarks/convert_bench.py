"""The one converter (``nyzhi.convert``, on cattrs) against the hand-written code it replaced.

    python -m benchmarks convert [--json] [--quick]

Baselines, measured in the same run:

* per record kind (events, the state record, session metadata, a board task), writing
  (record -> JSON-ready dict) and reading (dict -> checked record): the converter against the
  hand-written ``to_json``/``from_json`` pair it replaced. Those pairs are kept below, verbatim
  apart from names, as the baseline; nothing else uses them.
* import cost, in fresh processes (CPU time): importing cattrs and building the converter,
  then its first ``session_start`` (generated code), against ``import trio, httpx`` (the
  start-up floor's imports);
* start-up paths, in fresh processes against a fake LLM: ``nyz run --ephemeral hi`` (text,
  saves nothing: converts nothing, no cattrs) is the baseline for ``--output-format
  stream-json`` (events go through the converter from ``session_start`` on) and for a run that
  saves its session (the meta file and every event);
* the config: structuring a full config file (every table of the scaffold uncommented) with
  cattrs through this converter, against the hand-written ``nyzhi.config.convert`` that
  replaced cattrs there (e49ca58): first use in a fresh process (imports and generated code
  included: what start-up would pay) and each later structure.

Timings are the best of several repeats (the machine is shared). Nothing here is asserted.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from nyzhi import convert
from nyzhi.core import events as ev
from nyzhi.core.loop.state_record import ACTIONS, Failure, StateRecord, read_state
from nyzhi.core.runtime.sessions.records import SessionMeta, empty_usage
from nyzhi.team_files.board import Task
from nyzhi.team_files.errors import TeamError
from nyzhi.team_files.status import TaskStatus

ROOT = Path(__file__).resolve().parent.parent
REPEATS = 5

# ---- the hand-written pairs the converter replaced (the baseline) --------------------------


def old_event_to_json(event: Any) -> dict[str, Any]:
    if isinstance(event, ev.GenericEvent):
        out: dict[str, Any] = {"type": event.type, "agent": event.agent}
        out.update((k, v) for k, v in event.data.items() if k not in out)
        return out
    out = {"type": event.type}
    for field in attrs.fields(type(event)):
        value = getattr(event, field.name)
        out[field.name] = dict(value) if isinstance(value, dict) else value
    return out


def old_event_from_json(data: dict[str, Any]) -> Any:
    if not isinstance(data, dict):
        raise ev.EventDecodeError("an event must be a JSON object")
    type_name = data.get("type")
    if not isinstance(type_name, str) or not type_name:
        raise ev.EventDecodeError("event has no 'type' string")
    cls = ev.EVENT_TYPES.get(type_name)
    if cls is None:
        rest = {k: v for k, v in data.items() if k not in ("type", "agent")}
        return ev.GenericEvent(type_name, str(data.get("agent", ev.MAIN_AGENT)), rest)
    kwargs: dict[str, Any] = {}
    for field in attrs.fields(cls):
        if field.name in data:
            kwargs[field.name] = data[field.name]
        elif field.default is attrs.NOTHING:
            raise ev.EventDecodeError(f"{type_name} event is missing field {field.name!r}")
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise ev.EventDecodeError(f"bad {type_name} event: {exc}") from exc


def old_state_to_json(self: StateRecord) -> dict[str, Any]:
    return {
        "first_prompt": self.first_prompt,
        "todos": [dict(t) for t in self.todos],
        "files": [{"path": p, "action": a} for p, a in self.files],
        "last_failure": attrs.asdict(self.last_failure) if self.last_failure else None,
    }


def old_state_from_json(data: Any) -> StateRecord:
    if not isinstance(data, dict):
        return StateRecord()
    prompt = data.get("first_prompt")
    todos = [t for t in data.get("todos") or () if isinstance(t, dict) and "id" in t]
    files = [
        (str(f["path"]), f["action"] if f.get("action") in ACTIONS else "changed")
        for f in data.get("files") or ()
        if isinstance(f, dict) and isinstance(f.get("path"), str)
    ]
    failure = data.get("last_failure")
    last = (
        Failure(failure["command"], str(failure.get("output", "")))
        if isinstance(failure, dict) and isinstance(failure.get("command"), str)
        else None
    )
    return StateRecord(prompt if isinstance(prompt, str) else "", todos, files, last)


def old_meta_to_json(self: SessionMeta) -> dict[str, Any]:
    return attrs.asdict(self)


def old_meta_from_json(data: dict[str, Any]) -> SessionMeta:
    names = {f.name for f in attrs.fields(SessionMeta)}
    if not isinstance(data, dict) or not isinstance(data.get("id"), str):
        raise ValueError("session metadata needs an 'id' string")
    kwargs = {k: v for k, v in data.items() if k in names}
    usage = empty_usage()
    usage.update(kwargs.get("usage") or {})
    kwargs["usage"] = usage
    return SessionMeta(**kwargs)


_REQUIRED: Any = object()


def _take(obj: dict[str, Any], key: str, kind: type, source: object, default: Any = _REQUIRED,
          *, aliases: tuple[str, ...] = ()) -> Any:
    value = obj.get(key)
    if type(value) is kind:
        return value
    for name in (key, *aliases):
        if obj.get(name) is not None:
            value = obj[name]
            break
    else:
        if default is _REQUIRED:
            raise TeamError(f"{source}: missing key '{key}'")
        return default
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise TeamError(f"{source}: '{key}' must be {kind.__name__}, found {value!r}")
    return value


def old_task_to_json(self: Task) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": self.id, "subject": self.subject, "description": self.description,
        "status": str(self.status), "owner": self.owner, "blocks": self.blocks,
        "blockedBy": self.blocked_by, "created_at": self.created_at,
        "updated_at": self.updated_at,
    }
    if self.active_form is not None:
        data["active_form"] = self.active_form
    return data


def old_task_from_json(data: Any, source: object) -> Task:
    if not isinstance(data, dict):
        raise TeamError(f"{source}: expected a JSON object")
    status = _take(data, "status", str, source, "pending")
    if status not in TaskStatus.__members__.values():
        raise TeamError(f"{source}: 'status' must be one of {', '.join(TaskStatus)}")
    return Task(
        id=_take(data, "id", str, source),
        subject=_take(data, "subject", str, source),
        description=_take(data, "description", str, source, ""),
        active_form=_take(data, "active_form", str, source, None),
        status=TaskStatus(status),
        owner=_take(data, "owner", str, source, None),
        blocks=[str(i) for i in _take(data, "blocks", list, source, [])],
        blocked_by=[str(i) for i in _take(data, "blockedBy", list, source, [],
                                          aliases=("blocked_by",))],
        created_at=_take(data, "created_at", str, source, ""),
        updated_at=_take(data, "updated_at", str, source, ""),
    )


# ---- in-process: per record kind -----------------------------------------------------------


def _step_events() -> list[ev.Event]:
    """What one tool-using step emits (as in session_bench), plus a status and a result."""
    return [
        *(ev.TextDelta("tok ") for _ in range(20)),
        ev.ToolStart("c1", "read", '{"path": "src/module.py"}'),
        ev.ToolDone("c1", "read", "x = 1\n" * 40, duration_ms=0.4, metadata={"lines": 40}),
        ev.Usage(1200, 40, cost_usd=0.001, total_input_tokens=5000, total_output_tokens=300),
        ev.AgentStatus("running", step=3, tokens=100),
        ev.TurnComplete("t1", "done", steps=4),
    ]


def _records() -> dict[str, tuple[list[Any], Callable, Callable, Callable, Callable]]:
    """kind -> (records, hand write, converter write, hand read, converter read)."""
    state = StateRecord("fix the bug", [{"id": str(i), "content": "x", "status": "pending"}
                                        for i in range(5)],
                        [(f"src/m{i}.py", "edited") for i in range(10)], Failure("pytest", "1"))
    meta = SessionMeta("s-1", "a title", "2026-11-20T10:00:00+00:00", "2026-11-20T10:01:00",
                       "/w", "/w", "openai", "m", 40, empty_usage(), 123456)
    task = Task("3", "write it", "all of it", None, TaskStatus.IN_PROGRESS, "alice", ["4", "5"],
                ["1"], "2026-11-20T10:00:00.000Z", "2026-11-20T10:00:01.000Z")
    return {
        "events (one step)": (_step_events(), old_event_to_json, ev.to_json,
                              old_event_from_json, ev.from_json),
        "state record": ([state], old_state_to_json, convert.unstructure,
                         old_state_from_json, read_state),
        "session meta": ([meta], old_meta_to_json, convert.unstructure, old_meta_from_json,
                         lambda d: convert.structure(d, SessionMeta, "meta")),
        "board task": ([task], old_task_to_json, convert.unstructure,
                       lambda d: old_task_from_json(d, "task"),
                       lambda d: convert.structure(d, Task, "task", TeamError)),
    }


def _per_call(fn: Callable[[Any], Any], items: list[Any], n: int) -> float:
    """CPU seconds per pass over ``items``, best of REPEATS (CPU time: the machine is shared,
    and wall time would count the moments another process had the core)."""
    best = float("inf")
    for _ in range(REPEATS):
        t0 = time.process_time()
        for _ in range(n):
            for item in items:
                fn(item)
        best = min(best, (time.process_time() - t0) / n)
    return best


def per_kind(n: int) -> dict[str, dict[str, float]]:
    out = {}
    for kind, (items, hand_w, conv_w, hand_r, conv_r) in _records().items():
        written = [hand_w(i) for i in items]
        assert json.dumps([conv_w(i) for i in items]) == json.dumps(written), kind
        assert [conv_r(d) for d in written] == [hand_r(d) for d in written], kind
        conv_w(items[0]), conv_r(written[0])  # generated functions made before timing
        rows = {}
        for name, hand, conv, data in (("write", hand_w, conv_w, items),
                                       ("read", hand_r, conv_r, written)):
            h = c = float("inf")
            for _ in range(2):  # interleaved, so load changes hit both alike
                h = min(h, _per_call(hand, data, n))
                c = min(c, _per_call(conv, data, n))
            rows[f"{name}_hand_us"] = round(h * 1e6, 2)
            rows[f"{name}_converter_us"] = round(c * 1e6, 2)
            rows[f"{name}_ratio"] = round(c / h, 2)
        out[kind] = rows
    return out


# ---- fresh processes: import cost, start-up paths, the config ------------------------------

# CPU time of the process (the machine is shared: wall time would count others' turns)
IMPORT_FLOOR = "import time; t = time.process_time(); import trio, httpx; " \
    "print((time.process_time() - t) * 1e3)"
IMPORT_CONVERTER = (
    "import time, trio, httpx, attrs; from nyzhi.core import events as ev; "
    "from nyzhi.core.prompt_env import Environment; "
    "t = time.process_time(); import cattrs; from nyzhi import convert; convert._converter(); "
    "i = time.process_time(); convert.unstructure(ev.SessionStart('s', prompt={"
    "'environment': Environment('Linux', '2026-11-26')})); "
    "print((i - t) * 1e3, (time.process_time() - i) * 1e3)"
)

CONFIG_PROBE = """
import sys, time, tomllib
from nyzhi.config.scaffold import CONFIG_TEMPLATE
from nyzhi.config.schema import Config
text = "\\n".join(l[2:] if l.startswith("# ") else l for l in CONFIG_TEMPLATE.splitlines())
raw = tomllib.loads(text)
t0 = time.process_time()
if sys.argv[1] == "hand":
    from nyzhi.config.convert import structure
    run = lambda: structure(raw)
else:
    from nyzhi import convert
    from nyzhi.config.durations import Duration, structure_duration
    from nyzhi.config.schema import (McpHttpServer, McpServer, McpStdioServer, ProviderEntry,
                                     ProviderSection)
    conv = convert._converter()
    conv.register_structure_hook(Duration, lambda v, _: structure_duration(v))
    conv.register_structure_hook(ProviderSection, lambda v, _: ProviderSection(
        v.get("default"), {k: conv.structure(e, ProviderEntry) for k, e in v.items()
                           if k != "default"}))
    conv.register_structure_hook(McpServer, lambda v, _: conv.structure(
        v, McpStdioServer if "command" in v else McpHttpServer))
    run = lambda: conv.structure(raw, Config)
config = run()
first = time.process_time() - t0
t1 = time.process_time()
for _ in range(200):
    run()
each = (time.process_time() - t1) / 200
from nyzhi.config.convert import structure
assert structure(raw) == config
print(first * 1e3, each * 1e6)
"""


def _python(code: str, *args: str) -> list[float]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          check=True, env=env, cwd=ROOT)
    return [float(x) for x in proc.stdout.split()]


def imports(runs: int) -> dict[str, float]:
    _python(IMPORT_FLOOR), _python(IMPORT_CONVERTER)  # warm caches and bytecode
    floor, conv, first = [], [], []
    for _ in range(runs):
        floor.append(_python(IMPORT_FLOOR)[0])
        a, b = _python(IMPORT_CONVERTER)
        conv.append(a)
        first.append(b)
    f, c = statistics.median(floor), statistics.median(conv)
    return {"floor_import_ms": round(f, 1), "converter_import_ms": round(c, 1),
            "first_event_ms": round(statistics.median(first), 2),
            "converter_vs_floor": round(c / f, 3)}


def config(runs: int) -> dict[str, float]:
    _python(CONFIG_PROBE, "hand"), _python(CONFIG_PROBE, "cattrs")
    rows: dict[str, list[list[float]]] = {"hand": [], "cattrs": []}
    for _ in range(runs):
        for kind in rows:
            rows[kind].append(_python(CONFIG_PROBE, kind))
    med = {k: [statistics.median(r[i] for r in v) for i in (0, 1)] for k, v in rows.items()}
    return {
        "hand_first_ms": round(med["hand"][0], 2), "cattrs_first_ms": round(med["cattrs"][0], 2),
        "first_ratio": round(med["cattrs"][0] / med["hand"][0], 2),
        "hand_each_us": round(med["hand"][1], 1), "cattrs_each_us": round(med["cattrs"][1], 1),
        "each_ratio": round(med["cattrs"][1] / med["hand"][1], 2),
    }


def startup_paths(runs: int) -> dict[str, float]:
    import trio

    from benchmarks.startup_bench import _one_run

    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        (ws / ".nyzhi").mkdir(parents=True)
        env = {**os.environ, "HOME": str(Path(tmp) / "home")}

        def write_config(server: Any) -> None:
            (ws / ".nyzhi" / "config.toml").write_text(
                f'[provider]\ndefault = "fake"\n[provider.fake]\napi_style = "openai"\n'
                f'base_url = "{server.url_for("openai")}"\nmodel = "m"\napi_key = "k"\n'
            )

        nyz = [sys.executable, "-m", "nyzhi", "run"]
        paths = {
            "text": [*nyz, "--ephemeral", "hi"],
            "stream_json": [*nyz, "--ephemeral", "--output-format", "stream-json", "hi"],
            "saved_session": [*nyz, "hi"],
        }
        for argv in paths.values():
            trio.run(_one_run, argv, ws, env, write_config)  # warm
        times: dict[str, list[dict[str, float]]] = {k: [] for k in paths}
        for _ in range(runs):  # interleaved
            for kind, argv in paths.items():
                times[kind].append(trio.run(_one_run, argv, ws, env, write_config))
    out: dict[str, float] = {}
    for kind, rows in times.items():
        out[f"{kind}_first_request_ms"] = round(
            statistics.median(r["first_request"] for r in rows) * 1e3, 1)
        out[f"{kind}_first_request_cpu_ms"] = round(
            statistics.median(r["first_request_cpu"] for r in rows) * 1e3, 1)
    for kind in ("stream_json", "saved_session"):
        out[f"{kind}_vs_text"] = round(
            out[f"{kind}_first_request_ms"] / out["text_first_request_ms"], 3)
        out[f"{kind}_cpu_vs_text"] = round(
            out[f"{kind}_first_request_cpu_ms"] / out["text_first_request_cpu_ms"], 3)
    return out


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    n = 300 if quick else 2000
    runs = 3 if quick else 9
    figures = {
        "per_kind": per_kind(n),
        "imports": imports(runs),
        "config": config(max(3, runs // 2)),
        "startup": startup_paths(max(3, runs // 2)),
    }
    if "--json" in argv:
        print(json.dumps(figures))
        return
    print("per record kind (best of repeats; ratio = converter / hand-written):")
    for kind, rows in figures["per_kind"].items():
        print(f"  {kind:18} write {rows['write_hand_us']:7.2f} -> {rows['write_converter_us']:7.2f}"
              f" us  x{rows['write_ratio']:.2f}   read {rows['read_hand_us']:7.2f} -> "
              f"{rows['read_converter_us']:7.2f} us  x{rows['read_ratio']:.2f}")
    imp = figures["imports"]
    print(f"import cattrs + build the converter: {imp['converter_import_ms']:.1f} ms "
          f"(x{imp['converter_vs_floor']:.3f} of `import trio, httpx`, {imp['floor_import_ms']:.1f}"
          f" ms; CPU time); its first session_start (generated code): "
          f"{imp['first_event_ms']:.2f} ms")
    cfg = figures["config"]
    print(f"config, first structure in a fresh process (CPU): hand-written {cfg['hand_first_ms']:.1f} ms,"
          f" cattrs {cfg['cattrs_first_ms']:.1f} ms (x{cfg['first_ratio']:.1f}); each after: "
          f"{cfg['hand_each_us']:.0f} us vs {cfg['cattrs_each_us']:.0f} us "
          f"(x{cfg['each_ratio']:.2f})")
    st = figures["startup"]
    print(f"nyz run start -> first request (median): text {st['text_first_request_ms']:.1f} ms "
          "(saves nothing, imports no cattrs; the baseline)")
    for kind, label in (("stream_json", "--output-format stream-json"),
                        ("saved_session", "saving its session")):
        print(f"  {label:28} {st[f'{kind}_first_request_ms']:7.1f} ms  "
              f"x{st[f'{kind}_vs_text']:.3f}; CPU {st[f'{kind}_first_request_cpu_ms']:.0f} vs "
              f"{st['text_first_request_cpu_ms']:.0f} ms x{st[f'{kind}_cpu_vs_text']:.3f} "
              "(10 ms grain)")


if __name__ == "__main__":
    main(sys.argv[1:])
