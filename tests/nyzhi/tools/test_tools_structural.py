"""ast_search and batch_apply on real files: structural matches in Python and TypeScript, the
walk grep does, rewrite previews that write nothing, and batch edits that are all or none."""

from __future__ import annotations

from pathlib import Path

import pytest
from _toolctx import make_ctx

from nyzhi.testing import machine_faults as mf
from nyzhi.tools.base import SandboxLevel, TrustMode
from nyzhi.tools.builtin.files_read import ReadTool
from nyzhi.tools.builtin.structural import AstSearchTool, BatchApplyTool
from nyzhi.tools.gates import Gates, TrustPolicy
from nyzhi.tools.ledger import FileLedger
from nyzhi.tools.sandbox import SandboxPolicy
from nyzhi.tools.undo import undo_last

PY_APP = '''import logging


def load(path):
    data = open(path).read()
    print(data)
    print(
        "loaded",
        path,
    )
    return data


def show(x):
    print(x, sep="")  # two arguments: not print($A)
'''

TS_APP = '''export function greet(name: string): string {
  console.log(name);
  return `hi ${name}`;
}

export const total = (xs: number[]): number => {
  console.log("total", xs.length);
  return xs.reduce((a, b) => a + b, 0);
};
'''


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text(PY_APP)
    (root / "web").mkdir()
    (root / "web" / "greet.ts").write_text(TS_APP)
    # What grep would not search: ignored, hidden and vendored files.
    (root / ".gitignore").write_text("build/\n")
    (root / "build").mkdir()
    (root / "build" / "gen.py").write_text("print(1)\n")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "h.py").write_text("print(2)\n")
    (root / "node_modules").mkdir()
    (root / "node_modules" / "m.ts").write_text("console.log(3);\n")
    return root


async def search(ctx, **args):
    result = await AstSearchTool().run(args, ctx)
    assert not result.is_error, result.output
    return result


async def test_ast_search_python_matches_by_shape_and_walks_like_grep(ws):
    result = await search(make_ctx(ws), pattern="print($A)")
    # One argument only, however it is spread over lines; build/, .hidden and node_modules
    # are not searched; each file is parsed in its own language.
    assert result.output.splitlines() == ["src/app.py:6: print(data)"]
    many = await search(make_ctx(ws), pattern="print($$$ARGS)")
    assert many.output.splitlines() == [
        "src/app.py:6: print(data)", "src/app.py:7: print( …", 'src/app.py:15: print(x, sep="")',
    ]
    assert many.metadata["files"] == 2  # app.py and greet.ts


async def test_ast_search_typescript_with_types_and_a_glob(ws):
    ctx = make_ctx(ws)
    result = await search(ctx, pattern="console.log($$$ARGS)", glob="*.ts")
    assert result.output.splitlines() == [
        "web/greet.ts:2: console.log(name)", 'web/greet.ts:7: console.log("total", xs.length)',
    ]
    typed = await search(ctx, pattern="($P: $T): $R => $BODY", language="typescript")
    assert typed.output.splitlines() == ["web/greet.ts:6: (xs: number[]): number => { …"]
    fn = await search(ctx, pattern="function $F($$$): string { $$$ }", path="web")
    assert fn.output.startswith("web/greet.ts:1: export function greet") or \
        fn.output.startswith("web/greet.ts:1: function greet")


async def test_rewrite_preview_shows_a_diff_and_writes_nothing(ws):
    before = (ws / "src" / "app.py").read_bytes()
    result = await search(make_ctx(ws), pattern="print($A)", rewrite="logging.info($A)")
    assert "-    print(data)\n+    logging.info(data)" in result.output
    assert "nothing written" in result.output and "batch_apply" in result.output
    assert (ws / "src" / "app.py").read_bytes() == before
    assert result.metadata["files_changed"] == 1


async def test_ast_search_errors_are_one_line_for_the_model(ws):
    ctx = make_ctx(ws)
    bad = await AstSearchTool().run({"pattern": "x", "language": "cobol"}, ctx)
    assert bad.is_error and "'cobol' is not a language ast-grep supports" in bad.output
    none = await search(ctx, pattern="x", language="rust")
    assert none.output == "No rust files (.rs) in . to search"
    nomatch = await search(ctx, pattern="never_called($A)")
    assert nomatch.output.startswith("No structural matches for `never_called($A)`")
    multi = await AstSearchTool().run({"pattern": "$A $B", "glob": "*.py"}, ctx)
    assert multi.is_error and multi.output == (
        "'pattern' '$A $B' is not valid python: Multiple AST nodes are detected. Please check "
        "the pattern source `$A $B`.")
    unbound = await AstSearchTool().run({"pattern": "print($A)", "rewrite": "log($B)"}, ctx)
    assert unbound.is_error and "$B, which the pattern does not bind" in unbound.output


