import json
import os
import stat
import subprocess
import sys

import pytest

from nyzhi.cli.main import main
from nyzhi.core import events as ev
from nyzhi.core.runtime.sessions import SessionStore
from nyzhi.provider.types import Message, ToolCall


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    return SessionStore()


def make(store, sid, prompt, n_extra=0):
    with store.create(session_id=sid, cwd="/p", provider="openai", model="gpt-x") as w:
        w.append_event(ev.SessionStart(sid, "/p", "openai", "gpt-x"))
        w.append_event(ev.TurnStart("t1", prompt))
        w.append_message(Message("user", prompt))
        call = ToolCall("c1", "bash", '{"command": "ls"}')
        w.append_message(Message("assistant", "Let me look.", tool_calls=(call,)))
        w.append_event(ev.ToolStart("c1", "bash", call.arguments))
        w.append_event(ev.ToolDone("c1", "bash", "a.txt", duration_ms=4))
        w.append_message(Message("tool", "a.txt", tool_call_id="c1", name="bash"))
        w.append_message(Message("assistant", "There is a.txt."))
        w.append_event(ev.Usage(100, 10, cost_usd=0.002, total_input_tokens=100))
        w.append_event(ev.TurnComplete("t1", "There is a.txt.", 2))
        for i in range(n_extra):
            w.append_message(Message("user", f"more {i}"))
    return sid


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_sessions_table_and_query(store, capsys):
    make(store, "11111111-aaaa", "list the files please")
    make(store, "22222222-bbbb", "fix the parser", n_extra=2)
    code, out, _ = run(capsys, "sessions")
    lines = out.splitlines()
    assert code == 0
    assert lines[0].split() == ["ID", "TITLE", "MSGS", "PROVIDER/MODEL", "UPDATED"]
    assert lines[1].startswith("22222222  fix the parser") and " 6  openai/gpt-x " in lines[1]
    assert lines[2].startswith("11111111  list the files please")
    code, out, _ = run(capsys, "sessions", "parser")
    assert code == 0 and len(out.splitlines()) == 2 and "22222222" in out
    code, out, _ = run(capsys, "sessions", "nothing-like-this")
    assert code == 0 and "No sessions match" in out


def test_sessions_table_caps_at_50(store, capsys):
    for i in range(52):
        with store.create(session_id=f"s{i:03d}") as w:
            w.append_message(Message("user", f"task {i}"))
    code, out, err = run(capsys, "sessions")
    assert len(out.splitlines()) == 51 and "2 older sessions not shown" in err
    assert out.splitlines()[1].startswith("s051")


def test_session_show_rename_delete(store, capsys):
    sid = make(store, "33333333-cccc", "list the files please")
    code, out, _ = run(capsys, "session", "show", "3333")
    assert code == 0
    assert f"Session   {sid}" in out and "Title     list the files please" in out
    assert "── user\nlist the files please" in out and "⚙ bash" in out
    assert "── tool bash\na.txt" in out and "100 in, 10 out, $0.0020" in out
    code, out, _ = run(capsys, "session", "rename", "33333333", "Listing", "files")
    assert code == 0 and store.resolve("Listing files").id == sid
    code, out, _ = run(capsys, "session", "delete", "listing")
    assert code == 0 and store.list() == []
    code, _, err = run(capsys, "session", "show", "3333")
    assert code == 1 and "no session matches '3333'" in err


def test_ambiguous_and_missing(store, capsys):
    make(store, "44440000-a", "alpha")
    make(store, "44441111-b", "beta")
    code, _, err = run(capsys, "session", "delete", "4444")
    assert code == 1 and "2 sessions match '4444'" in err and "44440000" in err and "44441111" in err
    assert len(store.list()) == 2


