"""Special files planted where nyz reads at start-up (``.nyzhi/config.toml``,
``.claude/settings.json``, ``.mcp.json``, ``CLAUDE.md``, ``AGENTS.md``, ``.gitignore``, a
command file) hang nothing: each is opened without blocking and refused in one line when it is
not a regular file. ``nyz run`` is a real subprocess against the fake LLM, bounded by
``fail_after`` (a hang is the bug). The provider is configured in the user's own config, since
the project's may be the planted file."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
import trio

from nyzhi.testing.cli import run_nyz
from nyzhi.testing.fake_llm import open_fake_llm, reply

LIMIT = 30

# where -> (does the run refuse to start, naming the file?)
PLANTS = {
    ".nyzhi/config.toml": True,
    ".nyzhi/config.local.toml": True,
    ".claude/settings.json": False,
    ".mcp.json": True,
    "CLAUDE.md": False,
    "AGENTS.md": False,
    ".gitignore": False,
    ".nyzhi/commands/review.md": False,
}


def user_config(home: Path, url: str) -> None:
    path = home / ".config" / "nyzhi" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'[provider]\ndefault = "fake"\n\n[provider.fake]\napi_style = "openai"\n'
                    f'base_url = "{url}"\nmodel = "fake-model-1"\napi_key = "sk-test-key"\n'
                    "context_window = 128000\n")


def plant(path: Path, kind: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    else:
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        sock.close()


@pytest.mark.parametrize("kind", ["fifo", "socket"])
@pytest.mark.parametrize("where", list(PLANTS))
async def test_a_special_file_at_start_hangs_nothing(workspace, home, where, kind) -> None:
    if kind == "socket" and len(str(workspace / where)) > 100:
        pytest.skip("the path is too long for a unix socket")
    plant(workspace / where, kind)
    async with open_fake_llm(None, script=[reply("answered")] * 2) as server:
        user_config(home, server.url_for("openai"))
        with trio.fail_after(LIMIT):
            proc = await run_nyz(workspace, home, "run", "hi")
    out, err = proc.stdout.decode(), proc.stderr.decode()
    assert "Traceback" not in err
    if PLANTS[where]:
        assert proc.returncode != 0 and out == ""
        [line] = [ln for ln in err.splitlines() if where in ln]
        assert "not a regular file" in line, err
    else:
        assert proc.returncode == 0, err
        assert out.strip() == "answered"
        if where != ".gitignore":  # refused in one line naming the file, then ignored
            [line] = [ln for ln in err.splitlines() if where in ln]
            assert "not a regular file" in line


async def test_control_regular_files_there_are_read(workspace, home) -> None:
    (workspace / "AGENTS.md").write_text("Always answer in French.\n")
    (workspace / ".gitignore").write_text("*.log\n")
    async with open_fake_llm(None, script=[reply("answered")]) as server:
        user_config(home, server.url_for("openai"))
        with trio.fail_after(LIMIT):
            proc = await run_nyz(workspace, home, "run", "hi")
    assert proc.returncode == 0, proc.stderr.decode()
    assert "Always answer in French." in server.requests[0].system_text() + str(
        server.requests[0].json)
