"""Notebooks: ``read`` shows an .ipynb's cells, ``notebook_edit`` (Claude Code's
NotebookEdit) replaces, inserts and deletes cells by id through the edit write path, and
every notebook it writes passes nbformat's own schema check."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from _toolctx import make_ctx

from nyzhi.tools import claude_names
from nyzhi.tools.builtin.files_read import ReadTool
from nyzhi.tools.builtin.files_write import NotebookEditTool
from nyzhi.tools.undo import undo_last


def notebook(minor: int = 5) -> dict:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Title\nSome text"),
        nbformat.v4.new_code_cell("print('hi')\n1 + 1"),
    ]
    nb.cells[1].outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="hi\n"),
        nbformat.v4.new_output("execute_result", data={"text/plain": "2", "image/png": "AAAA"},
                               execution_count=1),
    ]
    nb.cells[1].execution_count = 1
    data = json.loads(nbformat.writes(nb))
    if minor < 5:  # an older notebook: no cell ids
        data["nbformat_minor"] = minor
        for cell in data["cells"]:
            cell.pop("id", None)
    return data


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


def ids(path: Path) -> list[str]:
    return [c["id"] for c in json.loads(path.read_text())["cells"]]


def valid(path: Path) -> dict:
    nb = nbformat.read(str(path), as_version=4)
    nbformat.validate(nb)  # raises on anything the schema rejects
    return json.loads(path.read_text())


async def test_read_shows_cells_with_ids_sources_and_text_outputs(ws: Path) -> None:
    (ws / "nb.ipynb").write_text(json.dumps(notebook()))
    first, second = ids(ws / "nb.ipynb")
    res = await ReadTool().run({"file_path": "nb.ipynb"}, make_ctx(ws))
    assert not res.is_error
    out = res.output
    assert f'<cell id="{first}" type="markdown">' in out
    assert f'<cell id="{second}" type="code" execution_count=1>' in out
    assert "# Title\nSome text" in out and "print('hi')\n1 + 1" in out
    assert "<outputs>\nhi\n2\n[image/png output not shown]\n</outputs>" in out
    assert '"cell_type"' not in out  # not the JSON


async def test_a_broken_notebook_is_read_as_the_text_it_is(ws: Path) -> None:
    (ws / "nb.ipynb").write_text('{"cells": [')
    res = await ReadTool().run({"file_path": "nb.ipynb"}, make_ctx(ws))
    assert not res.is_error and res.output == '     1|{"cells": ['


async def test_replace_insert_delete_keep_the_notebook_valid_and_undo(ws: Path) -> None:
    path = ws / "nb.ipynb"
    path.write_text(json.dumps(notebook()))
    original = path.read_bytes()
    md, code = ids(path)
    ctx = make_ctx(ws)
    tool = NotebookEditTool()
    res = await tool.run({"notebook_path": "nb.ipynb", "cell_id": code,
                          "new_source": "x = 6 * 7\nx"}, ctx)
    assert not res.is_error, res.output
    assert res.output.startswith(f"Replaced cell {code} of nb.ipynb")
    cell = valid(path)["cells"][1]
    assert cell["source"] == ["x = 6 * 7\n", "x"] and cell["outputs"] == []
    assert cell["execution_count"] is None and cell["id"] == code

    res = await tool.run({"notebook_path": "nb.ipynb", "cell_id": md, "edit_mode": "insert",
                          "cell_type": "code", "new_source": "import os"}, ctx)
    assert not res.is_error, res.output
    now = ids(path)
    assert len(now) == 3 and now[0] == md and now[2] == code
    assert f"Inserted cell {now[1]} in nb.ipynb" in res.output
    assert valid(path)["cells"][1]["source"] == ["import os"]

    res = await tool.run({"notebook_path": "nb.ipynb", "edit_mode": "insert",
                          "cell_type": "markdown", "new_source": "first"}, ctx)
    assert not res.is_error and valid(path)["cells"][0]["source"] == ["first"]

    res = await tool.run({"notebook_path": "nb.ipynb", "cell_id": md, "edit_mode": "delete"}, ctx)
    assert not res.is_error and md not in ids(path)
    valid(path)
    for _ in range(4):  # each edit is one undo step
        undo_last(ctx.changes)
    assert path.read_bytes() == original


async def test_an_older_notebook_gets_cell_ids_and_stays_valid(ws: Path) -> None:
    path = ws / "old.ipynb"
    path.write_text(json.dumps(notebook(minor=4)))
    res = await ReadTool().run({"file_path": "old.ipynb"}, make_ctx(ws))
    assert '<cell id="cell-1" type="code"' in res.output  # named by position
    res = await NotebookEditTool().run({"notebook_path": "old.ipynb", "cell_id": "cell-1",
                                        "new_source": "y = 1"}, make_ctx(ws))
    assert not res.is_error, res.output
    data = valid(path)
    assert data["nbformat_minor"] == 5 and [c["id"] for c in data["cells"]] == ["cell-0", "cell-1"]


@pytest.mark.parametrize("args, said", [
    ({"cell_id": "nope", "new_source": "x"}, "no cell with id 'nope'"),
    ({"edit_mode": "insert", "new_source": "x"}, "cell_type is needed"),
    ({"edit_mode": "move", "cell_id": "CODE", "new_source": "x"}, "edit_mode must be"),
    ({"new_source": "x"}, "cell_id is needed"),
])
async def test_bad_edits_are_one_line_and_change_nothing(ws: Path, args, said) -> None:
    path = ws / "nb.ipynb"
    path.write_text(json.dumps(notebook()))
    before = path.read_bytes()
    args = {k: (ids(path)[1] if v == "CODE" else v) for k, v in args.items()}
    res = await NotebookEditTool().run({"notebook_path": "nb.ipynb", **args}, make_ctx(ws))
    assert res.is_error and said in res.output and "\n" not in res.output.strip()
    assert path.read_bytes() == before


async def test_not_a_notebook_and_outside_the_workspace_are_refused(ws: Path, tmp_path) -> None:
    (ws / "a.py").write_text("x = 1\n")
    res = await NotebookEditTool().run({"notebook_path": "a.py", "new_source": "x"}, make_ctx(ws))
    assert res.is_error and "not a .ipynb notebook" in res.output
    outside = tmp_path / "out.ipynb"
    outside.write_text(json.dumps(notebook()))
    before = outside.read_bytes()
    res = await NotebookEditTool().run(
        {"notebook_path": str(outside), "cell_id": ids(outside)[0], "new_source": "x"},
        make_ctx(ws))
    assert res.is_error and outside.read_bytes() == before


def test_claude_codes_notebook_edit_is_ours_and_its_path_is_gated() -> None:
    assert claude_names.ours("NotebookEdit") == "notebook_edit"
    tool = NotebookEditTool()
    assert tool.target_paths({"notebook_path": "nb.ipynb"}) == ["nb.ipynb"]
    assert tool.writes_files and tool.deferred