def test_export_md_json_and_file(store, capsys, tmp_path):
    sid = make(store, "55555555-e", "list the files please")
    code, out, _ = run(capsys, "export", "5555")
    assert code == 0 and out.startswith("# list the files please") and "### Tool call: `bash`" in out
    code, out, _ = run(capsys, "export", "5555", "--format", "json")
    data = json.loads(out)
    assert data["meta"]["id"] == sid and len(data["history"]) == 4
    code, whole, _ = run(capsys, "export", "5555")
    (tmp_path / "out").mkdir()
    target = tmp_path / "out" / "out.md"
    target.write_text("an older export")
    os.chmod(target, 0o640)
    code, out, err = run(capsys, "export", "5555", "-o", str(target))
    assert code == 0 and out == "" and target.read_text() == whole  # replaced whole
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in target.parent.iterdir()) == ["out.md"]  # no temp file left
    missing = tmp_path / "no/such/dir/x.md"
    code, _, err = run(capsys, "export", "5555", "-o", str(missing))
    assert code == 1 and err.startswith(f"nyz: could not write the export {missing}: ")
    assert not (tmp_path / "no").exists()  # a mistyped folder is not made
    # The one atomic write never writes through a link the user has there, nor over it.
    theirs = target.parent / "theirs.md"
    theirs.write_text("theirs")
    (target.parent / "link.md").symlink_to(theirs)
    code, _, err = run(capsys, "export", "5555", "-o", str(target.parent / "link.md"))
    assert code == 1 and "symbolic link" in err and err.count("\n") == 1
    assert theirs.read_text() == "theirs" and (target.parent / "link.md").is_symlink()


def test_replay_timeline_filter_json(store, capsys):
    make(store, "66666666-f", "list the files please")
    code, out, _ = run(capsys, "replay", "6666")
    types = [line.split()[1] for line in out.splitlines()]
    assert code == 0
    assert types == ["session_start", "turn_start", "tool_start", "tool_done", "usage", "turn_complete"]
    assert "bash ok in 4 ms [c1]: a.txt" in out
    code, out, _ = run(capsys, "replay", "6666", "--filter", "tool_start,tool_done")
    assert [line.split()[1] for line in out.splitlines()] == ["tool_start", "tool_done"]
    code, out, _ = run(capsys, "replay", "6666", "--json", "--filter", "usage")
    assert [json.loads(line) for line in out.splitlines()] == [ev.to_json(
        ev.Usage(100, 10, cost_usd=0.002, total_input_tokens=100))]
    code, _, err = run(capsys, "replay", "6666", "--filter", "bogus")
    assert code == 1 and "unknown event type(s) bogus" in err


def test_replay_rerun_runs_the_tools_again(workspace, store, capsys, monkeypatch):
    """--rerun feeds the recorded prompts to a fresh runtime whose model is the recording: the
    tools run for real in the recorded directory."""
    (workspace / "a.txt").write_text("alpha\n")
    sid = "88888888-h"
    with store.create(session_id=sid, cwd=str(workspace), provider="openai", model="gpt-x") as w:
        w.append_message(Message("user", "make a copy"))
        call = ToolCall("c1", "bash", '{"command": "cp a.txt b.txt"}')
        w.append_message(Message("assistant", "", tool_calls=(call,)))
        w.append_message(Message("tool", "", tool_call_id="c1", name="bash"))
        w.append_message(Message("assistant", "Copied."))
    monkeypatch.chdir(workspace)
    code, out, err = run(capsys, "--trust", "full", "replay", "8888", "--rerun")
    assert code == 0, err
    assert out == "> make a copy\nCopied.\n\n"
    assert (workspace / "b.txt").read_text() == "alpha\n"


def test_replay_rerun_needs_recorded_output(store, capsys):
    with store.create(session_id="99999999-i", cwd="/p") as w:
        w.append_message(Message("user", "hello"))
    code, _, err = run(capsys, "replay", "9999", "--rerun")
    assert code == 1 and "no recorded model output" in err


def test_help_is_fast_and_lists_commands(store):
    out = subprocess.run([sys.executable, "-m", "nyzhi", "--help"], capture_output=True,
                         text=True, check=True).stdout
    for name in ("sessions", "session", "export", "replay"):
        assert name in out
    # the sessions command module must not pull the sessions package in at import time
    code = ("import sys, nyzhi.cli.cmd_sessions; "
            "print('nyzhi.core.runtime.sessions' in sys.modules)")
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert got.stdout.strip() == "False"
