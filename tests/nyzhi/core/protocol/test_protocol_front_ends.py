"""One session protocol behind every front end (issue 50): a mode change asked from ACP, typed
as ``/trust`` in the console or sent as ``set_trust`` from the web page is the same op,
applied in one place, so each fires the same ``config_change`` hook; leaving plan mode from
ACP sends the execute-plan message ``/plan`` sends; and the console's ``ctx`` is the figure
``/context`` gives. Each front end is the real process (``nyz acp``, the console in tmux,
``nyz serve``) on the fake LLM."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio

from nyzhi.knowledge.plans import plan_path
from nyzhi.testing.cli import NYZ, nyz_env
from nyzhi.testing.fake_llm import open_fake_llm, reply
from nyzhi.testing.tmux import INPUT_READY, TmuxPane, open_console, say
from nyzhi.testing.web import serve_nyz

EXECUTE = "Plan mode is off. Execute the plan in"


def hook_config(log: Path) -> str:
    return ('[[agent.hooks]]\nevent = "config_change"\n'
            f'command = {json.dumps(f"(cat; echo) >> {log}")}\n')


async def changes(log: Path, count: int) -> list[dict[str, Any]]:
    """The hook's payloads once ``count`` have been written (hooks run in the background)."""
    def read() -> list[str]:
        return [ln for ln in (log.read_text().splitlines() if log.exists() else ())
                if ln.strip()]

    with trio.fail_after(30):
        while True:
            lines = await trio.to_thread.run_sync(read)
            if len(lines) >= count:
                return [{k: v for k, v in json.loads(ln).items() if k != "session_id"}
                        for ln in lines]
            await trio.sleep(0.05)  # polling a file another process writes, not a wait on time


class Acp:
    """Just enough of an ACP client: requests out, responses and updates in."""

    def __init__(self, proc: trio.Process) -> None:
        self.proc, self.buffer, self.next_id = proc, bytearray(), 0
        self.updates: list[dict[str, Any]] = []

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        await self.proc.stdin.send_all(json.dumps(
            {"jsonrpc": "2.0", "id": self.next_id, "method": method,
             "params": params}).encode() + b"\n")
        return await self.until(lambda m: m.get("id") == self.next_id and "method" not in m)

    async def until(self, done: Any) -> dict[str, Any]:
        with trio.fail_after(60):
            while True:
                while b"\n" not in self.buffer:
                    chunk = await self.proc.stdout.receive_some(65536)
                    assert chunk, "nyz acp closed stdout"
                    self.buffer += chunk
                end = self.buffer.index(b"\n")
                message = json.loads(bytes(self.buffer[:end]))
                del self.buffer[: end + 1]
                if message.get("method") == "session/update":
                    self.updates.append(message["params"]["update"])
                if done(message):
                    return message

    async def close(self) -> None:
        await self.proc.stdin.aclose()
        with trio.fail_after(30):
            assert await self.proc.wait() == 0


async def open_acp(workspace: Path, home: Path) -> tuple[Acp, str]:
    proc = await trio.lowlevel.open_process(
        [*NYZ, "acp"], cwd=workspace, env=nyz_env(home), stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    client = Acp(proc)
    await client.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    new = await client.call("session/new", {"cwd": str(workspace), "mcpServers": []})
    return client, new["result"]["sessionId"]


async def acp_sets_full(workspace: Path, home: Path) -> None:
    client, sid = await open_acp(workspace, home)
    done = await client.call("session/set_mode", {"sessionId": sid, "modeId": "full"})
    assert done["result"] == {}
    await client.close()


async def console_sets_full(workspace: Path, home: Path) -> None:
    async with open_console(workspace, home) as pane:
        await pane.wait_for(INPUT_READY)
        await say(pane, "/trust full")
        await pane.wait_for("trust: full")
        await say(pane, "/quit")
        assert await pane.wait_exit() == 0


async def web_sets_full(workspace: Path, home: Path) -> None:
    async with serve_nyz(workspace, home) as srv, srv.connect() as client:
        await client.hello()
        await client.send({"type": "set_trust", "mode": "full"})
        out = await client.until(lambda m: m["type"] == "output")
        assert out["text"] == "trust: full"


@pytest.mark.parametrize("front_end", ["acp", "console", "web"])
async def test_setting_trust_from_any_front_end_fires_the_same_config_change_hook(
        front_end, workspace, home, configure, tmp_path):
    if front_end == "console" and not TmuxPane.available():
        pytest.skip("tmux is not installed")
    log = tmp_path / "config.log"
    async with open_fake_llm(script=[]) as server:
        configure(workspace, server.url_for("openai"), extra=hook_config(log))
        await {"acp": acp_sets_full, "console": console_sets_full,
               "web": web_sets_full}[front_end](workspace, home)
    assert await changes(log, 1) == [{
        "key": "trust", "previous": "off", "value": "full", "source": "command",
        "hook_event_name": "config_change", "cwd": str(workspace)}]
    assert not [r for r in server.requests if r.wire is not None]  # nothing reached the model


async def test_leaving_plan_mode_from_acp_sends_the_execute_plan_message(
        workspace, home, configure, tmp_path):
    log = tmp_path / "config.log"
    async with open_fake_llm(script=[reply("executing the plan")]) as server:
        configure(workspace, server.url_for("openai"), extra=hook_config(log))
        client, sid = await open_acp(workspace, home)
        await client.call("session/set_mode", {"sessionId": sid, "modeId": "plan"})
        # the plan the model would have written while planning (plan_write's file)
        path = plan_path(workspace, sid)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("# Plan\n1. say hello\n")
        await client.call("session/set_mode", {"sessionId": sid, "modeId": "autoedit"})
        await client.until(lambda m: m.get("method") == "session/update"
                           and m["params"]["update"].get("sessionUpdate")
                           == "agent_message_chunk")
        await client.close()
    [request] = [r for r in server.requests if r.wire is not None]
    assert request.last_user_text().startswith(EXECUTE) and str(path) in request.last_user_text()
    assert [(c["key"], c["previous"], c["value"]) for c in await changes(log, 3)] == [
        ("plan_mode", False, True), ("plan_mode", True, False),
        ("trust", "off", "autoedit")]


@pytest.mark.skipif(not TmuxPane.available(), reason="tmux is not installed")
async def test_the_console_ctx_is_the_context_commands_figure(workspace, home, configure):
    async with open_fake_llm(script=[reply("an answer")]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home) as pane:
            await pane.wait_for(INPUT_READY)
            await pane.tmux("resize-window", "-x", "160", "-y", "30")  # the whole status line
            await say(pane, "hello")
            await pane.wait_for("an answer")
            await say(pane, "/context")
            screen = await pane.wait_for(lambda s: re.search(r"context: ~[\d,]+ of", s))
            share = re.search(r"context: ~[\d,]+ of [\d,]+ tokens \(([^)]+)\)", screen)[1]
            assert share not in ("0%", "<1%")  # the system prompt and the tools count
            status = screen.splitlines()[-1]
            assert f"ctx {share}" in status, status
