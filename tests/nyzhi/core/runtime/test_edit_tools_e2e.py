"""The editing tools of issue 36 as a user meets them: ``nyz run`` and the line chat, the
scripted model on loopback, real files.

Structural rewrites reach the disk only through batch_apply, a file-writing tool on the edit
path: refused by the read-only sandbox and for protected configuration without the user,
one approval for the whole batch, one ``/undo`` for all its files.
"""

from __future__ import annotations

import json

import trio
from _scripted_run import TRUST, answer_last, run

from nyzhi.testing.cli import read_until, start_chat
from nyzhi.testing.fake_llm import FakeRequest, in_order, open_fake_llm, reply, tool_call

APP_PY = "def load(path):\n    print(path)\n    return open(path).read()\n"
UTIL_PY = "def show(x):\r\n    print(x)\r\n"  # CRLF
REWRITE = {"glob": "*.py", "pattern": "print($A)", "rewrite": "log.info($A)"}


def call(name: str, args: dict):
    return reply(tool_calls=[tool_call(name, args)])


def project(workspace) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text(APP_PY)
    (workspace / "src" / "util.py").write_bytes(UTIL_PY.encode())


def tool_outputs(events: list[dict]) -> list[tuple[str, bool, str]]:
    return [(e["name"], bool(e.get("is_error")), e["output"]) for e in events
            if e["type"] == "tool_done"]


async def test_search_preview_then_batch_apply_through_nyz_run(workspace, home, configure):
    project(workspace)
    events, server = await run(workspace, home, configure, [
        call("tool_search", {"query": "structural"}),
        call("ast_search", {**REWRITE}),
        call("read", {"file_path": "src/app.py"}),
        call("read", {"file_path": "src/util.py"}),
        call("batch_apply", REWRITE),
        answer_last,
    ])
    first = server.requests[0]
    # Deferred: one line each in the prompt, with the guidance on which search to use.
    assert "- ast_search: Find code by its syntax-tree shape" in first.system_text()
    assert "- batch_apply:" in first.system_text() and "- instrument:" in first.system_text()
    assert "ast_search" not in first.tool_names()
    assert "structure with ast_search" in first.system_text()
    outs = tool_outputs(events)
    assert [o[1] for o in outs] == [False] * 5, outs
    preview = outs[1][2]
    assert "src/app.py:2: print(path)" in preview and "src/util.py:2: print(x)" in preview
    assert "+    log.info(path)" in preview and "nothing written" in preview
    assert outs[4][2].startswith("Changed 2 files (2 replacements): src/app.py, src/util.py")
    assert (workspace / "src" / "app.py").read_text() == APP_PY.replace("print(", "log.info(")
    assert (workspace / "src" / "util.py").read_bytes() == b"def show(x):\r\n    log.info(x)\r\n"


async def test_rewrite_refused_by_the_read_only_sandbox(workspace, home, configure):
    project(workspace)
    events, _ = await run(workspace, home, configure, [
        call("read", {"file_path": "src/app.py"}),
        call("read", {"file_path": "src/util.py"}),
        call("batch_apply", REWRITE),
        answer_last,
    ], "--sandbox", "read-only")
    name, is_error, output = tool_outputs(events)[-1]
    assert name == "batch_apply" and is_error
    assert "read-only sandbox blocks `batch_apply`" in output
    assert (workspace / "src" / "app.py").read_text() == APP_PY


async def test_rewrite_of_protected_configuration_needs_the_user(workspace, home, configure):
    (workspace / ".nyzhi" / "notes.py").write_text("print(1)\n")
    events, _ = await run(workspace, home, configure, [
        call("read", {"file_path": ".nyzhi/notes.py"}),
        call("batch_apply", {**REWRITE, "path": ".nyzhi"}),
        answer_last,
    ], extra='[agent.trust]\nmode = "autoedit"\n')
    name, is_error, output = tool_outputs(events)[-1]
    assert name == "batch_apply" and is_error and "nobody can approve it" in output
    assert (workspace / ".nyzhi" / "notes.py").read_text() == "print(1)\n"


async def test_instrument_round_trip_through_nyz_run_is_byte_identical(
    workspace, home, configure
):
    original = b"def add(a, b):\r\n\treturn a + b\r\n\r\nprint(add(1, 2))"  # CRLF, tab, no EOL
    (workspace / "calc.py").write_bytes(original)
    seen = {}

    def run_it(request: FakeRequest):
        seen["instrumented"] = (workspace / "calc.py").read_bytes()
        return call("bash", {"command": "python3 calc.py"})

    def remove(request: FakeRequest):
        ident = request.tool_results()[-2].split("(id ")[1][:8]
        return call("remove_instrumentation", {"path": "calc.py", "id": ident})

    events, _ = await run(workspace, home, configure, [
        call("read", {"file_path": "calc.py"}),
        call("instrument", {"file_path": "calc.py", "functions": ["add"], "values": ["a", "b"]}),
        run_it,
        remove,
        answer_last,
    ])
    outs = tool_outputs(events)
    assert [o[1] for o in outs] == [False] * 4, outs
    assert b"# nyz-instrument:" in seen["instrumented"]
    assert "] calc.py:1 add() a=1 b=2" in outs[2][2] and "3" in outs[2][2]
    assert (workspace / "calc.py").read_bytes() == original


async def test_one_approval_for_the_batch_and_one_undo_for_all_its_files(
    workspace, home, configure
):
    project(workspace)
    script = [
        call("read", {"file_path": "src/app.py"}),
        call("read", {"file_path": "src/util.py"}),
        call("batch_apply", REWRITE),
        reply("Rewrote both files"),
    ]
    async with open_fake_llm(script=in_order(script)) as server:
        configure(workspace, server.url_for("openai"))
        proc, out = await start_chat(workspace, home)
        await proc.stdin.send_all(b"use log.info\n")
        await read_until(proc.stdout, out, b"[y/a/N]")
        assert b"src/app.py" in out and b"src/util.py" in out  # both files in the one request
        await proc.stdin.send_all(b"y\n")
        await read_until(proc.stdout, out, b"Rewrote both files\n> ")
        assert out.count(b"[y/a/N]") == 1
        assert "log.info(path)" in (workspace / "src" / "app.py").read_text()
        await proc.stdin.send_all(b"/undo\n")
        await read_until(proc.stdout, out, b"> ")
        await proc.stdin.send_all(b"/exit\n")
        with trio.fail_after(20):
            assert await proc.wait() == 0
    assert (workspace / "src" / "app.py").read_text() == APP_PY
    assert (workspace / "src" / "util.py").read_bytes() == UTIL_PY.encode()


async def test_after_edit_hooks_get_the_files_a_batch_changed(workspace, home, configure,
                                                                tmp_path):
    """A formatter hook on after_edit must see batch_apply's files, which come from a glob."""
    project(workspace)
    log = tmp_path / "after_edit.json"
    hook = f'[[agent.hooks]]\nevent = "after_edit"\ncommand = "cat > {log}"\ntimeout = 10\n'
    await run(workspace, home, configure, [
        call("read", {"file_path": "src/app.py"}),
        call("read", {"file_path": "src/util.py"}),
        call("batch_apply", REWRITE),
        answer_last,
    ], extra=TRUST + hook)
    payload = json.loads(log.read_text())
    assert payload["tool_name"] == "batch_apply"
    assert sorted(payload["paths"]) == sorted(
        str(workspace / "src" / name) for name in ("app.py", "util.py"))
