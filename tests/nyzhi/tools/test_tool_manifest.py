"""The built-in tools' manifest (``nyzhi.tools.lazy``): what the model is shown comes from it
without importing the tools' modules, it says exactly what the classes say, and a tool from
it runs as the tool itself does."""

from __future__ import annotations

import subprocess
import sys

from nyzhi.tools.lazy import LazyTool, builtin_entries, manifest_text
from nyzhi.tools.registry import BUILTIN_MODULES, default_registry


def test_the_manifest_is_what_the_classes_say():
    """Fails when a tool's name, description, parameters or flags changed without the
    manifest: run ``python -m nyzhi.tools.lazy`` and commit nyzhi/tools/builtin/manifest.py."""
    from nyzhi.tools.builtin import manifest

    assert list(manifest.TOOLS) == builtin_entries(BUILTIN_MODULES), (
        "nyzhi/tools/builtin/manifest.py is stale: run `python -m nyzhi.tools.lazy`")
    with open(manifest.__file__, encoding="utf-8") as fh:
        assert fh.read() == manifest_text()


def test_the_registry_shows_every_tool_without_importing_one():
    code = (
        "import sys\n"
        "from nyzhi.tools.registry import default_registry\n"
        "r = default_registry()\n"
        "schemas = r.schemas(); summary = r.prompt_summary()\n"
        "flags = [(t.permission, t.writes_files, t.deferred) for t in r.tools()]\n"
        "print(len(schemas), sorted(m for m in sys.modules\n"
        "      if m.startswith('nyzhi.tools.builtin.') and m != 'nyzhi.tools.builtin.manifest'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split(" ", 1)
    assert int(out[0]) > 30
    assert out[1].strip() == "[]"


def test_a_tool_from_the_manifest_is_its_class_at_first_use(tmp_path):
    registry = default_registry()
    tool = registry.get("multi_edit")
    assert isinstance(tool, LazyTool)
    from nyzhi.tools.builtin.files_write import MultiEditTool

    # what the gates ask before the call: the class's own answer, through the real tool
    args = {"file_path": "a.py", "edits": []}
    assert tool.target_paths(args) == MultiEditTool().target_paths(args)
    assert isinstance(tool.load(), MultiEditTool) and tool.load() is tool.load()
    # an attribute the manifest does not hold (a method of the class) comes from the tool
    assert tool.plan.__func__ is MultiEditTool.plan
    # once loaded, the registry (and every view of it) holds the tool itself
    assert registry.get("multi_edit") is tool.load()
    assert registry.fenced(allowed={"multi_edit"}).get("multi_edit") is tool.load()


def test_what_was_set_on_an_entry_is_set_on_its_tool():
    """The runtime appends the roles to ``spawn_agent``'s description before any call."""
    registry = default_registry()
    entry = registry.get("spawn_agent")
    entry.description = entry.base_description + "\n\nRoles:\n- worker"
    tool = entry.load()
    assert type(tool).__name__ == "SpawnAgentTool"
    assert tool.description.endswith("Roles:\n- worker")
    assert registry.get("spawn_agent") is tool
    assert [s["description"] for s in registry.schemas() if s["name"] == "spawn_agent"] == [
        tool.description]
