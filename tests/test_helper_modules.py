"""Helper modules beside the tests (fake servers, bridges) are imported by bare name, from the
directory pytest puts on ``sys.path`` for each test file. Two with one name shadow each other:
whichever a run imports first wins, and the other test fails with an ImportError (CI failed so
on ``oauth_server``, one in ``auth/`` and one in ``mcp/``)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def helper_modules(root: Path) -> dict[str, list[Path]]:
    """Every non-test module under ``root`` that a test could import by bare name, by name."""
    found: dict[str, list[Path]] = defaultdict(list)
    for path in root.rglob("*.py"):
        if path.name.startswith("test_") or path.name in ("conftest.py", "__init__.py"):
            continue
        found[path.stem].append(path.relative_to(root))
    return found


def test_no_two_helper_modules_share_a_name():
    shared = {name: paths for name, paths in helper_modules(TESTS).items() if len(paths) > 1}
    assert shared == {}


def test_the_check_finds_a_shadowed_helper(tmp_path):
    for folder in ("auth", "mcp"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "oauth_server.py").write_text("")
    (tmp_path / "mcp" / "test_x.py").write_text("")
    assert {n: len(p) for n, p in helper_modules(tmp_path).items()} == {"oauth_server": 2}
