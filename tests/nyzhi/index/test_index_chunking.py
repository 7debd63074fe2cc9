"""Chunking: declarations where they are cheap to find, overlapping windows elsewhere."""

from __future__ import annotations

from nyzhi.index.chunking import MAX_LINES, OVERLAP, WINDOW, chunk_file, language

PY = '''"""Module doc."""
import os

CONSTANT = 1


# Adds things.
@decorator
def add(a, b):
    return a + b


class Stack:
    def push(self, x):
        self.items.append(x)

    def pop(self):
        return self.items.pop()


async def fetch():
    return await thing()
'''


def spans(chunks):
    return [(c.start, c.end, c.symbol) for c in chunks]


def test_python_cuts_at_top_level_defs_with_their_decorators_and_comments():
    chunks = chunk_file("pkg/mod.py", PY)
    assert spans(chunks) == [(1, 6, ""), (7, 10, "add"), (13, 18, "Stack"), (21, 22, "fetch")]
    assert chunks[1].text.startswith("# Adds things.\n@decorator\ndef add")
    # every non-blank line of the file is in some chunk
    covered = {n for c in chunks for n in range(c.start, c.end + 1)}
    lines = PY.splitlines()
    assert all(i + 1 in covered for i, line in enumerate(lines) if line.strip())


def test_a_long_function_is_windowed_with_overlap():
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES + 30))
    chunks = chunk_file("big.py", f"def big():\n{body}\n")
    assert all(c.symbol == "big" for c in chunks) and len(chunks) >= 3
    for a, b in zip(chunks, chunks[1:], strict=False):
        assert b.start == a.end - OVERLAP + 1
        assert a.end - a.start + 1 <= WINDOW


def test_syntax_error_and_unknown_languages_fall_back_to_windows():
    text = "\n".join(f"line {i}" for i in range(1, 101))
    for path in ("broken.py", "notes.md", "Makefile"):
        source = "def broken(:\n" + text if path.endswith(".py") else text
        chunks = chunk_file(path, source)
        assert [c.start for c in chunks][:3] == [1, 31, 61]
        assert all(c.symbol == "" for c in chunks)
        assert chunks[-1].end == len(source.splitlines())


def test_js_rust_and_go_cut_at_top_level_declarations():
    js = "import x from 'y';\n\nexport function alpha() {\n  return 1;\n}\n\n// the beta class\nexport class Beta {\n  m() {}\n}\nconst gamma = () => 3;\n"
    assert spans(chunk_file("a.ts", js)) == [(1, 2, ""), (3, 5, "alpha"), (7, 10, "Beta"),
                                             (11, 11, "gamma")]
    rs = "use std::io;\n\npub struct Point {\n    x: i32,\n}\n\nimpl Point {\n    fn new() -> Self { todo!() }\n}\n\npub(crate) async fn run() {}\n"
    assert [s for *_, s in spans(chunk_file("lib.rs", rs))] == ["", "Point", "Point", "run"]
    go = "package main\n\nfunc main() {\n}\n\ntype Server struct {\n}\n"
    assert spans(chunk_file("main.go", go)) == [(1, 2, ""), (3, 4, "main"), (6, 7, "Server")]


def test_blank_files_have_no_chunks_and_languages_are_known_by_suffix():
    assert chunk_file("empty.py", "\n\n  \n") == []
    assert (language("a.PY"), language("x.tsx"), language("y.rs"), language("README")) == (
        "python", "js", "rust", "")


def test_the_build_progress_bar_shows_files_chunks_and_eta():
    from nyzhi.cli.cmd_index import bar
    from nyzhi.core import events as ev

    line = bar(ev.IndexProgress(10, 40, 10, 25, "src/app.py", 20.0), width=8)
    # 10 files in 20 s: 30 more take 60 s
    assert line == "[##......] 10/40 files  25 chunks  ETA 1m00s  src/app.py"
