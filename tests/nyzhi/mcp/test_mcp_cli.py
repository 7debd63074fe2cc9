"""`nyz mcp add | list | remove` as a user runs them (real subprocesses, real servers)."""

from __future__ import annotations

import subprocess
import sys
import tomllib

from test_mcp_run_e2e import env_for

NYZ = [sys.executable, "-m", "nyzhi"]


def nyz(ws, home, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*NYZ, *args], cwd=ws, env=env_for(home), capture_output=True,
                          text=True, check=False)


def test_help_does_not_import_the_mcp_sdk(workspace, home):
    code = (
        "import sys\nfrom nyzhi.cli.main import main\n"
        "for argv in (['--help'], ['mcp', '--help'], ['mcp', 'add', '--help']):\n"
        "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
        "print('LOADED' if 'mcp' in sys.modules else 'CLEAN')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=workspace, env=env_for(home),
                          capture_output=True, text=True, check=True)
    assert proc.stdout.strip().endswith("CLEAN")
    assert "mcp add NAME" in proc.stdout and "serve" in proc.stdout


def test_add_list_remove(workspace, home, npm_servers, time_server):
    everything = str(npm_servers["everything"])
    add = nyz(workspace, home, "mcp", "add", "ev", "--", everything)
    assert add.returncode == 0, add.stderr
    add = nyz(workspace, home, "mcp", "add", "tm", "--env", "TZ=UTC", "--", *time_server)
    assert add.returncode == 0, add.stderr
    web = nyz(workspace, home, "mcp", "add", "web", "--scope", "global",
              "--url", "http://127.0.0.1:9/mcp", "--header", "Authorization: Bearer t")
    assert web.returncode == 0, web.stderr
    project = tomllib.loads((workspace / ".nyzhi" / "config.toml").read_text())
    assert project["mcp"]["servers"]["ev"] == {"command": everything, "args": []}
    assert project["mcp"]["servers"]["tm"]["env"] == {"TZ": "UTC"}
    glob = tomllib.loads((home / ".config" / "nyzhi" / "config.toml").read_text())
    assert glob["mcp"]["servers"]["web"] == {
        "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer t"}}

    listed = nyz(workspace, home, "mcp", "list", "--timeout", "20")
    assert listed.returncode == 0, listed.stderr
    rows = {line.split()[0]: line for line in listed.stdout.splitlines()}
    assert "connected" in rows["ev"] and "15 tools" in rows["ev"]  # 13 before nyz offered elicitation
    assert "connected" in rows["tm"] and "2 tools" in rows["tm"]
    assert "failed" in rows["web"] and "127.0.0.1:9" in rows["web"]

    removed = nyz(workspace, home, "mcp", "remove", "web")
    assert removed.returncode == 0 and "config.toml" in removed.stdout
    assert "web" not in (home / ".config" / "nyzhi" / "config.toml").read_text()
    missing = nyz(workspace, home, "mcp", "remove", "web")
    assert missing.returncode == 1 and "no MCP server named 'web'" in missing.stderr


def test_add_rejects_bad_input_and_keeps_the_file(workspace, home):
    config = workspace / ".nyzhi" / "config.toml"
    config.write_text("# my settings\n[agent]\nmax_steps = 7\n")
    before = config.read_text()
    for args, message in [
        (("mcp", "add", "x"), "either --url URL or -- COMMAND"),
        (("mcp", "add", "x", "--url", "http://h", "--", "cmd"), "either --url URL or -- COMMAND"),
        (("mcp", "add", "x", "--url", "http://h", "--header", "novalue"), "expected NAME:VALUE"),
        (("mcp", "add", "bad/name", "--", "cmd"), "invalid server name"),
        (("mcp", "add", "x", "--scope", "global", "cmd"), "put the server command after --"),
    ]:
        proc = nyz(workspace, home, *args)
        assert proc.returncode == 1 and message in proc.stderr, (args, proc.stderr)
    assert config.read_text() == before
    ok = nyz(workspace, home, "mcp", "add", "x", "--", "cmd", "--flag")
    assert ok.returncode == 0, ok.stderr
    text = config.read_text()
    assert text.startswith(before)  # comments and layout kept
    assert tomllib.loads(text)["mcp"]["servers"]["x"] == {"command": "cmd", "args": ["--flag"]}
