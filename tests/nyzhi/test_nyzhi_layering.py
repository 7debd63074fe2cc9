"""How ``nyzhi`` is put together: its packages import one way, down the layers that
``nyzhi/__init__.py`` states, and a private module (``_name.py``) is used only inside its own
package (as ``tests/actors/test_layering.py`` guards ``actors``).

Every import is read from the source with ``ast``, wherever it is written: at module level,
inside functions (where lazy imports live), under ``if TYPE_CHECKING:`` (an annotation naming a
class above is a dependency on it all the same), and a string literal naming a nyzhi module
(``importlib.import_module("...")`` and the lazy export tables that feed it), and a
``"module:attr"`` string (an entry point). Packages of one layer may import each other, but not
in a circle, except the front ends, which import none of each other (what two share lives
below them). The holes a check by module names leaves are closed too: ``from nyzhi import X``
counts as importing the module the root package lazily exports ``X`` from; ``import_module``
with a computed name is refused, except the literal prefix of an f-string (an import of that
package) and the lazy tables listed in ``LAZY_TABLES``, whose names are literals read here; a
private name (``_x``) is not imported from another package's module. Front ends reach the
runtime through the session protocol (``nyzhi.core.protocol``) and ``open_runtime`` alone: the
other imports of what lies below them are the ones left to move, listed in
``FRONT_END_DEBT`` (a new one fails, and a moved one must leave the list). Inside core, the
tiers (``CORE_TIERS``: shared, loop, runtime, protocol) import downwards, but for the
imports listed in ``CORE_TIER_DEBT``; ``nyzhi.front``, what the front ends share, is held to
the front ends' rule.

Which is a front end and which is ``cli``: a module that opens a runtime or drives a session is
a front end (the console ``tui``, ``acp``, ``web``, ``headless``: ``nyz run``, a team's process
member and a rerun, and ``linechat``), held to the protocol; a command that only parses
arguments, reads or edits files and configuration, or hands over to a front end, without
running an agent itself, is ``cli``, the top layer, which may import every layer below it
(``nyz config``, ``nyz auth``, ``nyz models``, ``nyz mcp add``, ``nyz sessions``, and
``nyz run``'s and ``nyz chat``'s argument parsing before they call their front end).
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
    ("records", "spawn", "convert", "codecache", "process", "jsonrpc", "signals", "textcut",
     "loopback", "prompt_input", "collector", "jsonbound", "oserror"),
    ("config",),
    ("auth", "provider", "tools", "index", "knowledge", "team_files"),
    ("core", ""),
    ("front",),
    ("tui", "acp", "web", "headless", "linechat"),
    ("cli", "__main__"),
    ("testing",),
)
LEVEL = {part: n for n, layer in enumerate(LAYERS) for part in layer}
# The front ends, held to the protocol; ``cli`` above them is not one (see the docstring).
FRONT_ENDS = ("tui", "acp", "web", "headless", "linechat")
# What the front ends share (``nyzhi.front``): above core, held to the front ends' rule.
SHARED_FRONT = "front"
# What a front end may import from below itself: the session protocol, open_runtime's module
# (and its package, which re-exports it, by that exact name: ``FRONT_END_PACKAGES``), the root
# package (its version) and the root modules under every layer.
FRONT_END_PACKAGES = ("nyzhi.core.runtime",)
FRONT_END_API = ("nyzhi.core.protocol", "nyzhi.core.runtime.runtime", "nyzhi.records", "nyzhi.convert",
                 "nyzhi.spawn", "nyzhi.codecache", "nyzhi.process", "nyzhi.jsonrpc",
                 "nyzhi.signals", "nyzhi.textcut", "nyzhi.loopback", "nyzhi.prompt_input",
                 # the garbage collector's start-up pause: process-wide, as the ``nyz`` entry
                 # points (cli) and every front end that builds a runtime pause and resume it
                 "nyzhi.collector",
                 # JSON from someone else (a model's stream, its tool arguments) parsed within
                 # bounds: the providers, the loop and the console's tool lines all parse it
                 "nyzhi.jsonbound",
                 # a failed OS call as one line (``StorageError``): every writer's, from
                 # config's atomic writes to ``nyz run``'s stdout
                 "nyzhi.oserror")
# Modules whose ``import_module`` takes a name from a table of literal module names in the same
# file (each name is then checked as an import) or from a fixed package: why each is safe.
LAZY_TABLES = {
    "nyzhi": "_EXPORTS: the embedding API's literal (module, attribute) table",
    "nyzhi.config": "its lazy export table of literal module names",
    "nyzhi.provider": "its lazy export table of literal module names",
    "nyzhi.provider.build": "the wire adapters' literal table",
    "nyzhi.team_files": "its lazy export table of literal module names",
    "nyzhi.tools.executors": "its lazy export table of literal module names",
    "nyzhi.tools.lazy": "the manifest's literal table of builtin tool modules",
    "nyzhi.core.runtime.sessions": "its lazy export table of literal module names",
    "nyzhi.cli.main": "COMMANDS: the literal table of subcommand modules",
    "nyzhi.codecache": "warms the modules it finds under nyzhi's own package",
}
FRONT_END_DEBT = Path(__file__).with_name("front_end_imports.txt")


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


def _root_exports() -> dict[str, str]:
    """``name -> module`` for what ``nyzhi/__init__.py`` exports lazily."""
    return {name: module for name, (module, _attr) in nyzhi._EXPORTS.items()}


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
                if source == "nyzhi" and alias.name in _root_exports():
                    yield _root_exports()[alias.name], node.lineno  # the lazy export's module
                    continue
                yield (sub if sub in known else source), node.lineno
        elif isinstance(node, ast.Call) and _is_import_module(node.func) and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                yield arg.value, node.lineno
            elif _fstring_head(arg) in known:
                yield _fstring_head(arg), node.lineno
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id == "nyzhi" and node.attr in _root_exports():
            yield _root_exports()[node.attr], node.lineno  # ``nyzhi.open_runtime``
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            name = node.value.partition(":")[0] if ":" in node.value else node.value
            if name in known and name != "nyzhi":
                yield name, node.lineno


def _fstring_head(arg: ast.expr) -> str:
    """The package an f-string module name starts with: ``nyzhi.tools.builtin`` for
    ``f"nyzhi.tools.builtin.{name}"``; "" when its head is not a literal ending in a dot."""
    if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        head = str(arg.values[0].value)
        if head.endswith("."):
            return head[:-1]
    return ""


def _loopholes(module: str, is_package: bool, tree: ast.Module,
               known: set[str]) -> Iterator[tuple[int, str]]:
    """What a check by module names cannot see through: ``import_module`` with a name it
    cannot read (outside ``LAZY_TABLES``), and a private name imported from a module of
    another package."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _is_import_module(node.func) and node.args:
            arg = node.args[0]
            readable = (isinstance(arg, ast.Constant) and isinstance(arg.value, str)) \
                or bool(_fstring_head(arg))
            if not readable and module not in LAZY_TABLES:
                yield node.lineno, "import_module with a computed name (list the module in " \
                                   "LAZY_TABLES with why its names are checked)"
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            source = node.module
            if not source.startswith("nyzhi"):
                continue
            home = source if f"{source}.__init__" in known or _is_package(source, known) \
                else source.rpartition(".")[0]
            for alias in node.names:
                private = alias.name.startswith("_") and not alias.name.startswith("__")
                if private and f"{source}.{alias.name}" not in known and home != package:
                    yield node.lineno, (f"private name {alias.name} of {source} imported "
                                        f"outside its package {home}")


