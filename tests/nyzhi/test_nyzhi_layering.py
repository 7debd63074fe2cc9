"""How ``nyzhi`` is put together: its packages import one way, down the layers that
``nyzhi/__init__.py`` states, and a private module (``_name.py``) is used only inside its own
package (as ``tests/actors/test_layering.py`` guards ``actors``).

Every import is read from the source with ``ast``, wherever it is written: at module level,
inside functions (where lazy imports live), under ``if TYPE_CHECKING:`` (an annotation naming a
class above is a dependency on it all the same), and a string literal naming a nyzhi module
(``importlib.import_module("...")`` and the lazy export tables that feed it). Packages of one
layer may import each other, but not in a circle.
"""

from __future__ import annotations

import ast
import graphlib
from collections.abc import Iterator
from pathlib import Path

import nyzhi

NYZHI = Path(nyzhi.__file__).parent

# Bottom to top, as nyzhi/__init__.py states; the packages of one tuple are one layer. The
# root package (``nyzhi/__init__.py``, whose lazy exports are the embedding API) sits with
# ``core``; importing it (``from nyzhi import __version__``) is allowed from anywhere.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("records", "spawn", "convert", "codecache"),
    ("config",),
    ("auth", "provider", "tools", "index", "knowledge", "teams"),
    ("core", ""),
    ("tui", "acp", "web"),
    ("cli", "__main__"),
    ("testing",),
)
LEVEL = {part: n for n, layer in enumerate(LAYERS) for part in layer}


def all_modules(root: Path = NYZHI) -> dict[str, Path]:
    """``nyzhi.x.y`` -> its file, for every module of the package."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def part_of(module: str) -> str:
    """The top-level part of nyzhi a module belongs to: ``core`` for ``nyzhi.core.x``, ``""``
    for the root package."""
    return module.split(".")[1] if "." in module else ""


def _is_import_module(func: ast.expr) -> bool:
    return (isinstance(func, ast.Attribute) and func.attr == "import_module") or (
        isinstance(func, ast.Name) and func.id == "import_module")


def imports(module: str, is_package: bool, tree: ast.Module,
            known: set[str]) -> list[tuple[str, int]]:
    """Every nyzhi module ``module`` imports, with the line, in line order: ``import``,
    ``from … import`` (relative too; a name that is a submodule counts as that submodule),
    the literal of an ``import_module`` call, and any string literal naming a nyzhi module."""
    return sorted(set(_imports(module, is_package, tree, known)), key=lambda t: (t[1], t[0]))


def _imports(module: str, is_package: bool, tree: ast.Module,
             known: set[str]) -> Iterator[tuple[str, int]]:
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                yield (sub if sub in known else source), node.lineno
        elif isinstance(node, ast.Call) and _is_import_module(node.func) and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                yield arg.value, node.lineno
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and node.value in known and node.value != "nyzhi":
            yield node.value, node.lineno


def _private_package(target: str) -> str | None:
    """The package a private module belongs to (``nyzhi.tools.builtin`` for
    ``nyzhi.tools.builtin._proc``), or None for a public one."""
    parts = target.split(".")
    for n, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:n])
    return None


def check(module: str, path: Path, source: str, known: set[str]) -> list[str]:
    """The rules ``module`` (whose file is ``path``) breaks, one line each."""
    where = path.relative_to(NYZHI.parent) if path.is_absolute() else path
    found = []
    tree = ast.parse(source)
    own = part_of(module)
    for target, line in imports(module, path.name == "__init__.py", tree, known):
        if target != "nyzhi" and not target.startswith("nyzhi."):
            continue
        other = part_of(target)
        if other and other != own and LEVEL[other] > LEVEL[own]:
            found.append(f"{where}:{line}: upward import ({own or 'nyzhi'} is below {other}): "
                         f"{module} imports {target}")
        private = _private_package(target)
        if private is not None and not (module + ".").startswith(private + "."):
            found.append(f"{where}:{line}: private module used outside its package "
                         f"{private}: {module} imports {target}")
    return found


def _sources() -> dict[str, tuple[Path, str]]:
    return {m: (p, p.read_text()) for m, p in all_modules().items()}


def test_every_part_of_nyzhi_has_a_layer():
    parts = {part_of(m) for m in all_modules()}
    assert parts - set(LEVEL) == set(), "add these to LAYERS (and nyzhi/__init__.py's order)"


def test_nyzhi_imports_only_down_the_layers_and_no_private_module_of_another_package():
    sources = _sources()
    known = set(sources)
    problems = [p for m, (path, text) in sources.items() for p in check(m, path, text, known)]
    assert problems == [], "layering broken:\n" + "\n".join(problems)


def test_packages_of_one_layer_import_each_other_without_a_circle():
    sources = _sources()
    known = set(sources)
    graph: dict[str, set[str]] = {}
    for module, (path, text) in sources.items():
        own = part_of(module)
        for target, _line in imports(module, path.name == "__init__.py", ast.parse(text), known):
            other = part_of(target) if target.startswith("nyzhi.") else own
            if other != own and LEVEL.get(other) == LEVEL[own]:
                graph.setdefault(own, set()).add(other)
    assert graph.get("index") and "tools" in graph["index"]  # the graph was read
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        raise AssertionError("import circle between packages: " + " -> ".join(exc.args[1])) from None


def test_the_check_sees_every_kind_of_import_and_names_file_line_and_rule():
    known = {"nyzhi", "nyzhi.core", "nyzhi.core.events", "nyzhi.cli", "nyzhi.cli.render",
             "nyzhi.tools", "nyzhi.tools.builtin", "nyzhi.tools.builtin._common",
             "nyzhi.tools.builtin.search", "nyzhi.index", "nyzhi.index.tool"}
    source = (
        "from typing import TYPE_CHECKING\n"
        "from nyzhi import records\n"                        # the root package: allowed
        "if TYPE_CHECKING:\n"
        "    from nyzhi.core import events\n"                # 4: upward, though never run
        "def f():\n"
        "    import nyzhi.cli.render\n"                      # 6: upward, inside a function
        "    return importlib.import_module('nyzhi.core')\n"  # 7: upward, by name
        "from ..tools.builtin._common import BuiltinTool\n"  # 8: another package's private
        "from ..tools.builtin import search\n"               # 9: a public module: fine
        "LAZY = {'x': ('nyzhi.cli', 'x')}\n"                 # 10: a lazy export table
    )
    found = check("nyzhi.index.tool", Path("nyzhi/index/tool.py"), source, known)
    assert found == [
        "nyzhi/index/tool.py:4: upward import (index is below core): "
        "nyzhi.index.tool imports nyzhi.core.events",
        "nyzhi/index/tool.py:6: upward import (index is below cli): "
        "nyzhi.index.tool imports nyzhi.cli.render",
        "nyzhi/index/tool.py:7: upward import (index is below core): "
        "nyzhi.index.tool imports nyzhi.core",
        "nyzhi/index/tool.py:8: private module used outside its package nyzhi.tools.builtin: "
        "nyzhi.index.tool imports nyzhi.tools.builtin._common",
        "nyzhi/index/tool.py:10: upward import (index is below cli): "
        "nyzhi.index.tool imports nyzhi.cli",
    ]
    # inside its own package a private module is fine
    inside = "from nyzhi.tools.builtin._common import BuiltinTool\n"
    assert check("nyzhi.tools.builtin.search", Path("nyzhi/tools/builtin/search.py"),
                 inside, known) == []
