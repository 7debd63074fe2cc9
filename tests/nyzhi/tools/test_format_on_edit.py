"""``[agent] format_on_edit = "auto"``: the project's own formatter runs over what an edit
wrote, sandboxed, and the model is told; /undo still restores what was there before the edit;
nothing runs when the project does not use a formatter or it is not installed, or when off."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from _toolctx import make_ctx

from nyzhi.tools.builtin.files_write import EditTool, WriteTool
from nyzhi.tools.ledger import FileLedger
from nyzhi.tools.undo import undo_last

RUFF = Path(sys.executable).parent / "ruff"  # the dev extra's ruff: a real formatter
UGLY = "def f( a,b ):\n    return {'x':a,'y':b}\n"
FORMATTED = 'def f(a, b):\n    return {"x": a, "y": b}\n'


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / ".venv" / "bin" / "ruff").symlink_to(RUFF)  # the project's own venv
    (root / "pyproject.toml").write_text('[project]\nname = "p"\n[tool.ruff]\nline-length = 99\n')
    return root


def ctx_for(ws: Path, mode: str = "auto"):
    return make_ctx(ws, format_on_edit=mode, seen=FileLedger())


@pytest.mark.skipif(not RUFF.exists(), reason="ruff (the dev extra) is not installed")
async def test_ruff_formats_what_write_and_edit_wrote_and_the_model_is_told(ws: Path) -> None:
    ctx = ctx_for(ws)
    res = await WriteTool().run({"file_path": "m.py", "content": UGLY}, ctx)
    assert not res.is_error, res.output
    assert (ws / "m.py").read_text() == FORMATTED
    assert "[ruff format reformatted m.py; read again before an exact edit]" in res.output
    # the ledger knows the formatted content: the next exact edit is not called stale
    res = await EditTool().run({"file_path": "m.py", "old_string": '"y": b', "new_string":
                                "'y':b,'z':1"}, ctx)
    assert not res.is_error, res.output
    assert (ws / "m.py").read_text() == 'def f(a, b):\n    return {"x": a, "y": b, "z": 1}\n'
    # /undo of the edit gives back what was there before it (formatted), then the write's
    undo_last(ctx.changes)
    assert (ws / "m.py").read_text() == FORMATTED
    undo_last(ctx.changes)
    assert not (ws / "m.py").exists()


@pytest.mark.skipif(not RUFF.exists(), reason="ruff (the dev extra) is not installed")
async def test_nothing_runs_when_off_or_when_the_project_has_no_formatter(ws: Path) -> None:
    res = await WriteTool().run({"file_path": "m.py", "content": UGLY}, ctx_for(ws, "off"))
    assert (ws / "m.py").read_text() == UGLY and "reformatted" not in res.output
    (ws / "pyproject.toml").write_text('[project]\nname = "p"\n')  # no [tool.ruff]
    res = await WriteTool().run({"file_path": "n.py", "content": UGLY}, ctx_for(ws))
    assert (ws / "n.py").read_text() == UGLY and "[" not in res.output.splitlines()[-1]
    os.unlink(ws / ".venv" / "bin" / "ruff")
    (ws / "pyproject.toml").write_text('[tool.ruff]\n')
    res = await WriteTool().run({"file_path": "o.py", "content": UGLY},
                                make_ctx(ws, format_on_edit="auto"))
    # ruff from PATH, if any; with neither, the file stays as written and nothing is said
    if not any((Path(d) / "ruff").exists() for d in os.environ.get("PATH", "").split(":") if d):
        assert (ws / "o.py").read_text() == UGLY and "ruff" not in res.output


async def test_a_formatter_the_repository_ships_runs_in_the_sandbox(ws: Path, tmp_path) -> None:
    """node_modules/.bin/prettier is the repository's code: it runs confined like bash, so
    what it writes outside the workspace fails, and a failing formatter leaves the edit."""
    (ws / "package.json").write_text('{"devDependencies": {"prettier": "3"}}')
    outside = tmp_path / "outside.txt"
    script = ws / "node_modules" / ".bin" / "prettier"
    script.parent.mkdir(parents=True)
    script.write_text(f"#!/bin/sh\necho pwned > {outside} || exit 3\n"
                      "for f; do case $f in *.js) echo '// formatted' >> \"$f\";; esac; done\n")
    script.chmod(0o755)
    res = await WriteTool().run({"file_path": "a.js", "content": "x=1\n"}, ctx_for(ws))
    assert not res.is_error, res.output
    assert not outside.exists()  # confined to the workspace
    assert "prettier failed (exit 3" in res.output and "the edit stands as written" in res.output
    assert (ws / "a.js").read_text() == "x=1\n"
    script.write_text("#!/bin/sh\nfor f; do case $f in *.js) echo '// formatted' >> \"$f\";; "
                      "esac; done\n")
    res = await WriteTool().run({"file_path": "b.js", "content": "y=2\n"}, ctx_for(ws))
    assert (ws / "b.js").read_text() == "y=2\n// formatted\n"
    assert "prettier reformatted b.js" in res.output


def test_the_key_reaches_the_tools_and_a_wrong_value_is_one_line(tmp_path: Path) -> None:
    from nyzhi.config.errors import ConfigError
    from nyzhi.config.loader import read_layer, validate_layer
    from nyzhi.config.workspace import detect_workspace
    from nyzhi.core.runtime.assembly import build_tooling
    from nyzhi.core.runtime.runtime import RuntimeOptions

    path = tmp_path / "config.toml"
    path.write_text('[agent]\nformat_on_edit = "auto"\n')
    config = validate_layer(read_layer(path), path)
    tooling = build_tooling(config, detect_workspace(tmp_path),
                            RuntimeOptions(cwd=tmp_path, interactive=False), broker=None)
    assert tooling.context.format_on_edit == "auto"
    path.write_text('[agent]\nformat_on_edit = "always"\n')
    with pytest.raises(ConfigError) as err:
        validate_layer(read_layer(path), path)
    assert "format_on_edit" in str(err.value) and "\n" not in str(err.value).strip()