def _is_package(module: str, known: set[str]) -> bool:
    return any(k.startswith(module + ".") for k in known)


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
        if own in FRONT_ENDS and other in FRONT_ENDS and other != own:
            found.append(f"{where}:{line}: front end imports another front end "
                         f"({own} -> {other}; share it from below): {module} imports {target}")
    for line, rule in _loopholes(module, path.name == "__init__.py", tree, known):
        found.append(f"{where}:{line}: {rule}: {module}")
    return found


def front_end_reaches(module: str, path: Path, source: str, known: set[str]) -> set[str]:
    """``module -> target`` for each import a front end makes of what lies below the front
    ends other than ``FRONT_END_API`` (the runtime's insides, and the layers under it)."""
    own = part_of(module)
    if own not in (*FRONT_ENDS, SHARED_FRONT):
        return set()
    out = set()
    for target, _line in imports(module, path.name == "__init__.py", ast.parse(source), known):
        other = part_of(target) if target.startswith("nyzhi.") else own
        if target == "nyzhi" or other in FRONT_ENDS or LEVEL.get(other, 0) >= LEVEL[SHARED_FRONT]:
            continue
        if target in FRONT_END_PACKAGES:
            continue
        if any(target == api or target.startswith(api + ".") for api in FRONT_END_API):
            continue
        out.add(f"{module} -> {target}")
    return out


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


