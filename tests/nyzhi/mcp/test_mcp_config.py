"""MCP server declarations: [mcp] in config, .mcp.json with ${VAR}, and the trust record."""

from __future__ import annotations

import json

import pytest

from nyzhi.config import load_config
from nyzhi.config.errors import ConfigError
from nyzhi.config.mcp_sources import declared_servers, read_mcp_json
from nyzhi.config.schema import McpHttpServer, McpStdioServer
from nyzhi.core.runtime.mcp.trust import TrustStore


def test_config_servers_and_mcp_section(env):
    env.write(env.project_config, """
[mcp]
defer_threshold = 3
startup_timeout = 7.5

[mcp.servers.git]
command = "mcp-server-git"
args = ["--repository", "."]
env = { GIT_X = "1" }
cwd = "/tmp"
allow_tools = ["mcp__git__git_status"]

[mcp.servers.web]
url = "http://127.0.0.1:9/mcp"
headers = { Authorization = "Bearer t" }
""")
    config = load_config(env.project).config
    assert config.mcp.defer_threshold == 3 and config.mcp.startup_timeout == 7.5
    git = config.mcp.servers["git"]
    assert git == McpStdioServer("mcp-server-git", ("--repository", "."), {"GIT_X": "1"}, "/tmp",
                                 ("mcp__git__git_status",))
    assert config.mcp.servers["web"] == McpHttpServer("http://127.0.0.1:9/mcp",
                                                      {"Authorization": "Bearer t"})


def test_config_defaults_and_bad_server(env):
    assert load_config(env.project).config.mcp.defer_threshold == 15
    env.write(env.project_config, "[mcp.servers.x]\nargs = []\n")
    with pytest.raises(ConfigError) as info:
        load_config(env.project)
    text = str(info.value)
    assert "mcp.servers.x" in text and '"command"' in text and str(env.project_config) in text


def test_mcp_json_expands_variables(tmp_path):
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "files": {"command": "${TOOLS}/fs", "args": ["${ROOT:-/srv}", "x"],
                  "env": {"KEY": "${KEY}"}},
        "api": {"type": "http", "url": "https://${HOST}/mcp",
                "headers": {"Authorization": "Bearer ${TOKEN}"}},
    }}))
    env = {"TOOLS": "/opt", "KEY": "k1", "HOST": "example.com", "TOKEN": "t0"}
    files, api = read_mcp_json(tmp_path, env)
    assert files.server == McpStdioServer("/opt/fs", ("/srv", "x"), {"KEY": "k1"})
    assert files.source == "mcp.json" and files.needs_trust
    assert api.server == McpHttpServer("https://example.com/mcp", {"Authorization": "Bearer t0"})


def test_mcp_json_errors_name_file_key_and_fix(tmp_path):
    path = tmp_path / ".mcp.json"
    path.write_text(json.dumps({"mcpServers": {
        "a": {"command": "x", "env": {"K": "${UNSET_VAR}"}},
        "b": {"type": "sse", "url": "http://x"},
        "c": {"args": ["no command"]},
    }}))
    with pytest.raises(ConfigError) as info:
        read_mcp_json(tmp_path, {})
    text = str(info.value)
    assert str(path) in text
    assert "mcpServers.a" in text and "UNSET_VAR" in text and "${UNSET_VAR:-default}" in text
    assert "mcpServers.b.type" in text and "streamable http" in text
    assert "mcpServers.c" in text and '"command"' in text
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="valid JSON"):
        read_mcp_json(tmp_path, {})


def test_config_server_wins_over_mcp_json(env):
    env.write(env.project_config, '[mcp.servers.git]\ncommand = "from-config"\n')
    (env.project / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "git": {"command": "from-json"}, "other": {"command": "o"}}}))
    loaded = load_config(env.project)
    entries = declared_servers(loaded.config, loaded.workspace.root, {})
    assert [(e.name, e.source, e.server.command) for e in entries] == [
        ("git", "config", "from-config"), ("other", "mcp.json", "o")]


def test_trust_record_covers_the_exact_definition(tmp_path, home):
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"s": {"command": "a"}}}))
    [entry] = read_mcp_json(tmp_path, {})
    store = TrustStore(tmp_path)
    assert not store.is_trusted(entry)
    store.record(entry)
    assert TrustStore(tmp_path).is_trusted(entry)
    assert (store.path.stat().st_mode & 0o777) == 0o600
    # the one record of approvals of project configuration, under XDG state
    assert store.path == home / ".local" / "state" / "nyzhi" / "approvals.json"
    # the file now names another command: ask again
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"s": {"command": "b"}}}))
    [changed] = read_mcp_json(tmp_path, {})
    assert not store.is_trusted(changed)
