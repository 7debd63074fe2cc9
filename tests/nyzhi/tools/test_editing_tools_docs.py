"""docs/editing-tools.md documents the four tools' names and parameters, which are user
contracts: every parameter a tool takes is in its table, and the tables name no other."""

from __future__ import annotations

import re
from pathlib import Path

from nyzhi.tools.registry import default_registry

DOC = Path(__file__).resolve().parents[3] / "docs" / "editing-tools.md"
TOOLS = ("ast_search", "batch_apply", "instrument", "remove_instrumentation")


def documented() -> dict[str, set[str]]:
    """Parameter names per tool: the first column of the table under each tool's heading,
    and for remove_instrumentation (documented in prose) the backquoted names it takes."""
    out: dict[str, set[str]] = {}
    current: list[str] = []
    for line in DOC.read_text().splitlines():
        if line.startswith("## "):
            current = [t for t in TOOLS if f"`{t}`" in line]
            for t in current:
                out.setdefault(t, set())
        elif line.startswith("| `") and current:
            first = line.split("|")[1]
            names = set(re.findall(r"`([a-z_]+)`", first))
            out[current[0]] |= names
        elif current == ["instrument", "remove_instrumentation"] and "takes `path`" in line:
            out["remove_instrumentation"] |= {"path", "id"}
    return out


def test_every_parameter_is_documented_and_nothing_else():
    registry = default_registry()
    docs = documented()
    for name in TOOLS:
        tool = registry.get(name)
        assert tool is not None and registry.is_deferred(name), name
        assert docs[name] == set(tool.parameters["properties"]), name
