"""instrument / remove_instrumentation on real files: the logging runs, and taking it out gives
the file back byte for byte (CRLF, tabs, no final newline)."""

from __future__ import annotations

import shutil
import sys

import pytest
import trio
from _toolctx import make_ctx

from nyzhi.tools.builtin.instrument import InstrumentTool, RemoveInstrumentationTool
from nyzhi.tools.undo import undo_last

PY = 'def load(path):\n    """Load a file."""\n    data = path.upper()\n    return data\n'
CASES = {
    "plain.py": PY.encode(),
    "crlf.py": PY.replace("\n", "\r\n").encode(),
    "no_eol.py": PY.rstrip("\n").encode(),
    "tabs.py": PY.replace("    ", "\t").encode(),
    "crlf_no_eol.ts": (
        b"export function greet(name: string): string {\r\n\tconst s = `hi ${name}`;\r\n"
        b"\treturn s;\r\n}"
    ),
    "main.go": (
        b"package main\n\nfunc add(a int, b int) int {\n\tsum := a + b\n\treturn sum\n}\n\n"
        b"func main() {\n\tprintln(add(1, 2))\n}\n"
    ),
    "lib.rs": b"fn twice(x: i32) -> i32 {\n    let y = x * 2;\n    y\n}\n",
    "Main.java": (
        b"public class Main {\r\n    static int add(int a, int b) {\r\n        int s = a + b;\r\n"
        b"        return s;\r\n    }\r\n}\r\n"
    ),
}
FUNCTION = {".py": "load", ".ts": "greet", ".go": "add", ".rs": "twice", ".java": "add"}
LINES = {".py": [3, 4], ".ts": [1, 3], ".go": [4, 5], ".rs": [2, 3], ".java": [3, 4]}
VALUE = {".py": "path", ".ts": "name", ".go": "a", ".rs": "x", ".java": "a"}


@pytest.mark.parametrize("name", sorted(CASES))
async def test_round_trip_is_byte_identical(tmp_path, name):
    f = tmp_path / name
    f.write_bytes(CASES[name])
    ext = f.suffix
    ctx = make_ctx(tmp_path)
    result = await InstrumentTool().run(
        {"file_path": name, "functions": [FUNCTION[ext]], "lines": LINES[ext],
         "values": [VALUE[ext]]}, ctx)
    assert not result.is_error, result.output
    ident = result.output.split("(id ")[1][:8]
    changed = f.read_bytes()
    assert changed != CASES[name] and changed.count(f"nyz-instrument:{ident}".encode()) >= 2
    if b"\r\n" in CASES[name]:  # every inserted line ends like the file's lines
        assert changed.count(b"\n") == changed.count(b"\r\n")
    removed = await RemoveInstrumentationTool().run({"path": name, "id": ident}, ctx)
    assert not removed.is_error, removed.output
    assert f.read_bytes() == CASES[name]


async def test_instrumented_python_logs_the_values_and_keeps_the_docstring(tmp_path):
    f = tmp_path / "app.py"
    f.write_text(PY + "\nprint(load('abc'))\n")
    ctx = make_ctx(tmp_path)
    entry = await InstrumentTool().run(
        {"file_path": "app.py", "functions": ["load"], "values": ["path"]}, ctx)
    assert not entry.is_error, entry.output
    line = await InstrumentTool().run(
        {"file_path": "app.py", "lines": [5], "values": ["path", "data"]}, ctx)  # return data
    assert not line.is_error, line.output
    first, second = (r.output.split("(id ")[1][:8] for r in (entry, line))
    run = await trio.run_process([sys.executable, str(f)], capture_stdout=True,
                                 capture_stderr=True)
    assert run.stdout == b"ABC\n"  # stdout untouched: the logging goes to stderr
    assert run.stderr.decode().splitlines() == [
        f"[nyz {first}] app.py:1 load() path='abc'",
        f"[nyz {second}] app.py:5 path='abc' data='ABC'",
    ]
    text = f.read_text()
    assert text.index('"""Load a file."""') < text.index("nyz-instrument")


async def test_instrumented_go_logs_its_arguments(tmp_path):
    go = tmp_path / "main.go"
    go.write_bytes(CASES["main.go"])
    ctx = make_ctx(tmp_path)
    result = await InstrumentTool().run(
        {"file_path": "main.go", "functions": ["add"], "values": ["a", "b"]}, ctx)
    assert not result.is_error, result.output
    text = go.read_text()
    assert '\tprintln("[nyz ' in text and '"a=", a, "b=", b)  // nyz-instrument:' in text


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
async def test_instrumented_javascript_runs_and_logs(tmp_path):
    js = tmp_path / "app.js"
    js.write_text("class Cart {\n  total(items) {\n    return items.length;\n  }\n}\n"
                  "console.log(new Cart().total([1, 2]));\n")
    result = await InstrumentTool().run(
        {"file_path": "app.js", "functions": ["total"], "values": ["items"]}, make_ctx(tmp_path))
    assert not result.is_error, result.output
    ident = result.output.split("(id ")[1][:8]
    run = await trio.run_process(["node", str(js)], capture_stdout=True, capture_stderr=True)
    assert run.stdout == b"2\n"
    assert run.stderr.decode() == f"[nyz {ident}] app.js:2 total() items= [ 1, 2 ]\n"


