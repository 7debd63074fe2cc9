"""grep, glob, fuzzy_find with ripgrep and with the pure-Python walker, and the .gitignore matcher."""

import shutil
from pathlib import Path

import pytest
from _toolctx import git, make_ctx

from nyzhi.tools.builtin.search import FuzzyFindTool, GlobTool, GrepTool, find_rg
from nyzhi.tools.ignore import compile_glob, compile_include, parse_rule, walk_files

HAVE_RG = shutil.which("rg") is not None


@pytest.fixture(params=["rg", "python"])
def engine(request, monkeypatch) -> str:
    if request.param == "rg":
        if not HAVE_RG:
            pytest.skip("ripgrep (Debian package 'ripgrep') is not installed")
        monkeypatch.delenv("NYZHI_SEARCH_ENGINE", raising=False)
    else:
        # No rg on PATH at all: the Python walker must take over by itself.
        monkeypatch.setenv("PATH", "/nonexistent")
    return request.param


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    files = {
        "src/app.py": "def start_handler():\n    pass\n\ndef other():\n    return 'handler'\n",
        "src/util.py": "def stop_handler(x):\n    return x\n",
        "src/web/index.ts": "function click_handler() {}\n",
        "build/out.py": "def built_handler(): pass\n",
        "logs/debug.log": "def log_handler\n",
        "keep.log": "def keep_handler\n",
        "node_modules/pkg/x.py": "def nm_handler(): pass\n",
        ".hidden/h.py": "def hidden_handler(): pass\n",
        "docs/readme.md": "handler docs\n",
        "data.bin": "",
    }
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    (root / "data.bin").write_bytes(b"def bin_handler\0\0\0")
    (root / ".gitignore").write_text("build/\n*.log\n!keep.log\n/docs/*.md\n")
    git(root, "init", "-q")
    return root


async def test_engine_selection(engine: str) -> None:
    assert (find_rg() is not None) == (engine == "rg")


async def test_grep_honours_gitignore_and_skips(tree: Path, engine: str) -> None:
    res = await GrepTool().run({"pattern": r"def \w+_handler"}, make_ctx(tree))
    assert res.metadata["engine"] == engine
    assert res.output.splitlines() == [
        "keep.log:1:def keep_handler",
        "src/app.py:1:def start_handler():",
        "src/util.py:1:def stop_handler(x):",
    ]


async def test_grep_include_path_and_no_match(tree: Path, engine: str) -> None:
    ctx = make_ctx(tree)
    res = await GrepTool().run({"pattern": "handler", "include": "*.ts"}, ctx)
    assert res.output == "src/web/index.ts:1:function click_handler() {}"
    res = await GrepTool().run({"pattern": "handler", "path": "src", "include": "*.{py,ts}"}, ctx)
    assert [ln.split(":")[0] for ln in res.output.splitlines()] == [
        "src/app.py", "src/app.py", "src/util.py", "src/web/index.ts",
    ]
    res = await GrepTool().run({"pattern": "zzz_nothing"}, ctx)
    assert not res.is_error and res.output == "No matches for /zzz_nothing/ in ."


async def test_grep_caps_matches_and_line_length(tmp_path: Path, engine: str) -> None:
    (tmp_path / "many.txt").write_text("".join(f"hit {i}\n" for i in range(700)))
    (tmp_path / "wide.txt").write_text("hit " + "w" * 900 + "\n")
    ctx = make_ctx(tmp_path)
    res = await GrepTool().run({"pattern": "hit", "path": "many.txt"}, ctx)
    lines = res.output.splitlines()
    assert len(lines) == 501 and res.metadata["truncated"] is True
    assert lines[-1].startswith("... (stopped at 500 matches")
    res = await GrepTool().run({"pattern": "hit", "path": "wide.txt"}, ctx)
    assert res.output == "wide.txt:1:" + ("hit " + "w" * 900)[: 500 - len("wide.txt:1:")] + "…"


async def test_grep_bad_regex_and_missing_path(tree: Path, engine: str) -> None:
    ctx = make_ctx(tree)
    res = await GrepTool().run({"pattern": "def ("}, ctx)
    assert res.is_error and "escape special characters" in res.output  # how to fix the call
    res = await GrepTool().run({"pattern": "x", "path": "missing"}, ctx)
    assert res.is_error and res.output == "path missing does not exist; check it with list_dir or glob"


async def test_glob_semantics(tree: Path, engine: str) -> None:
    ctx = make_ctx(tree)
    res = await GlobTool().run({"pattern": "**/*.py"}, ctx)
    # .hidden is included for glob, node_modules is not ignored here, build/ is gitignored.
    assert res.output.splitlines() == [
        ".hidden/h.py", "node_modules/pkg/x.py", "src/app.py", "src/util.py",
    ]
    res = await GlobTool().run({"pattern": "*.py", "path": "src"}, ctx)
    assert res.output.splitlines() == ["src/app.py", "src/util.py"]
    res = await GlobTool().run({"pattern": "src/**/*.ts"}, ctx)
    assert res.output == "src/web/index.ts"
    res = await GlobTool().run({"pattern": "*.log"}, ctx)
    assert res.output == "keep.log"
    res = await GlobTool().run({"pattern": "**/*.rs"}, ctx)
    assert res.output == "No files match **/*.rs"
    res = await GlobTool().run({"pattern": ".git/**"}, ctx)
    assert res.output == "No files match .git/**"


