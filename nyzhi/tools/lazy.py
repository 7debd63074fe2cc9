"""Built-in tools known by what the model is shown, their modules imported at first use.

Before its first request ``nyz run`` needs every tool's name, description, parameters and
flags (the request carries them), but none of the code that runs a tool. The 18 modules that
hold the tools (``nyzhi.tools.builtin``) cost ~5 ms of that start-up. So the default
registry holds a ``LazyTool`` per built-in tool, made from the manifest
(``nyzhi.tools.builtin.manifest``, generated from the classes), and the tool's module is
imported, and the tool made, when anything else of it is asked for: ``run``, ``preview``,
``target_paths`` or any attribute the manifest does not hold.

The manifest is generated, never edited: ``python -m nyzhi.tools.lazy`` rewrites
it from the classes, and ``tests/nyzhi/tools/test_tool_manifest.py`` fails while it is stale.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from typing import Any

from nyzhi.tools.base import Permission, Tool, ToolContext, ToolResult


class LazyTool(Tool):
    """A built-in tool: its manifest entry now, the tool itself at first use."""

    def __init__(self, module: str, class_name: str, fields: dict[str, Any],
                 loaded: Callable[[LazyTool, Tool], None] | None = None) -> None:
        for key, value in fields.items():
            setattr(self, key, Permission(value) if key == "permission" else value)
        self._fields = fields
        self._source = (module, class_name)
        self._tool: Tool | None = None
        self._loaded = loaded

    def load(self) -> Tool:
        """The tool itself (its module imported the first time). What was set on this entry
        since (``spawn_agent``'s description with the roles) is set on the tool too, and
        ``loaded`` (the registry) puts the tool in this entry's place: from then on a lookup
        gets the tool itself, with nothing in between."""
        tool = self._tool
        if tool is None:
            module, class_name = self._source
            cls = getattr(importlib.import_module(module), class_name)
            tool = self._tool = cls()
            for key, value in vars(self).items():
                known = self._fields.get(key, self)
                if key.startswith("_") or value is known or (
                        key == "permission" and value.value == known):
                    continue
                setattr(tool, key, value)
            if self._loaded is not None:
                self._loaded(self, tool)
        return tool

    def __getattr__(self, name: str) -> Any:  # only for what the manifest does not hold
        if name.startswith("__") or name in ("_tool", "_source", "_fields", "_loaded"):
            raise AttributeError(name)
        return getattr(self.load(), name)

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await self.load().run(args, ctx)

    def target_paths(self, args: dict[str, Any]) -> list[str]:
        return self.load().target_paths(args)

    async def preview(self, args: dict[str, Any], ctx: ToolContext) -> str:
        return await self.load().preview(args, ctx)

    def __repr__(self) -> str:
        return f"<LazyTool {self.name} of {self._source[0]}>"


def manifest_fields(tool: Tool) -> dict[str, Any]:
    """What the manifest keeps of a tool: every public attribute that is not a method (the
    ones the registry, the gates and the prompt read before a call), as Python literals."""
    fields: dict[str, Any] = {}
    for key in dir(tool):
        if key.startswith("_"):
            continue
        value = getattr(tool, key)
        if callable(value):
            continue
        fields[key] = _plain(value)
    return fields


def _plain(value: Any) -> Any:
    """``value`` with enum members (``TaskStatus.PENDING`` in a schema's ``enum``) as their
    values: the literal the manifest can hold, and what the JSON sent to the model says."""
    import enum

    if isinstance(value, enum.Enum):
        return _plain(value.value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    return value


def builtin_entries(modules: Iterator[str] | tuple[str, ...]) -> list[tuple[str, str, dict]]:
    """``(module, class name, fields)`` of every built-in tool of ``modules``, in order, read
    from the classes themselves (what the manifest is generated from)."""
    from nyzhi.tools.registry import tool_classes

    entries = []
    for name in modules:
        module = importlib.import_module(f"nyzhi.tools.builtin.{name}")
        for cls in tool_classes(module):
            entries.append((cls.__module__, cls.__name__, manifest_fields(cls())))
    return entries


HEADER = '''"""What the model is shown of every built-in tool, for ``nyzhi.tools.lazy``. Generated from
the tool classes by ``python -m nyzhi.tools.lazy``: never edit it by hand
(``tests/nyzhi/tools/test_tool_manifest.py`` fails while it differs from the classes)."""

# fmt: off
TOOLS: tuple = '''


def manifest_text() -> str:
    """The manifest module's text, generated from the classes."""
    import pprint

    from nyzhi.tools.registry import BUILTIN_MODULES

    entries = tuple(builtin_entries(BUILTIN_MODULES))
    return HEADER + pprint.pformat(entries, width=96, sort_dicts=False) + "\n"


def _write() -> int:
    """``python -m nyzhi.tools.lazy``: rewrite ``nyzhi/tools/builtin/manifest.py``."""
    from pathlib import Path

    import nyzhi.tools.builtin as package

    path = Path(package.__file__).with_name("manifest.py")
    path.write_text(manifest_text(), encoding="utf-8")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    from nyzhi.tools.lazy import _write as write  # the module's own copy

    raise SystemExit(write())
