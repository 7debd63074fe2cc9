"""``mcpServers`` inside a plugin's ``.claude-plugin/plugin.json`` (issue 52), as Claude Code
documents it: an object of servers, or the path of a file shaped as ``.mcp.json``; with
``${CLAUDE_PLUGIN_ROOT}`` expanded, under the same digest approval as ``.mcp.json``. A real
MCP server (the project's helper server), the real runtime."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
import trio

from nyzhi.config.plugins import plugins_dir
from nyzhi.core.runtime.plugins import store
from nyzhi.core.runtime.plugins.manifest import PluginError, read_plugin
from nyzhi.core.runtime.plugins.parts import plugin_hooks, plugin_servers
from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call

HELPER = Path(__file__).parents[2] / "mcp" / "helper_server.py"
SERVER = {"command": sys.executable, "args": ["${CLAUDE_PLUGIN_ROOT}/bin/server.py"]}


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def marketplace(tmp_path: Path, mcp: object, extra: dict[str, str] | None = None) -> None:
    market = tmp_path / "market"
    root = market / "plugins" / "srv"
    write(root / ".claude-plugin" / "plugin.json",
          json.dumps({"name": "srv", "version": "1.0.0", "mcpServers": mcp}))
    (root / "bin").mkdir(parents=True)
    shutil.copy(HELPER, root / "bin" / "server.py")
    for rel, text in (extra or {}).items():
        write(root / rel, text)
    write(market / ".claude-plugin" / "marketplace.json", json.dumps({
        "name": "acme", "owner": {"name": "A"},
        "plugins": [{"name": "srv", "source": "./plugins/srv"}]}))
    store.marketplace_add(str(market))


async def test_inline_mcp_servers_run_once_approved(tmp_path, workspace, configure):
    marketplace(tmp_path, {"inline": SERVER})
    store.install("srv@acme")  # not approved: nothing runs, one notice says so
    entries, _ = plugin_servers(workspace, dict(os.environ), set())
    assert entries == []
    _specs, notes = plugin_hooks(workspace)
    assert any("srv@acme" in n and "MCP servers are not used" in n for n in notes)
    assert not any("not read" in n for n in notes)
    store.approve("srv@acme")
    entries, notes = plugin_servers(workspace, dict(os.environ), set())
    root = plugins_dir() / "installed" / "acme" / "srv"
    assert [e.name for e in entries] == ["inline"] and notes == []
    assert entries[0].server.args == (f"{root}/bin/server.py",)  # ${CLAUDE_PLUGIN_ROOT}
    script = [reply(tool_calls=[tool_call("mcp__inline__echo", {"text": "from plugin.json"})]),
              reply("done")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full")) as rt:
            await rt.mcp.wait_started(60)
            await (await rt.submit("go")).wait()
            with trio.fail_after(60):
                await server.wait_for_requests(2)
    assert server.requests[1].tool_results()[-1] == "from plugin.json"
    # an edit of plugin.json's servers changes the digest: asked again
    manifest = root / ".claude-plugin" / "plugin.json"
    manifest.write_text(json.dumps({"name": "srv", "mcpServers": {
        "inline": {**SERVER, "args": ["-c", "print('other')"]}}}))
    assert plugin_servers(workspace, dict(os.environ), set())[0] == []


def test_mcp_servers_as_a_path_and_with_mcp_json(tmp_path, workspace):
    marketplace(tmp_path, "./config/servers.json", {
        "config/servers.json": json.dumps({"mcpServers": {"pathed": SERVER,
                                                          "both": SERVER}}),
        ".mcp.json": json.dumps({"mcpServers": {"plain": SERVER, "both": {
            "command": "from-mcp-json"}}})})
    store.install("srv@acme", approve=True)
    entries, notes = plugin_servers(workspace, dict(os.environ), {"plain"})
    by_name = {e.name: e for e in entries}
    assert notes == [] and sorted(by_name) == ["both", "pathed"]  # "plain" taken by config
    assert by_name["both"].server.command == sys.executable  # plugin.json's wins
    runs = read_plugin(plugins_dir() / "installed" / "acme" / "srv").runs()
    assert any(line.startswith("MCP server pathed:") for line in runs)


@pytest.mark.parametrize("declared, why", [
    ("../outside.json", "leaves the plugin"),
    ("/etc/passwd", "leaves the plugin"),
    ("commands/servers.json", "approval does not cover"),
    ("linked/servers.json", "approval covers"),
])
def test_a_servers_path_outside_the_digest_is_one_line(tmp_path, declared, why):
    root = tmp_path / "p"
    write(root / ".claude-plugin" / "plugin.json", json.dumps({"mcpServers": declared}))
    write(root / "commands" / "servers.json", json.dumps({"mcpServers": {"x": SERVER}}))
    write(tmp_path / "elsewhere" / "servers.json", json.dumps({"mcpServers": {"x": SERVER}}))
    os.symlink(tmp_path / "elsewhere", root / "linked")
    with pytest.raises(PluginError) as exc:
        read_plugin(root, "p")
    assert "plugin.json: mcpServers" in str(exc.value) and why in str(exc.value)
    assert "\n" not in str(exc.value)
