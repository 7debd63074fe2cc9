"""The tool registry: which tools exist, which an agent may use, and what the model is shown.

Three concerns live here because they all shape the tool list the model sees:

- **Role fencing.** A reviewer role may be limited to read-only tools. ``fenced()`` returns a
  view over the same tools with an allow/deny fence; ``is_allowed`` is what the executor's
  first gate asks, and fenced-out tools are left out of ``schemas()`` and ``names()``.
- **Deferred tools.** Dozens of MCP tools would bloat every request, so a deferred tool only
  contributes one line to ``prompt_summary()`` until ``tool_search`` finds it (``discover``);
  from then on its full schema is in ``schemas()``. Discovery is per view (per agent).
- **External tools** (MCP, named ``mcp__server__tool``) are registered at run time with
  ``register_external``.

``schemas()`` returns plain dicts ``{name, description, parameters}``: tools sit beside the
provider layer, not above it, so core converts them to ``ToolSchema``.
"""

from __future__ import annotations

import copy
import importlib
import re
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from nyzhi.tools.base import Tool
from nyzhi.tools.fence import ToolFence

# Every built-in tool module, in prompt order. Each exposes ``TOOLS`` (a tuple of Tool classes)
# or, failing that, the Tool subclasses it defines. A missing module is an ImportError.
BUILTIN_MODULES: tuple[str, ...] = (
    "files_read",
    "files_write",
    "patch",
    "search",
    "bash",
    "shells",
    "git",
    "planning",
    "knowledge",
    "interaction",
    "agents",
    "team",
    "web",
    "verify",
    "structural",
    "instrument",
    "browser",
    "pr",
    "lsp",
)

# Tools registered only when configured (``web_search``: when ``[web_search]`` names a
# backend; ``nodes``: when there are ``[[nodes]]``). A role fence naming one is not a typo: it
# simply has nothing to offer then.
CONFIGURED_TOOLS: frozenset[str] = frozenset({"web_search", "nodes"})


T = TypeVar("T")


class ToolRegistryError(Exception):
    """Registering a tool that clashes with one already there, or an invalid tool class."""


class _Store:
    """The tools themselves, shared by a registry and all its fenced views."""

    def __init__(self) -> None:
        self.tools: dict[str, Tool] = {}
        self.deferred: set[str] = set()
        self.external: set[str] = set()
        self.version = 0  # bumped on every change, so views can cache what they derive
        # What views derive, shared by views that show the same tools (``ToolRegistry.shared``).
        self.cache: dict[Any, Any] = {}
        self.cache_version = 0


def first_line(text: str) -> str:
    for line in text.strip().splitlines():
        if line.strip():
            return line.strip()
    return ""


def first_sentence(text: str) -> str:
    """The text up to its first full stop (or ``?``/``!``) followed by a space: what a tool
    says it does, without the details its schema carries."""
    return re.split(r"(?<=[.!?])\s+", text.strip(), maxsplit=1)[0]


#: A deferred tool's line in the system prompt: its first sentence when that is short, else
#: the sentence's main clause (up to its first ``:``, ``;`` or parenthesis), cut at this bound.
#: 31 deferred tools are listed in every first request; their full text comes with the schema.
SUMMARY_CHARS = 100