async def test_ast_search_does_not_read_credential_files(ws):
    """A file the sandbox hides as a credential is not parsed, and the result says so."""
    secret = ws / "src" / "deploy_key.py"
    secret.write_text("print(SECRET_TOKEN)\n")
    ctx = make_ctx(ws)
    ctx.sandbox = SandboxPolicy(level=SandboxLevel.WORKSPACE_WRITE, workspace_root=ws,
                                allow_temp=False, hide=(str(secret),))
    result = await search(ctx, pattern="print($A)")
    assert "SECRET_TOKEN" not in result.output
    assert "src/app.py:6: print(data)" in result.output
    assert "1 credential file(s) not searched: src/deploy_key.py" in result.output


# --- batch_apply ------------------------------------------------------------------------------


def three_files(ws: Path) -> list[Path]:
    files = [ws / "pkg" / f"m{i}.py" for i in range(3)]
    files[0].parent.mkdir()
    for i, f in enumerate(files):
        f.write_bytes(f"from old_name import thing\nvalue_{i} = thing()\r\n".encode())
    (ws / "pkg" / "other.py").write_text("untouched = True\n")
    return files


async def read_all(ctx, paths: list[Path]) -> None:
    for p in paths:
        assert not (await ReadTool().run({"file_path": str(p)}, ctx)).is_error


async def test_batch_apply_changes_every_file_and_one_undo_reverts_them(ws):
    files = three_files(ws)
    before = [f.read_bytes() for f in files]
    ctx = make_ctx(ws)
    result = await BatchApplyTool().run(
        {"glob": "pkg/*.py", "old_string": "old_name", "new_string": "new_name"}, ctx)
    assert not result.is_error, result.output
    assert result.output.startswith("Changed 3 files (3 replacements): pkg/m0.py, pkg/m1.py")
    assert all(f.read_bytes().startswith(b"from new_name import") for f in files)
    assert files[0].read_bytes().endswith(b"thing()\r\n")  # the other bytes kept
    assert (ws / "pkg" / "other.py").read_text() == "untouched = True\n"
    assert len({c.batch for c in ctx.changes.changes}) == 1  # one undo entry
    undo_last(ctx.changes)
    assert [f.read_bytes() for f in files] == before


async def test_batch_apply_ast_rewrite_python_and_typescript(ws):
    ctx = make_ctx(ws)
    result = await BatchApplyTool().run(
        {"glob": "*.{py,ts}", "pattern": "console.log($$$A)", "rewrite": "logger.debug($$$A)"},
        ctx)
    assert not result.is_error, result.output
    text = (ws / "web" / "greet.ts").read_text()
    assert 'logger.debug("total", xs.length);' in text and "console.log" not in text
    py = await BatchApplyTool().run(
        {"glob": "*.py", "pattern": "print($A)", "rewrite": "logging.info($A)"}, ctx)
    assert not py.is_error, py.output
    app = (ws / "src" / "app.py").read_text()
    assert "logging.info(data)" in app and 'print(x, sep="")' in app
    assert (ws / "build" / "gen.py").read_text() == "print(1)\n"  # ignored: not touched


async def test_batch_apply_is_all_or_none_when_one_file_is_stale(ws):
    files = three_files(ws)
    before = [f.read_bytes() for f in files]
    ctx = make_ctx(ws, seen=FileLedger())
    await read_all(ctx, files)
    files[1].write_bytes(before[1] + b"# changed by someone else\n")  # after the read
    result = await BatchApplyTool().run(
        {"glob": "pkg/*.py", "old_string": "old_name", "new_string": "new_name"}, ctx)
    assert result.is_error
    assert "pkg/m1.py was changed outside nyz" in result.output
    assert "Nothing was written" in result.output
    assert files[0].read_bytes() == before[0] and files[2].read_bytes() == before[2]
    assert ctx.changes.changes == []


async def test_batch_apply_names_every_unread_file_at_once(ws):
    files = three_files(ws)
    ctx = make_ctx(ws, seen=FileLedger())
    await read_all(ctx, files[:1])
    result = await BatchApplyTool().run(
        {"glob": "pkg/*.py", "old_string": "old_name", "new_string": "new_name"}, ctx)
    assert result.is_error and result.output.startswith("2 files cannot be changed:")
    assert "pkg/m1.py already exists and you have not read it" in result.output
    assert "pkg/m2.py already exists" in result.output
    assert files[0].read_text().startswith("from old_name")


