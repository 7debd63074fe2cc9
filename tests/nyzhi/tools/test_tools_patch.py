"""apply_patch: multi-file unified diffs, creations, deletions, drift, atomicity, undo."""

from pathlib import Path

import pytest
from _toolctx import make_ctx

from nyzhi.tools.builtin.patch import ApplyPatchTool, apply_hunks, parse_patch
from nyzhi.tools.undo import undo_last


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("one\ntwo\nthree\nfour\nfive\n")
    (root / "b.txt").write_text("alpha\nbeta\n")
    (root / "old.txt").write_text("bye\n")
    return root


MULTI = """diff --git a/a.txt b/a.txt
--- a/a.txt
+++ b/a.txt
@@ -1,3 +1,3 @@
 one
-two
+TWO
 three
@@ -4,2 +4,3 @@
 four
 five
+six
--- a/b.txt
+++ b/b.txt
@@ -1,2 +1,2 @@
-alpha
+ALPHA
 beta
--- /dev/null
+++ b/new/c.txt
@@ -0,0 +1,2 @@
+created
+here
--- a/old.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
"""


async def test_applies_multi_file_patch_and_undoes_as_one(ws: Path) -> None:
    ctx = make_ctx(ws)
    res = await ApplyPatchTool().run({"patch": MULTI}, ctx)
    assert not res.is_error, res.output
    assert res.output.splitlines()[0] == (
        "Applied patch: modified a.txt, modified b.txt, created new/c.txt, deleted old.txt"
    )
    assert (ws / "a.txt").read_text() == "one\nTWO\nthree\nfour\nfive\nsix\n"
    assert (ws / "b.txt").read_text() == "ALPHA\nbeta\n"
    assert (ws / "new/c.txt").read_text() == "created\nhere\n"
    assert not (ws / "old.txt").exists()
    assert ApplyPatchTool().target_paths({"patch": MULTI}) == [
        "a.txt",
        "b.txt",
        "new/c.txt",
        "old.txt",
    ]
    undo_last(ctx.changes)
    assert (ws / "a.txt").read_text() == "one\ntwo\nthree\nfour\nfive\n"
    assert (ws / "b.txt").read_text() == "alpha\nbeta\n"
    assert (ws / "old.txt").read_text() == "bye\n"
    assert not (ws / "new").exists()


async def test_failing_hunk_leaves_every_file_untouched(ws: Path) -> None:
    bad = MULTI.replace(" four\n five\n+six", " four\n FIVE?\n+six")
    ctx = make_ctx(ws)
    res = await ApplyPatchTool().run({"patch": bad}, ctx)
    assert res.is_error
    assert res.output.startswith("a.txt: hunk 2 (@@ -4,2 +4,3 @@) does not apply")
    assert (ws / "a.txt").read_text() == "one\ntwo\nthree\nfour\nfive\n"
    assert (ws / "b.txt").read_text() == "alpha\nbeta\n"
    assert (ws / "old.txt").exists() and not (ws / "new").exists()
    assert ctx.changes.changes == []


async def test_write_failure_midway_rolls_back(ws: Path) -> None:
    # The second file's directory is read-only, so its write fails after a.txt was written.
    (ws / "ro").mkdir()
    (ws / "ro" / "f.txt").write_text("x\n")
    (ws / "ro").chmod(0o500)
    patch = MULTI.split("--- a/b.txt")[0] + "--- a/ro/f.txt\n+++ b/ro/f.txt\n@@ -1 +1 @@\n-x\n+y\n"
    try:
        res = await ApplyPatchTool().run({"patch": patch}, make_ctx(ws))
    finally:
        (ws / "ro").chmod(0o700)
    import os

    if os.geteuid() == 0:  # root ignores directory permissions; nothing to observe
        return
    assert res.is_error
    assert (ws / "a.txt").read_text() == "one\ntwo\nthree\nfour\nfive\n"


async def test_sandbox_refusal_writes_nothing(ws: Path, tmp_path: Path) -> None:
    patch = MULTI.split("--- a/b.txt")[0] + "--- /dev/null\n+++ b/../evil.txt\n@@ -0,0 +1 @@\n+x\n"
    res = await ApplyPatchTool().run({"patch": patch}, make_ctx(ws))
    assert res.is_error and "refused" in res.output
    assert not (tmp_path / "evil.txt").exists()
    assert (ws / "a.txt").read_text() == "one\ntwo\nthree\nfour\nfive\n"


async def test_tolerates_drifted_line_numbers_wrong_counts_and_trailing_space() -> None:
    text = "x\n" * 20 + "target  \nnext\n"
    patch = "--- a/f\n+++ b/f\n@@ -3,9 +3,9 @@\n target\n-next\n+NEXT\n"
    (fp,) = parse_patch(patch)
    assert apply_hunks(text, fp.hunks, "f") == "x\n" * 20 + "target\nNEXT\n"


async def test_no_newline_at_end_of_file_markers() -> None:
    patch = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n"
    (fp,) = parse_patch(patch)
    assert apply_hunks("a", fp.hunks, "f") == "b\n"
    patch2 = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n\\ No newline at end of file\n"
    (fp2,) = parse_patch(patch2)
    assert apply_hunks("a\n", fp2.hunks, "f") == "b"


async def test_creating_an_existing_file_and_garbage_are_errors(ws: Path) -> None:
    ctx = make_ctx(ws)
    res = await ApplyPatchTool().run(
        {"patch": "--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1 @@\n+x\n"}, ctx
    )
    assert res.is_error and res.output == (
        "a.txt: the patch creates this file but it already exists; patch it with '--- a/PATH' "
        "instead of '--- /dev/null'"
    )
    res = await ApplyPatchTool().run({"patch": "hello"}, ctx)
    assert res.is_error and res.output.startswith("no file changes found")


async def test_preview_shows_diff_without_writing(ws: Path) -> None:
    ctx = make_ctx(ws)
    text = await ApplyPatchTool().preview({"patch": MULTI}, ctx)
    assert "+TWO" in text and "+++ b/new/c.txt" in text and "+++ /dev/null" in text
    assert (ws / "a.txt").read_text() == "one\ntwo\nthree\nfour\nfive\n"