def tool_summary(description: str) -> str:
    """What the system prompt says of a deferred tool (``SUMMARY_CHARS`` at most)."""
    text = first_sentence(first_line(description))
    if len(text) > 80:
        cut = min((i for i in (text.find(m, 20) for m in (": ", "; ", " (")) if i > 0),
                  default=len(text))
        text = text[:cut]
    if len(text) > SUMMARY_CHARS:
        text = text[:SUMMARY_CHARS - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"
    return text


class ToolRegistry:
    """Tools by name, with an optional role fence and per-view discovery of deferred tools."""

    def __init__(
        self,
        *,
        _store: _Store | None = None,
        allowed: frozenset[str] | None = None,
        disallowed: frozenset[str] = frozenset(),
    ) -> None:
        self._store = _store or _Store()
        self._fence = ToolFence.of(allowed, disallowed)
        self._discovered: set[str] = set()

    # --- registration ---------------------------------------------------------------------

    def register(self, tool: Tool, *, deferred: bool | None = None, replace: bool = False) -> None:
        """Add ``tool``; ``deferred`` overrides the tool's class default. Adding a second tool
        with a taken name is an error unless ``replace``."""
        name = getattr(tool, "name", None)
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]{1,128}", name):
            raise ToolRegistryError(f"invalid tool name {name!r} on {type(tool).__name__}")
        if name in self._store.tools and not replace:
            raise ToolRegistryError(f"a tool named {name!r} is already registered")
        self._store.tools[name] = tool
        self._store.version += 1
        is_deferred = tool.deferred if deferred is None else deferred
        if is_deferred:
            self._store.deferred.add(name)
        else:
            self._store.deferred.discard(name)

    def register_external(self, tool: Tool, *, deferred: bool = False) -> None:
        """Add a tool from outside (an MCP server): replaces an earlier external tool of the
        same name (a reconnect), but never a built-in."""
        name = tool.name
        if name in self._store.tools and name not in self._store.external:
            raise ToolRegistryError(f"external tool {name!r} would shadow a built-in tool")
        self.register(tool, deferred=deferred, replace=True)
        self._store.external.add(name)

    def unregister(self, name: str) -> None:
        self._store.version += 1
        self._store.tools.pop(name, None)
        self._store.deferred.discard(name)
        self._store.external.discard(name)
        self._discovered.discard(name)

    @property
    def version(self) -> tuple[int, int]:
        """Changes whenever what ``schemas()`` or ``prompt_summary()`` return may change
        (a tool registered or removed, a deferred tool discovered in this view)."""
        return self._store.version, len(self._discovered)

    def shared(self, tag: str, build: Callable[[], T]) -> T:
        """``build()``, computed once for every view that shows the same tools: hundreds of
        subagents with one fence share their schema list instead of each deep-copying every
        tool's JSON schema. Forgotten when the registry changes."""
        store = self._store
        if store.cache_version != store.version:
            store.cache.clear()
            store.cache_version = store.version
        shown = tuple(t.name for t in self.tools()
                      if t.name not in store.deferred or self.is_discovered(t.name))
        key = (tag, shown)
        if key not in store.cache:
            store.cache[key] = build()
        return store.cache[key]

    # --- lookup and fencing ---------------------------------------------------------------

    def get(self, name: str) -> Tool | None:
        """The tool called ``name`` whether or not the fence allows it (gates report that)."""
        return self._store.tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._store.tools

    def is_allowed(self, name: str) -> bool:
        """Whether this view's role fence lets the agent call ``name``."""
        return name in self._store.tools and self._fence.allows(name)

    def names(self) -> list[str]:
        """Allowed tool names, in registration order."""
        return [n for n in self._store.tools if self.is_allowed(n)]

    def tools(self) -> list[Tool]:
        return [self._store.tools[n] for n in self.names()]

    def fenced(
        self, allowed: Iterable[str] | None = None, disallowed: Iterable[str] | None = None
    ) -> ToolRegistry:
        """A view over the same tools (later registrations show up in it too) that allows at
        most ``allowed`` (None: all) minus ``disallowed``, narrowing this view's own fence.
        The view starts with this view's discoveries and keeps its own from then on."""
        fence = self._fence.narrowed(ToolFence.of(allowed, disallowed))
        view = ToolRegistry(_store=self._store, allowed=fence.allowed, disallowed=fence.disallowed)
        view._discovered = set(self._discovered)
        return view

    # --- deferred tools -------------------------------------------------------------------

    def is_deferred(self, name: str) -> bool:
        return name in self._store.deferred

    def is_discovered(self, name: str) -> bool:
        return name in self._discovered

    def discover(self, name: str) -> bool:
        """Mark a deferred tool found, so its schema is sent from now on. False if unknown."""
        if name not in self._store.tools:
            return False
        self._discovered.add(name)
        return True

    def hidden(self) -> list[Tool]:
        """Allowed deferred tools not yet discovered: what ``tool_search`` searches."""
        return [t for t in self.tools() if t.name in self._store.deferred and not self.is_discovered(t.name)]

    def deferred_tools(self) -> list[Tool]:
        return [t for t in self.tools() if t.name in self._store.deferred]

    def search(self, query: str, search_type: str = "keyword") -> list[Tool]:
        """Deferred tools matching ``query``: keyword = every word appears (case-insensitive)
        in the name or description; regex = ``re.search`` in the name or the description."""
        candidates = self.deferred_tools()
        if search_type == "regex":
            rx = re.compile(query, re.IGNORECASE)
            return [t for t in candidates if rx.search(t.name) or rx.search(t.description)]
        if search_type != "keyword":
            raise ValueError(f"search_type must be 'keyword' or 'regex', got {search_type!r}")
        words = [w.lower() for w in query.split()]
        if not words:
            return []
        return [
            t for t in candidates
            if all(w in f"{t.name}\n{t.description}".lower() for w in words)
        ]

    def prompt_summary(self, unlisted: Iterable[str] = ()) -> str:
        """One line per hidden deferred tool, for the system prompt ("" when there are none);
        ``unlisted`` tools are left out of it (tool_search still finds them)."""
        hidden = [t for t in self.hidden() if t.name not in set(unlisted)]
        if not hidden:
            return ""
        lines = [
            "These tools are available but not loaded; call tool_search to load one before use:"
        ]
        # one sentence each: the full description comes with the schema tool_search loads
        lines += [f"- {t.name}: {tool_summary(t.description)}" for t in hidden]
        return "\n".join(lines)

    # --- schemas --------------------------------------------------------------------------

    def schemas(self, *, nodes: Iterable[str] = ()) -> list[dict[str, Any]]:
        """``{name, description, parameters}`` for every allowed tool the model may call now
        (deferred ones once discovered). With ``nodes``, tools that support remote execution
        get an optional ``node`` argument listing them."""
        node_names = sorted(nodes)
        out = []
        for tool in self.tools():
            if tool.name in self._store.deferred and not self.is_discovered(tool.name):
                continue
            params = copy.deepcopy(tool.parameters) if tool.parameters else {}
            params.setdefault("type", "object")
            params.setdefault("properties", {})
            if node_names and getattr(tool, "supports_node", False):
                params["properties"]["node"] = {
                    "type": "string",
                    "enum": node_names,
                    "description": "Run on this configured node instead of locally.",
                }
            out.append({"name": tool.name, "description": tool.description, "parameters": params})
        return out


