"""The official ACP client for the tests: the TypeScript SDK from npm, in ``<venv>/node_modules``.

``make test`` installs it there (as it does the npm MCP servers); when it is missing and npm
exists, the first test that needs it installs it. Tests skip, saying why, only when node or
npm is absent. ``acp_client.mjs`` is the scripted editor; ``AcpClient`` runs one scenario of
it against ``nyz acp`` (a real subprocess, the fake LLM behind it) and reads what it saw.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from nyzhi.testing.cli import NYZ, nyz_env

SDK_PACKAGE = "@agentclientprotocol/sdk@2.4.0"
NODE_PREFIX = Path(sys.prefix)
SDK_ENTRY = NODE_PREFIX / "node_modules" / "@agentclientprotocol" / "sdk" / "dist" / "v1" / \
    "stable" / "acp.js"
SCRIPT = Path(__file__).with_name("acp_client.mjs")


@pytest.fixture(scope="session")
def acp_sdk() -> Path:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed, so the official ACP client (npm) cannot run")
    if not SDK_ENTRY.exists():
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("npm is not installed, so the official ACP client cannot be installed")
        subprocess.run(
            [npm, "install", "--prefix", str(NODE_PREFIX), "--no-audit", "--no-fund",
             "--loglevel=error", SDK_PACKAGE],
            check=True, capture_output=True,
        )
    return SDK_ENTRY


class AcpClient:
    """One run of a scenario of the scripted editor, its steps read as they come."""

    def __init__(self, proc: trio.Process) -> None:
        self.proc = proc
        self.buffer = bytearray()
        self.steps: list[dict[str, Any]] = []

    async def step(self, name: str) -> dict[str, Any]:
        """Read until the script reports ``name`` (it fails the test on a ``failed`` step)."""
        with trio.fail_after(60):
            while True:
                while b"\n" in self.buffer:
                    end = self.buffer.index(b"\n")
                    line = bytes(self.buffer[:end])
                    del self.buffer[: end + 1]
                    found = json.loads(line)
                    self.steps.append(found)
                    assert found["step"] != "failed", found
                    if found["step"] == name:
                        return found
                chunk = await self.proc.stdout.receive_some(65536)
                if not chunk:
                    raise AssertionError(f"the client ended before {name!r}: {self.steps}")
                self.buffer += chunk

    async def go_on(self) -> None:
        await self.proc.stdin.send_all(b"go\n")


@pytest.fixture
def acp_client(acp_sdk, workspace, home):
    """``async with acp_client("basic") as client:`` runs that scenario in the workspace."""
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def run(scenario: str):
        env = {**nyz_env(home), "ACP_SDK": str(acp_sdk),
               "ACP_AGENT": json.dumps([*NYZ, "acp"])}
        proc = await trio.lowlevel.open_process(
            ["node", str(SCRIPT), scenario, str(workspace)], cwd=workspace, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        client = AcpClient(proc)
        try:
            yield client
            with trio.fail_after(60):
                assert await proc.wait() == 0, client.steps
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()

    return run
