"""What the model is told about each built-in tool: enough to choose and call it well.

Every tool says what it is for, when another tool fits better and where its limits are (at
least two sentences), and every parameter, nested ones included, is described. The formats
models get wrong carry an example.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from nyzhi.tools.registry import default_registry

SCHEMAS = {s["name"]: s for s in default_registry().schemas()}


def sentences(text: str) -> list[str]:
    return [p for p in re.split(r"(?<=[.!?])\s+", text.strip()) if len(p.split()) >= 3]


def undescribed(schema: dict[str, Any], where: str = "") -> list[str]:
    """Paths of the properties, at any depth, that have no description."""
    missing = []
    for name, prop in (schema.get("properties") or {}).items():
        path = f"{where}{name}"
        if not str(prop.get("description", "")).strip():
            missing.append(path)
        missing += undescribed(prop, f"{path}.")
        items = prop.get("items")
        if isinstance(items, dict):
            missing += undescribed(items, f"{path}[].")
    return missing


def test_every_builtin_tool_is_covered():
    assert len(SCHEMAS) >= 31 and {"read", "edit", "apply_patch", "bash", "verify"} <= set(SCHEMAS)


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_description_has_at_least_two_sentences(name):
    description = SCHEMAS[name]["description"]
    assert len(sentences(description)) >= 2, description


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_every_parameter_is_described(name):
    assert undescribed(SCHEMAS[name]["parameters"]) == []


def test_undescribed_finds_nested_gaps():
    schema = {"properties": {"a": {"type": "array", "description": "x", "items": {
        "type": "object", "properties": {"b": {"type": "string"}}}}}}
    assert undescribed(schema) == ["a[].b"]


def test_tools_point_to_the_better_tool():
    d = {name: s["description"] for name, s in SCHEMAS.items()}
    assert "glob" in d["grep"] and "grep" in d["glob"]  # contents vs names
    assert "edit" in d["write"] and "multi_edit" in d["edit"] and "write" in d["edit"]
    assert "tail_file" in d["read"] and "grep" in d["read"]
    assert "read" in d["bash"] and "timeout" in d["bash"]


def test_examples_for_the_formats_models_get_wrong():
    patch = SCHEMAS["apply_patch"]["description"]
    assert "--- a/app.py\n+++ b/app.py\n@@ -3,2 +3,2 @@\n def main():\n-    run(1)\n+    run(2)" in patch
    assert "/dev/null" in patch
    multi = SCHEMAS["multi_edit"]["description"]
    assert '{"edits": [{"file": "src/a.py", "replacements": [{"old": "x = 1", "new": "x = 2"}]}]}' in multi
    assert "'**/*.py'" in SCHEMAS["glob"]["description"]
    assert "include '*.py'" in SCHEMAS["grep"]["description"]


def test_limits_are_stated_and_match_the_code():
    from nyzhi.tools.builtin import bash, files_read, search, web

    assert f"{search.MAX_GREP_MATCHES} matches" in SCHEMAS["grep"]["description"]
    assert f"{search.MAX_GLOB_RESULTS} paths" in SCHEMAS["glob"]["description"]
    assert f"{bash.DEFAULT_TIMEOUT} s" in SCHEMAS["bash"]["description"]
    assert f"{bash.MAX_TIMEOUT} s" in SCHEMAS["bash"]["description"]
    assert f"{files_read.MAX_LINE_CHARS} characters" in SCHEMAS["read"]["description"]
    assert f"{files_read.MAX_LIST_ENTRIES} entries" in SCHEMAS["list_dir"]["description"]
    assert f"{web.MAX_DOWNLOAD_BYTES // (1024 * 1024)} MB" in SCHEMAS["web_fetch"]["description"]
    assert f"{int(web.TIMEOUT_S)} s" in SCHEMAS["web_fetch"]["description"]