def test_front_ends_reach_below_them_only_through_the_protocol_or_a_listed_debt():
    """Every import of the runtime's insides (or a lower layer) from a front end is either
    gone or listed in ``front_end_imports.txt``; the list only shrinks."""
    sources = _sources()
    known = set(sources)
    found = set().union(*(front_end_reaches(m, p, t, known) for m, (p, t) in sources.items()))
    listed = {ln.strip() for ln in FRONT_END_DEBT.read_text().splitlines()
              if ln.strip() and not ln.startswith("#")}
    assert not found - listed, ("front ends reach past the session protocol (use "
                                "nyzhi.core.protocol):\n" + "\n".join(sorted(found - listed)))
    assert not listed - found, ("moved onto the protocol: remove from front_end_imports.txt:"
                                "\n" + "\n".join(sorted(listed - found)))


KNOWN = {"nyzhi", "nyzhi.core", "nyzhi.core.runtime.runtime", "nyzhi.core.events", "nyzhi.core.protocol",
         "nyzhi.tools", "nyzhi.tools.leases", "nyzhi.tools.builtin", "nyzhi.tools.builtin.search",
         "nyzhi.tui", "nyzhi.tui.app", "nyzhi.web", "nyzhi.web.session", "nyzhi.cli",
         "nyzhi.cli.render", "nyzhi.index", "nyzhi.index.tool"}


def _probe(module: str, source: str) -> list[str]:
    path = Path(*module.split(".")).with_suffix(".py")
    return check(module, path, source, KNOWN)


def test_a_root_package_import_counts_as_the_module_it_exports_lazily():
    found = _probe("nyzhi.tools.leases", "from nyzhi import open_runtime\n"
                   "import nyzhi\nx = nyzhi.Runtime\nfrom nyzhi import __version__\n")
    assert found == [
        "nyzhi/tools/leases.py:1: upward import (tools is below core): "
        "nyzhi.tools.leases imports nyzhi.core.runtime.runtime",
        "nyzhi/tools/leases.py:3: upward import (tools is below core): "
        "nyzhi.tools.leases imports nyzhi.core.runtime.runtime",
    ]


def test_a_computed_import_module_name_is_refused_but_a_literal_prefix_is_read():
    found = _probe("nyzhi.tools.leases", "import importlib\n"
                   "def f(name):\n"
                   "    importlib.import_module(name)\n"
                   "    importlib.import_module('nyzhi.' + name)\n"
                   "    importlib.import_module(f'nyzhi.cli.{name}')\n"
                   "    importlib.import_module(f'nyzhi.tools.builtin.{name}')\n")
    assert found == [  # what the imports break first, then what they hide
        "nyzhi/tools/leases.py:5: upward import (tools is below cli): "
        "nyzhi.tools.leases imports nyzhi.cli",
        "nyzhi/tools/leases.py:3: import_module with a computed name (list the module in "
        "LAZY_TABLES with why its names are checked): nyzhi.tools.leases",
        "nyzhi/tools/leases.py:4: import_module with a computed name (list the module in "
        "LAZY_TABLES with why its names are checked): nyzhi.tools.leases",
    ]


def test_a_module_attr_string_is_an_import():
    found = _probe("nyzhi.index.tool", "ENTRY = 'nyzhi.cli.render:main'\n"
                   "OK = 'nyzhi.tools.leases:LeaseTable'\n")
    assert found == ["nyzhi/index/tool.py:1: upward import (index is below cli): "
                     "nyzhi.index.tool imports nyzhi.cli.render"]


def test_a_front_end_imports_no_other_front_end():
    found = _probe("nyzhi.tui.app", "from nyzhi.web.session import WebSession\n"
                   "from nyzhi.core.protocol import Session\n")
    assert found == ["nyzhi/tui/app.py:1: front end imports another front end (tui -> web; "
                     "share it from below): nyzhi.tui.app imports nyzhi.web.session"]


def test_a_private_name_is_not_imported_from_another_package():
    found = _probe("nyzhi.core.events", "from nyzhi.tools.leases import LeaseTable, _shown\n"
                   "from nyzhi.tools.builtin.search import _root\n")
    assert found == ["nyzhi/core/events.py:1: private name _shown of nyzhi.tools.leases "
                     "imported outside its package nyzhi.tools: nyzhi.core.events",
                     "nyzhi/core/events.py:2: private name _root of nyzhi.tools.builtin.search "
                     "imported outside its package nyzhi.tools.builtin: nyzhi.core.events"]
    inside = "from nyzhi.tools.builtin.search import _root\n"
    assert _probe("nyzhi.tools.builtin.grep", inside) == []