@pytest.mark.skipif(shutil.which("rustc") is None, reason="rustc is not installed")
async def test_instrumented_rust_compiles_and_logs(tmp_path):
    rs = tmp_path / "main.rs"
    rs.write_bytes(CASES["lib.rs"] + b"fn main() {\n    println!(\"{}\", twice(21));\n}\n")
    result = await InstrumentTool().run(
        {"file_path": "main.rs", "functions": ["twice"], "lines": [3], "values": ["x"]},
        make_ctx(tmp_path))
    assert not result.is_error, result.output
    ident = result.output.split("(id ")[1][:8]
    with trio.fail_after(120):
        await trio.run_process(["rustc", "-o", str(tmp_path / "main"), str(rs)], cwd=tmp_path,
                               capture_stdout=True, capture_stderr=True)
    run = await trio.run_process([str(tmp_path / "main")], capture_stdout=True,
                                 capture_stderr=True)
    assert run.stdout == b"42\n"
    assert run.stderr.decode().splitlines() == [
        f"[nyz {ident}] main.rs:1 twice() x=21", f"[nyz {ident}] main.rs:3 x=21"]


async def test_a_line_that_would_break_the_syntax_is_refused(tmp_path):
    f = tmp_path / "branch.py"
    original = "def f(x):\n    if x:\n        return 1\n    else:\n        return 2\n"
    f.write_text(original)
    result = await InstrumentTool().run({"file_path": "branch.py", "lines": [4]},
                                        make_ctx(tmp_path))
    assert result.is_error and "would break the syntax" in result.output
    assert "Nothing was written" in result.output
    assert f.read_text() == original
    go = tmp_path / "main.go"
    go.write_bytes(CASES["main.go"])
    top = await InstrumentTool().run({"file_path": "main.go", "lines": [3]}, make_ctx(tmp_path))
    assert top.is_error and "must be inside a function body" in top.output
    assert go.read_bytes() == CASES["main.go"]
    c = tmp_path / "m.c"
    c_src = b"#include <stdio.h>\n\nint main(void) {\n\treturn 0;\n}"
    c.write_bytes(c_src)
    outside = await InstrumentTool().run({"file_path": "m.c", "lines": [3]}, make_ctx(tmp_path))
    assert outside.is_error and "must be inside a function body" in outside.output
    inside = await InstrumentTool().run({"file_path": "m.c", "lines": [4]}, make_ctx(tmp_path))
    assert not inside.is_error and b'\tfprintf(stderr, "%s\\n", "[nyz ' in c.read_bytes()
    await RemoveInstrumentationTool().run({"path": "m.c"}, make_ctx(tmp_path))
    assert c.read_bytes() == c_src
    arrow = tmp_path / "arrow.ts"
    arrow.write_text("const inc = (x: number) =>\n  x + 1;\n")
    no_block = await InstrumentTool().run({"file_path": "arrow.ts", "functions": ["inc"]},
                                          make_ctx(tmp_path))
    assert no_block.is_error and "has no block body" in no_block.output
    ts = tmp_path / "t.ts"
    ts.write_text("const a = [\n  1,\n  2,\n];\n")
    bad = await InstrumentTool().run({"file_path": "t.ts", "lines": [3]}, make_ctx(tmp_path))
    assert bad.is_error and "would break the syntax" in bad.output


async def test_remove_by_id_leaves_other_instrumentation_and_all_removes_every_file(tmp_path):
    a, b = tmp_path / "a.py", tmp_path / "src" / "b.py"
    b.parent.mkdir()
    a.write_bytes(CASES["crlf.py"])
    b.write_bytes(CASES["tabs.py"])
    ctx = make_ctx(tmp_path)
    first = await InstrumentTool().run({"file_path": "a.py", "lines": [3]}, ctx)
    second = await InstrumentTool().run({"file_path": "a.py", "lines": [4]}, ctx)
    third = await InstrumentTool().run({"file_path": "src/b.py", "functions": ["load"]}, ctx)
    ids = [r.output.split("(id ")[1][:8] for r in (first, second, third)]
    assert len(set(ids)) == 3
    await RemoveInstrumentationTool().run({"path": "a.py", "id": ids[0]}, ctx)
    assert f"nyz-instrument:{ids[0]}" not in a.read_text()
    assert f"nyz-instrument:{ids[1]}" in a.read_text()
    everything = await RemoveInstrumentationTool().run({}, ctx)
    assert not everything.is_error, everything.output
    assert "from a.py, src/b.py" in everything.output
    assert a.read_bytes() == CASES["crlf.py"] and b.read_bytes() == CASES["tabs.py"]
    again = await RemoveInstrumentationTool().run({}, ctx)
    assert again.is_error and again.output == "no instrumentation found in ."


async def test_instrument_is_undone_by_undo(tmp_path):
    f = tmp_path / "a.py"
    f.write_bytes(CASES["no_eol.py"])
    ctx = make_ctx(tmp_path)
    assert not (await InstrumentTool().run({"file_path": "a.py", "lines": [3]}, ctx)).is_error
    undo_last(ctx.changes)
    assert f.read_bytes() == CASES["no_eol.py"]


async def test_bad_arguments_are_one_line_errors(tmp_path):
    (tmp_path / "a.py").write_text(PY)
    (tmp_path / "notes.txt").write_text("x\n")
    ctx = make_ctx(tmp_path)
    cases = [
        ({"file_path": "a.py"}, "give 'lines'"),
        ({"file_path": "a.py", "lines": [99]}, "line 99 does not exist"),
        ({"file_path": "a.py", "lines": ["3"]}, "'lines' must be an array of line numbers"),
        ({"file_path": "a.py", "functions": ["nope"]}, "no function named 'nope'"),
        ({"file_path": "notes.txt", "lines": [1]}, "instrument supports source files"),
        ({"file_path": "a.py", "lines": [1], "id": "XYZ"}, "'id' must be 8 lowercase hex"),
    ]
    for args, message in cases:
        result = await InstrumentTool().run(args, ctx)
        assert result.is_error and message in result.output, (args, result.output)
        assert "\n" not in result.output
    assert (tmp_path / "a.py").read_text() == PY