async def test_batch_apply_refused_by_the_sandbox_writes_nothing(ws, tmp_path):
    files = three_files(ws)
    before = [f.read_bytes() for f in files]
    policy = SandboxPolicy(level=SandboxLevel.READ_ONLY, workspace_root=ws, allow_temp=False)
    ctx = make_ctx(ws)
    ctx.sandbox = policy
    result = await BatchApplyTool().run(
        {"glob": "pkg/*.py", "old_string": "old_name", "new_string": "new_name"}, ctx)
    assert result.is_error and "read-only" in result.output
    assert [f.read_bytes() for f in files] == before


@pytest.mark.skipif(mf.skip_reason() is not None, reason=mf.skip_reason() or "")
async def test_batch_apply_failing_midway_puts_back_the_files_already_written(tmp_path):
    """A real disk that fills up after the first file: the first is written, the second
    fails, and the first is put back."""
    with mf.small_tmpfs(tmp_path / "ws") as root:
        (root / "a.txt").write_text("token\n")  # one page after the edit
        (root / "b.txt").write_text("token\n" * 4)  # three pages after it: no room
        ctx = make_ctx(root)
        mf.fill(root, leave=8192)
        big = "x" * 3000
        result = await BatchApplyTool().run(
            {"glob": "*.txt", "old_string": "token", "new_string": big}, ctx)
        assert result.is_error, result.output
        assert "no space left on device" in result.output
        assert "the files written before it were put back" in result.output
        assert (root / "a.txt").read_text() == "token\n"
        assert (root / "b.txt").read_text() == "token\n" * 4


async def test_require_all_fails_the_batch_on_a_file_without_the_edit(ws):
    files = three_files(ws)  # pkg/other.py has no old_name
    before = [f.read_bytes() for f in files]
    ctx = make_ctx(ws)
    args = {"glob": "pkg/*.py", "old_string": "old_name", "new_string": "new_name",
            "require_all": True}
    result = await BatchApplyTool().run(args, ctx)
    assert result.is_error and result.output == (
        "require_all: 1 file(s) matching pkg/*.py do not contain 'old_name': pkg/other.py. "
        "Nothing was written.")
    assert [f.read_bytes() for f in files] == before
    ast = await BatchApplyTool().run(
        {"glob": "pkg/*.py", "pattern": "thing()", "rewrite": "thing(1)", "require_all": True},
        ctx)
    assert ast.is_error and "pkg/other.py" in ast.output
    assert [f.read_bytes() for f in files] == before
    (ws / "pkg" / "other.py").write_text("import old_name\n")
    ok = await BatchApplyTool().run(args, ctx)
    assert not ok.is_error, ok.output


async def test_batch_apply_leaves_credential_files_unread(ws):
    files = three_files(ws)
    hidden = ws / "pkg" / "secrets.py"
    hidden.write_text("old_name = 'hunter2'\n")
    ctx = make_ctx(ws)
    ctx.sandbox = SandboxPolicy(level=SandboxLevel.WORKSPACE_WRITE, workspace_root=ws,
                                allow_temp=False, hide=(str(hidden),))
    result = await BatchApplyTool().run(
        {"glob": "pkg/*.py", "old_string": "old_name", "new_string": "new_name"}, ctx)
    assert not result.is_error, result.output
    assert "secrets.py" not in result.output and "hunter2" not in result.output
    assert hidden.read_text() == "old_name = 'hunter2'\n"
    assert all(f.read_text().startswith("from new_name") for f in files)


async def test_batch_apply_bad_arguments(ws):
    ctx = make_ctx(ws)
    both = await BatchApplyTool().run(
        {"glob": "*.py", "old_string": "a", "new_string": "b", "pattern": "x"}, ctx)
    assert both.is_error and "not both or neither" in both.output
    nothing = await BatchApplyTool().run(
        {"glob": "*.py", "old_string": "no such text anywhere", "new_string": "b"}, ctx)
    assert nothing.is_error and "nothing was changed" in nothing.output


