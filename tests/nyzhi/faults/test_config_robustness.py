"""Hostile configuration files get one line naming the file and key, never a traceback.

Each vector is written into a real file and driven through the real CLI (``nyz config show``,
``nyz mcp list``, ``nyz config set``, ``nyz run``): nesting deep enough to exhaust Python's
recursion (or just past the limit), bytes that are not UTF-8, numbers Python will not convert,
and values that parse but make no sense (``-5`` steps, ``nan``, ``10**30``).
"""

from __future__ import annotations

import pytest
import trio

from nyzhi.testing.cli import run_nyz
from nyzhi.testing.fake_llm import open_fake_llm, reply

DEEP = 5000  # past Python's recursion limit
JUST = 65  # one past nyz's limit: parses, but the schema, merge and render would all recurse
HUGE_DIGITS = "9" * 5000  # more digits than Python converts to an int


def _deep_toml_array(depth: int) -> str:
    return "[agent]\nmax_steps = 5\n[mcp.servers.x]\ncommand = \"a\"\nargs = " \
        + "[" * depth + "]" * depth + "\n"


def _deep_toml_table(depth: int) -> str:
    return "[agent]\nweird = " + "{a = " * depth + "1" + "}" * depth + "\n"


CONFIG_VECTORS = {  # name: (config.toml text or bytes, the key the error must name)
    "deep array": (_deep_toml_array(DEEP), "mcp.servers.x.args[0][0]"),
    "deep array just past the limit": (_deep_toml_array(JUST), "mcp.servers.x.args[0][0]"),
    "deep inline table": (_deep_toml_table(DEEP), "agent.weird.a.a"),
    "deep top-level array": ("a = " + "[" * DEEP + "]" * DEEP + "\n", "a[0][0]"),
    "binary": (b"\x00\xff\xfe\x80 binary \xc3\x28" * 40, "(file)"),
    "negative steps": ("[agent]\nmax_steps = -5\n", "agent.max_steps"),
    "zero steps": ("[agent]\nmax_steps = 0\n", "agent.max_steps"),
    "huge steps": ("[agent]\nmax_steps = 1000000000000000000000000000000\n",
                   "agent.max_steps"),
    "steps beyond int conversion": (f"[agent]\nmax_steps = {HUGE_DIGITS}\n", "agent.max_steps"),
    "nan ratio": ("[agent]\nauto_compact_threshold = nan\n", "agent.auto_compact_threshold"),
    "inf ratio": ("[agent]\nauto_compact_threshold = inf\n", "agent.auto_compact_threshold"),
    "ratio over one": ("[agent]\nauto_compact_threshold = 1.5\n",
                       "agent.auto_compact_threshold"),
    "negative backoff": ("[agent.retry]\ninitial_backoff_ms = -1\n",
                         "agent.retry.initial_backoff_ms"),
    "nan budget": ("[agent.agents.budget]\nusd = nan\n", "agent.agents.budget.usd"),
    "negative budget": ("[agent.agents.budget]\ntokens = -100\n", "agent.agents.budget.tokens"),
    "port out of range": ('[[nodes]]\nname = "n"\nhost = "h"\nport = 70000\n', "nodes[0].port"),
    "negative timeout": ("[mcp]\nstartup_timeout = -inf\n", "mcp.startup_timeout"),
    "nan provider timeout": ('[provider.fake]\ntimeout = nan\n', "provider.fake.timeout"),
}


def _check_one_line(proc, file, key: str | None) -> str:
    err = proc.stderr.decode()
    assert proc.returncode == 1, (proc.returncode, err[-500:])
    assert "Traceback" not in err and "Error:" not in err, err[-2000:]
    [line] = err.strip().splitlines()
    assert str(file) in line, line
    if key is not None:
        assert f": {key}" in line, line
    assert len(line) < 400, line
    return line


def _write(path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data)
    else:
        path.write_bytes(data)


@pytest.mark.parametrize("name", sorted(CONFIG_VECTORS))
async def test_a_hostile_config_toml_is_one_line_naming_file_and_key(workspace, home, name):
    data, key = CONFIG_VECTORS[name]
    config = workspace / ".nyzhi" / "config.toml"
    _write(config, data)
    for command in (("config", "show"), ("mcp", "list", "--timeout", "5"),
                    ("config", "set", "--project", "agent.enforce_todos", "true"), ("run", "hi")):
        proc = await run_nyz(workspace, home, *command)
        _check_one_line(proc, config, key)