def test_a_front_end_reaching_into_the_runtime_is_seen_and_the_protocol_is_not():
    source = ("from nyzhi.core.protocol import Session\nfrom nyzhi.core.runtime.runtime import "
              "open_runtime\nfrom nyzhi.core import events\nfrom nyzhi.tools import leases\n"
              "from nyzhi.cli import render\n")
    assert front_end_reaches("nyzhi.web.session", Path("nyzhi/web/session.py"), source,
                             KNOWN) == {"nyzhi.web.session -> nyzhi.core.events",
                                        "nyzhi.web.session -> nyzhi.tools.leases"}


# The tiers inside core, bottom to top: the modules at ``nyzhi.core``'s top (``CORE_SHARED``,
# every tier's), the agent loop, the runtime that assembles loops, the session protocol. A
# core module imports only its own tier and those below; ``CORE_TIER_DEBT`` lists the upward
# imports left (``module -> target``): a new one fails, a moved one must leave the list.
CORE_TIERS = ("", "loop", "runtime", "protocol")
CORE_SHARED = frozenset({"events", "errors", "event_bus", "prompt_env"})
CORE_TIER_DEBT = frozenset({
    "nyzhi.core.loop.compaction -> nyzhi.core.runtime.sessions.records",
    "nyzhi.core.loop.context_window -> nyzhi.core.runtime.sessions.store",
    "nyzhi.core.loop.state_record -> nyzhi.core.runtime.sessions.store",
    "nyzhi.core.loop.tool_step -> nyzhi.core.protocol.ops",
    "nyzhi.core.loop.tool_step -> nyzhi.core.runtime.assembly",
    "nyzhi.core.loop.tool_step -> nyzhi.core.runtime.hooks",
    "nyzhi.core.runtime.commands.builtin -> nyzhi.core.protocol",
    "nyzhi.core.runtime.commands.builtin -> nyzhi.core.protocol.ops",
    "nyzhi.core.runtime.commands.workflows -> nyzhi.core.protocol",
})


def core_tier(module: str) -> str | None:
    """The tier of a core module (``""`` for the shared ones), None outside core."""
    parts = module.split(".")
    if parts[:2] != ["nyzhi", "core"]:
        return None
    return parts[2] if len(parts) > 2 and parts[2] in CORE_TIERS else ""


def tier_breaks(module: str, path: Path, source: str, known: set[str]) -> set[str]:
    """``module -> target`` for each import of a higher tier of core."""
    own = core_tier(module)
    if own is None:
        return set()
    out = set()
    for target, _line in imports(module, path.name == "__init__.py", ast.parse(source), known):
        other = core_tier(target)
        if other is not None and CORE_TIERS.index(other) > CORE_TIERS.index(own):
            out.add(f"{module} -> {target}")
    return out


def test_every_module_of_core_is_in_a_tier():
    strays = {m for m in all_modules() if core_tier(m) == "" and m != "nyzhi.core"
              and m.split(".")[2] not in CORE_SHARED}
    assert strays == set(), "put these in a tier of core (loop, runtime, protocol)"


def test_core_tiers_import_downwards_or_are_listed_debt():
    sources = _sources()
    known = set(sources)
    found = set().union(*(tier_breaks(m, p, t, known) for m, (p, t) in sources.items()))
    assert not found - CORE_TIER_DEBT, "upward import between core's tiers:\n" + "\n".join(
        sorted(found - CORE_TIER_DEBT))
    assert not CORE_TIER_DEBT - found, "moved down: remove from CORE_TIER_DEBT:\n" + \
        "\n".join(sorted(CORE_TIER_DEBT - found))


def test_an_import_up_core_s_tiers_is_seen():
    known = KNOWN | {"nyzhi.core.loop", "nyzhi.core.loop.turn", "nyzhi.core.runtime.hooks"}
    source = ("from nyzhi.core.runtime.hooks import HookRunner\nfrom nyzhi.core import events\n"
              "from nyzhi.core.protocol import Session\n")
    assert tier_breaks("nyzhi.core.loop.turn", Path("nyzhi/core/loop/turn.py"), source,
                       known) == {"nyzhi.core.loop.turn -> nyzhi.core.runtime.hooks",
                                  "nyzhi.core.loop.turn -> nyzhi.core.protocol"}