async def test_gates_see_every_file_a_batch_would_change(ws):
    """The files come from a glob, so the gates get them from expand_targets: a deny rule on
    one of them refuses the whole call, and the approval lists them."""
    files = three_files(ws)
    ctx = make_ctx(ws)
    args = {"glob": "pkg/*.py", "old_string": "old_name", "new_string": "new_name"}
    denied = Gates(trust=TrustPolicy(deny_paths=("pkg/m2.py",)))
    decision = await denied.check(BatchApplyTool(), args, ctx)
    assert not decision.allowed and decision.gate == "deny_rules"
    assert "m2.py" in decision.reason
    seen = []

    async def approver(request):
        seen.append(request)
        from nyzhi.tools.gates import ApprovalDecision

        return ApprovalDecision.deny("no")

    asked = await Gates(approver=approver).check(BatchApplyTool(), args, ctx)
    assert not asked.allowed and len(seen) == 1
    assert sorted(p.name for p in asked.paths) == ["m0.py", "m1.py", "m2.py"]
    assert "+from new_name import thing" in seen[0].preview
    assert all(f.read_text().startswith("from old_name") for f in files)


async def test_protected_configuration_in_a_batch_needs_the_user(ws):
    (ws / ".nyzhi").mkdir()
    (ws / ".nyzhi" / "NOTES.md").write_text("old_name\n")
    ctx = make_ctx(ws)
    decision = await Gates(trust=TrustPolicy(mode=TrustMode.AUTOEDIT)).check(
        BatchApplyTool(), {"path": ".nyzhi", "glob": "*.md", "old_string": "old_name",
                           "new_string": "x"}, ctx)
    assert not decision.allowed and "nobody can approve it" in decision.reason
    assert (ws / ".nyzhi" / "NOTES.md").read_text() == "old_name\n"


async def test_a_batch_cannot_reach_outside_the_writable_roots(ws, tmp_path):
    """Three ways out of the workspace: a path outside it, a symlinked file and a symlinked
    directory inside it. The first is refused by the sandbox gate and by the write itself;
    the walk does not follow the links, so their targets are never touched."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.py").write_text("old_name\n")
    files = three_files(ws)
    (ws / "pkg" / "link.py").symlink_to(outside / "victim.py")
    (ws / "pkg" / "linked_dir").symlink_to(outside)
    ctx = make_ctx(ws)
    args = {"path": str(outside), "glob": "*.py", "old_string": "old_name", "new_string": "x"}
    decision = await Gates(trust=TrustPolicy(mode=TrustMode.FULL)).check(BatchApplyTool(), args, ctx)
    assert not decision.allowed and decision.gate == "sandbox"
    assert "outside the writable roots" in decision.reason
    direct = await BatchApplyTool().run(args, ctx)  # the write re-checks the sandbox itself
    assert direct.is_error and "outside the writable roots" in direct.output
    inside = {"path": "pkg", "glob": "**/*.py", "old_string": "old_name", "new_string": "x"}
    decision = await Gates(trust=TrustPolicy(mode=TrustMode.FULL)).check(BatchApplyTool(), inside, ctx)
    assert decision.allowed and sorted(p.name for p in decision.paths) == [
        "m0.py", "m1.py", "m2.py"]
    result = await BatchApplyTool().run(inside, ctx)
    assert not result.is_error, result.output
    assert (outside / "victim.py").read_text() == "old_name\n"
    assert all(f.read_text().startswith("from x import") for f in files)


async def test_limited_trust_approves_a_batch_only_inside_allow_paths(ws):
    three_files(ws)
    (ws / "src" / "extra.py").write_text("old_name\n")
    ctx = make_ctx(ws)
    args = {"glob": "*.py", "old_string": "old_name", "new_string": "x"}
    limited = Gates(trust=TrustPolicy(mode=TrustMode.LIMITED, allow_paths=("pkg",)))
    decision = await limited.check(BatchApplyTool(), args, ctx)
    assert not decision.allowed and decision.gate == "approval"  # src/extra.py is outside pkg
    narrow = await limited.check(BatchApplyTool(), {**args, "path": "pkg"}, ctx)
    assert narrow.allowed and narrow.approved_by == "trust"


async def test_the_approval_diff_of_a_large_batch_is_cut(ws):
    many = ws / "many"
    many.mkdir()
    for i in range(60):
        (many / f"f{i:02}.py").write_text("".join(f"old_name_{j} = {j}\n" for j in range(20)))
    preview = await BatchApplyTool().preview(
        {"path": "many", "glob": "*.py", "old_string": "old_name", "new_string": "x"},
        make_ctx(ws))
    lines = preview.splitlines()
    assert len(lines) == 401 and lines[-1].startswith("... (") and "more diff lines" in lines[-1]
    assert lines[0] == "--- a/many/f00.py"