def tool_classes(module: Any) -> list[type[Tool]]:
    """The tool classes a built-in module offers, in order."""
    declared = getattr(module, "TOOLS", None)
    if declared is not None:
        return list(declared)
    return [
        obj for obj in vars(module).values()
        if isinstance(obj, type) and issubclass(obj, Tool) and obj is not Tool
        and obj.__module__ == module.__name__ and isinstance(obj.__dict__.get("name"), str)
    ]


def default_registry(modules: Iterable[str] = BUILTIN_MODULES) -> ToolRegistry:
    """A registry with every built-in tool from ``modules`` (names under nyzhi.tools.builtin).

    All of them (the default): from the manifest, each module imported at the first use of
    one of its tools (``nyzhi.tools.lazy``). Any other selection: the modules themselves."""
    registry = ToolRegistry()
    if tuple(modules) == BUILTIN_MODULES:
        from nyzhi.tools.builtin.manifest import TOOLS
        from nyzhi.tools.lazy import LazyTool

        store = registry._store

        def loaded(entry: LazyTool, tool: Tool) -> None:
            if store.tools.get(tool.name) is entry:  # unless replaced meanwhile
                store.tools[tool.name] = tool

        for module_name, class_name, fields in TOOLS:
            registry.register(LazyTool(module_name, class_name, fields, loaded))
        return registry
    for mod_name in modules:
        module = importlib.import_module(f"nyzhi.tools.builtin.{mod_name}")
        for cls in tool_classes(module):
            registry.register(cls())
    return registry
