"""How ``actors`` is put together: its modules import each other one way (no cycle), and
only ``_cell.py`` changes a cell (the guard in ``conftest.py`` checks that during every test).

The graph is read from the source with ``ast``, every import counted wherever it is written,
including inside functions (that is where an earlier circle hid: ``_actor`` ↔ ``_lifecycle``
↔ ``_supervisor``). Imports under ``if TYPE_CHECKING:`` are left out: they never run, and
exist only so annotations can name a class defined above (a ref's cell, a cell's ref).
"""

from __future__ import annotations

import ast
from pathlib import Path

import actors
from actors import _cell

PACKAGE = Path(actors.__file__).parent


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.Module, modules: set[str]) -> list[tuple[str, int, bool]]:
    """Every import of a sibling module: (module, line, at module level?). Skips
    ``if TYPE_CHECKING:`` blocks."""
    found: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:
                    visit_one(other, top)
                continue
            visit_one(child, top)

    def visit_one(node: ast.AST, top: bool) -> None:
        names: list[str] = []
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module:
                names = [node.module]
            elif node.level == 1:  # from . import x: a module, or a name from __init__
                names = [a.name if a.name in modules else "__init__" for a in node.names]
            elif node.level == 0 and node.module and node.module.split(".")[0] == "actors":
                names = [(node.module.split(".") + ["__init__"])[1]]
        elif isinstance(node, ast.Import):
            names = [
                (a.name.split(".") + ["__init__"])[1]
                for a in node.names
                if a.name.split(".")[0] == "actors"
            ]
        for name in names:
            if name in modules:
                found.append((name, node.lineno, top))
        inner = top and not isinstance(
            node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef
        )
        visit(node, inner)

    visit(tree, True)
    return found


def _graph() -> tuple[dict[str, set[str]], list[str]]:
    paths = {p.stem: p for p in PACKAGE.glob("*.py")}
    graph: dict[str, set[str]] = {}
    nested: list[str] = []
    for name, path in paths.items():
        edges = _imports(ast.parse(path.read_text()), set(paths))
        graph[name] = {target for target, _, _ in edges}
        nested += [f"{name}.py:{line} imports {t}" for t, line, top in edges if not top]
    return graph, nested


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path that ends where it starts, or ``None``."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return path[path.index(target) :] + [target]
            if target not in state and (cycle := walk(target)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := walk(node)):
            return cycle
    return None


def test_the_cycle_finder_finds_cycles() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None
    assert find_cycle({"a": {"a"}}) == ["a", "a"]


def test_the_graph_sees_imports_inside_functions() -> None:
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "from ._a import x\n"
        "if TYPE_CHECKING:\n"
        "    from ._b import y\n"
        "def f():\n"
        "    from ._c import z\n"
        "class K:\n"
        "    def g(self):\n"
        "        import actors._d\n"
        "import actors\n"
        "from actors import Actor\n"
        "from . import _a, Actor\n"
    )
    found = _imports(tree, {"_a", "_b", "_c", "_d", "__init__"})
    assert found == [
        ("_a", 2, True), ("_c", 6, False), ("_d", 9, False),
        ("__init__", 10, True), ("__init__", 11, True), ("_a", 12, True), ("__init__", 12, True),
    ]  # fmt: skip


def test_actors_modules_import_each_other_one_way() -> None:
    graph, _ = _graph()
    assert "_cell" in graph and "_lifecycle" in graph["_system"]  # the graph was read
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle in actors/: " + " -> ".join(cycle or ())


def test_no_imports_between_actors_modules_inside_functions() -> None:
    _, nested = _graph()
    assert nested == [], "move these imports to the top of the module: " + "; ".join(nested)


def test_the_cell_guard_reports_a_change_from_another_module(
    only_the_cell_module_changes_cells: list[str],
) -> None:
    cell = _cell.Cell.__new__(_cell.Cell)
    cell.counter = 1  # this module is not actors._cell
    assert only_the_cell_module_changes_cells == [f"{__name__} sets Cell.counter"]
    only_the_cell_module_changes_cells.clear()