async def test_glob_caps_results(tmp_path: Path, engine: str) -> None:
    for i in range(1005):
        (tmp_path / f"f{i:04}.txt").write_text("")
    res = await GlobTool().run({"pattern": "*.txt"}, make_ctx(tmp_path))
    lines = res.output.splitlines()
    assert len(lines) == 1001 and lines[-1] == "... (5 more files; use a narrower pattern)"
    assert lines[0] == "f0000.txt"


async def test_fuzzy_find_ranks_name_matches_first(tree: Path, engine: str) -> None:
    res = await FuzzyFindTool().run({"query": "util"}, make_ctx(tree))
    assert res.output.splitlines()[0] == "src/util.py"
    res = await FuzzyFindTool().run({"query": "srcidx"}, make_ctx(tree))
    assert res.output == "src/web/index.ts"
    res = await FuzzyFindTool().run({"query": "qqqq"}, make_ctx(tree))
    assert res.output == "No files match 'qqqq'"


def test_gitignore_rules() -> None:
    def m(rule: str, path: str, is_dir: bool = False) -> bool:
        r = parse_rule(rule)
        assert r is not None
        return bool(r.regex.match(path)) and (is_dir or not r.dir_only)

    assert m("*.log", "a/b/c.log") and not m("*.log", "a/log")
    assert m("/root.txt", "root.txt") and not m("/root.txt", "sub/root.txt")
    assert m("doc/*.md", "doc/a.md") and not m("doc/*.md", "x/doc/a.md") and not m("doc/*.md", "doc/x/a.md")
    assert m("**/foo", "a/b/foo") and m("**/foo", "foo")
    assert m("a/**/b", "a/b") and m("a/**/b", "a/x/y/b")
    assert m("abc/**", "abc/x/y") and not m("abc/**", "abc")
    assert m("build/", "build", is_dir=True) and not m("build/", "build", is_dir=False)
    assert m("f?o[0-9]", "fxo7") and not m("f?o[0-9]", "f/o7")
    assert m("[!a]x", "bx") and not m("[!a]x", "ax")
    assert m("\\#hash", "#hash") and parse_rule("# comment") is None and parse_rule("   ") is None
    neg = parse_rule("!keep.log")
    assert neg is not None and neg.negated


def test_walker_precedence_and_nested_gitignore(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("*.tmp\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".gitignore").write_text("!important.tmp\nlocal/\n")
    for rel in ("a.tmp", "sub/important.tmp", "sub/other.tmp", "sub/local/x.py", "sub/y.py"):
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("")
    got = [str(Path(p).relative_to(tmp_path)) for p in walk_files(tmp_path)]
    assert got == ["sub/important.tmp", "sub/y.py"]
    # Searching from the subdirectory still applies the parent's rules.
    got = [Path(p).name for p in walk_files(tmp_path / "sub")]
    assert got == ["important.tmp", "y.py"]


def test_glob_and_include_translation() -> None:
    assert compile_glob("*.py").match("a.py") and not compile_glob("*.py").match("d/a.py")
    assert compile_glob("**/*.py").match("a.py") and compile_glob("**/*.py").match("d/e/a.py")
    assert compile_glob("*.{js,ts}").match("x.ts")
    assert compile_include("*.py").match("d/e/a.py")
    assert compile_include("src/*.py").match("src/a.py") and not compile_include("src/*.py").match("x/src/a.py")


def test_walker_matches_git_where_pathspec_does_not(tmp_path: Path) -> None:
    """A negated directory re-includes that directory, not descendants another rule ignores:
    git ignores ``keep-1/src/_vendor/`` here (``git check-ignore`` says ``**/_vendor/``);
    pathspec 1.1 keeps it, one reason the hand-written matcher stays
    (benchmarks/ignore_bench.py)."""
    (tmp_path / ".gitignore").write_text("**/_vendor/\n*-1/\n!keep-*/\n")
    for rel in ("keep-1/src/_vendor/lib.py", "keep-1/src/mod.py", "drop-1/x.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x\n")
    got = [str(Path(p).relative_to(tmp_path)) for p in walk_files(tmp_path)]
    assert got == ["keep-1/src/mod.py"]
    if shutil.which("git"):
        git(tmp_path, "init", "-q")
        import subprocess

        listed = subprocess.run(["git", "ls-files", "--others", "--exclude-standard"],
                                cwd=tmp_path, capture_output=True, text=True, check=True)
        assert sorted(listed.stdout.split()) == [".gitignore", "keep-1/src/mod.py"]


def test_walker_exclude_patterns_win_over_gitignore_negations(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("!gen/\n")
    for rel in ("gen/a.py", "src/b.py", "src/c.min.js"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x\n")
    got = [str(Path(p).relative_to(tmp_path))
           for p in walk_files(tmp_path, exclude=("gen/", "*.min.js"))]
    assert got == ["src/b.py"]