@pytest.mark.parametrize("layer", ["global", "local"])
async def test_the_other_layers_are_named_too(workspace, home, layer):
    config = (home / ".config" / "nyzhi" / "config.toml" if layer == "global"
              else workspace / ".nyzhi" / "config.local.toml")
    _write(config, _deep_toml_table(DEEP))
    proc = await run_nyz(workspace, home, "config", "show")
    _check_one_line(proc, config, "agent.weird.a.a")
    _write(config, "[agent]\nmax_steps = -5\n")
    proc = await run_nyz(workspace, home, "config", "show")
    _check_one_line(proc, config, "agent.max_steps")


MCP_JSON_VECTORS = {
    "deep args": ('{"mcpServers": {"x": {"command": "a", "args": '
                  + "[" * DEEP + "]" * DEEP + "}}}", "mcpServers.x.args[0][0]"),
    "deep just past the limit": ('{"mcpServers": {"x": {"command": "a", "env": '
                                 + '{"k": ' * JUST + '"v"' + "}" * JUST + "}}}",
                                 "mcpServers.x.env.k.k"),
    "deep root": ("[" * DEEP + "]" * DEEP, "[0][0]"),
    "binary": (bytes(range(256)) * 4, "(file)"),
    "utf-16": ('{"mcpServers": {}}'.encode("utf-16"), "(file)"),
    "number beyond int conversion": ('{"mcpServers": {"x": {"command": "a", "env": {"N": '
                                     + HUGE_DIGITS + "}}}}", "mcpServers.x.env.N"),
}


@pytest.mark.parametrize("name", sorted(MCP_JSON_VECTORS))
async def test_a_hostile_mcp_json_is_one_line_naming_file_and_key(workspace, home, name):
    data, key = MCP_JSON_VECTORS[name]
    mcp_json = workspace / ".mcp.json"
    _write(mcp_json, data)
    for command in (("mcp", "list", "--timeout", "5"), ("run", "hi")):
        proc = await run_nyz(workspace, home, *command)
        _check_one_line(proc, mcp_json, key)


SETTINGS_VECTORS = {
    "deep hooks": ('{"hooks": ' + '{"a": ' * DEEP + "1" + "}" * DEEP + "}", "hooks.a.a"),
    "deep just past the limit": ('{"hooks": {"PreToolUse": ' + "[" * JUST + "]" * JUST + "}}",
                                 "hooks.PreToolUse[0][0]"),
    "binary": (b"\xff\xd8\xff\xe0 JFIF \x00\x10" * 20, "(file)"),
    "number beyond int conversion": ('{"hooks": {"Stop": [{"hooks": [{"command": "x", '
                                     '"timeout": ' + HUGE_DIGITS + "}]}]}}", None),
}


@pytest.mark.parametrize("name", sorted(SETTINGS_VECTORS))
@pytest.mark.parametrize("file", ["settings.json", "settings.local.json"])
async def test_a_hostile_claude_settings_file_is_a_one_line_notice_and_the_run_goes_on(
        workspace, home, configure, name, file):
    """A Claude settings file's hooks are ignored with a notice when it cannot be used (as
    they are for invalid JSON): one line naming the file and key, and the run still runs."""
    data, key = SETTINGS_VECTORS[name]
    settings = workspace / ".claude" / file
    _write(settings, data)
    async with open_fake_llm(script=[reply("RAN-ANYWAY")]) as server:
        configure(workspace, server.url_for("openai"))
        with trio.fail_after(60):
            proc = await run_nyz(workspace, home, "run", "hi")
    err = proc.stderr.decode()
    assert proc.returncode == 0, err[-2000:]
    assert b"RAN-ANYWAY" in proc.stdout
    assert "Traceback" not in err and "Error:" not in err, err[-2000:]
    lines = [line for line in err.splitlines() if str(settings) in line]
    assert len(lines) == 1 and "its hooks and permission rules are ignored" in lines[0], err
    if key is not None:
        assert f": {key}" in lines[0], lines[0]
    assert len(lines[0]) < 400
