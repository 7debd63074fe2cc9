"""``nyz acp`` as a real subprocess, driven by a small client of our own: the same scenario as
the official client's (so it runs where node is missing), and what only the process shows:
stdout carries protocol only, and a client that goes away mid-turn ends every session with
the session saved and no process left."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio

from nyzhi.spawn import open_bound_process
from nyzhi.testing.cli import (
    NYZ,
    nyz_env,
    running_with,
    settled_running,
    started_running,
    wait_gone,
)
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call


class StdioClient:
    """JSON lines to and from ``nyz acp``; the agent's requests are answered by ``answer``."""

    def __init__(self, proc: trio.Process) -> None:
        self.proc = proc
        self.buffer = bytearray()
        self.next_id = 0
        self.updates: list[dict[str, Any]] = []
        self.asked: list[dict[str, Any]] = []
        self.answers: list[str] = []
        self.hold = False  # True: permission requests are left unanswered (the test answers)
        self.editor: Any = None  # answers terminal/* (``TerminalEditor``)
        self._sending = trio.Lock()  # the editor answers from its own tasks too

    async def _message(self) -> dict[str, Any]:
        while b"\n" not in self.buffer:
            chunk = await self.proc.stdout.receive_some(65536)
            assert chunk, f"nyz acp closed stdout; unread: {bytes(self.buffer)!r}"
            self.buffer += chunk
        end = self.buffer.index(b"\n")
        line = bytes(self.buffer[:end])
        del self.buffer[: end + 1]
        return json.loads(line)  # every line of stdout is a JSON-RPC message

    async def send(self, message: dict[str, Any]) -> None:
        async with self._sending:
            await self.proc.stdin.send_all(
                json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        await self.send({"id": self.next_id, "method": method, "params": params})
        return await self.until(lambda m: m.get("id") == self.next_id and "method" not in m)

    async def until(self, done: Any) -> dict[str, Any]:
        with trio.fail_after(60):
            while True:
                message = await self._message()
                if message.get("method") == "session/update":
                    self.updates.append(message["params"]["update"])
                elif message.get("method") == "session/request_permission" and self.hold:
                    self.asked.append(message)
                elif str(message.get("method")).startswith("terminal/") and self.editor:
                    await self.editor.handle(message)
                elif message.get("method") == "session/request_permission":
                    self.asked.append(message["params"])
                    option = self.answers.pop(0) if self.answers else "deny"
                    await self.send({"id": message["id"], "result": {
                        "outcome": {"outcome": "selected", "optionId": option}}})
                if done(message):
                    return message

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(u["content"]["text"] for u in self.updates if u["sessionUpdate"] == kind)


async def start(workspace, home, *args: str,
                capabilities: dict[str, Any] | None = None) -> StdioClient:
    proc = await trio.lowlevel.open_process(
        [*NYZ, "acp", *args], cwd=workspace, env=nyz_env(home),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    client = StdioClient(proc)
    init = await client.call("initialize", {"protocolVersion": 1,
                                            "clientCapabilities": capabilities or {}})
    assert init["result"]["protocolVersion"] == 1
    return client


async def test_the_scenario_without_node(workspace, home, configure):
    script = [reply("Hi there, streamed"),
              reply(tool_calls=[tool_call("write", {"file_path": "a.txt", "content": "A"})]),
              reply("wrote it")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        client = await start(workspace, home)
        session = (await client.call("session/new", {"cwd": str(workspace),
                                                     "mcpServers": []}))["result"]
        sid = session["sessionId"]
        first = await client.call("session/prompt", {
            "sessionId": sid, "prompt": [{"type": "text", "text": "hello"}]})
        assert first["result"] == {"stopReason": "end_turn"}
        assert client.text() == "Hi there, streamed"
        client.answers.append("approve")
        second = await client.call("session/prompt", {
            "sessionId": sid, "prompt": [{"type": "text", "text": "write"}]})
        assert second["result"] == {"stopReason": "end_turn"}
        [asked] = client.asked
        assert asked["sessionId"] == sid and asked["toolCall"]["title"] == "write a.txt"
        assert (workspace / "a.txt").read_text() == "A"
        await client.proc.stdin.aclose()
        with trio.fail_after(30):
            assert await client.proc.wait() == 0


@pytest.mark.parametrize("how", ["stdin closed", "SIGTERM"])
async def test_a_client_that_goes_away_mid_turn_ends_everything(how, workspace, home,
                                                                configure):
    """stdin closes (or the editor signals) while a bash runs: the turn is cancelled, the bash
    is gone, the session is saved (it loads, with the prompt in it), and nyz exits 0."""
    marker = f"300.{random.randrange(10**8):08d}"
    script = [reply(tool_calls=[tool_call("bash", {"command": f"echo started; sleep {marker}"})])]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"), extra='[agent.trust]\nmode = "full"\n')
        client = await start(workspace, home)
        sid = (await client.call("session/new", {"cwd": str(workspace),
                                                 "mcpServers": []}))["result"]["sessionId"]
        client.next_id += 1
        await client.send({"id": client.next_id, "method": "session/prompt", "params": {
            "sessionId": sid, "prompt": [{"type": "text", "text": "run the long thing"}]}})
        await client.until(lambda m: m.get("params", {}).get("update", {}).get("status")
                           == "in_progress")
        assert await started_running(marker)
        if how == "SIGTERM":
            client.proc.send_signal(signal.SIGTERM)
        else:
            await client.proc.stdin.aclose()
        with trio.fail_after(30):
            assert await client.proc.wait() == 0
    assert await settled_running(marker) == []
    from nyzhi.core.runtime.sessions.store import SessionStore

    saved = SessionStore(home / ".local" / "share" / "nyzhi" / "sessions").load(sid)
    assert any(getattr(e, "prompt", "") == "run the long thing" for e in saved.events)


async def open_session(client: StdioClient, workspace) -> str:
    answer = await client.call("session/new", {"cwd": str(workspace), "mcpServers": []})
    return answer["result"]["sessionId"]


async def prompt(client: StdioClient, sid: str, text: str) -> dict[str, Any]:
    return await client.call("session/prompt", {
        "sessionId": sid, "prompt": [{"type": "text", "text": text}]})


async def finish(client: StdioClient) -> None:
    await client.proc.stdin.aclose()
    with trio.fail_after(30):
        assert await client.proc.wait() == 0


async def test_a_subagent_asks_by_name_and_ask_user_is_a_choice(workspace, home, configure):
    """A permission from a subagent names it; its tool calls reach the editor as tool calls
    titled with its name; an ``ask_user`` question offers its options as the choices."""
    from nyzhi.testing.fake_llm import PerAgent

    sub = "/agents/main/worker-1"
    options = [{"value": "pg", "label": "PostgreSQL"}, {"value": "lite", "label": "SQLite"}]
    script = PerAgent({
        "MAIN": [reply(tool_calls=[tool_call("spawn_agent", {"message": "SUB write",
                                                             "agent_type": "worker"})]),
                 reply(tool_calls=[tool_call("wait", {"ids": [sub]})]),
                 reply(tool_calls=[tool_call("ask_user", {"question": "Which database?",
                                                          "options": options})]),
                 reply("all done")],
        "SUB": [reply(tool_calls=[tool_call("write", {"file_path": "s.txt", "content": "S"})]),
                reply("wrote s")],
    })
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        client = await start(workspace, home)
        sid = await open_session(client, workspace)
        client.answers += ["approve", "lite"]
        answer = await prompt(client, sid, "MAIN go")
        await finish(client)
    assert answer["result"] == {"stopReason": "end_turn"}
    write, question = client.asked
    assert write["toolCall"]["title"] == "[worker-1] write s.txt"
    assert (workspace / "s.txt").read_text() == "S"
    titles = [u["title"] for u in client.updates if u["sessionUpdate"] == "tool_call"]
    assert "[worker-1] write s.txt" in titles and "spawn_agent" in titles
    [spawn_id] = [u["toolCallId"] for u in client.updates
                  if u["sessionUpdate"] == "tool_call" and u["title"] == "spawn_agent"]
    spawn = [u for u in client.updates
             if u["sessionUpdate"] == "tool_call_update" and u["toolCallId"] == spawn_id]
    assert spawn[0]["status"] == "in_progress"  # open while the subagent works
    assert spawn[-1]["status"] == "completed"
    progress = spawn[-1]["content"][0]["content"]["text"]
    assert "[worker-1] write s.txt" in progress and "[worker-1] end_turn: wrote s" in progress
    assert question["toolCall"]["title"] == "Which database?"
    [ask_call] = [u["toolCallId"] for u in client.updates
                  if u["sessionUpdate"] == "tool_call" and u["title"] == "ask_user"]
    assert question["toolCall"]["toolCallId"] == ask_call  # the editor's own tool call
    assert [(o["optionId"], o["name"]) for o in question["options"]] == [
        ("pg", "PostgreSQL"), ("lite", "SQLite")]
    assert "lite" in script.seen["MAIN"][-1].tool_results()[-1]


async def test_max_steps_is_max_turn_requests(workspace, home, configure):
    step = reply(tool_calls=[tool_call("glob", {"pattern": "*"})])
    async with open_fake_llm(script=[step, step, step]) as server:
        configure(workspace, server.url_for("openai"), extra="[agent]\nmax_steps = 1\n")
        client = await start(workspace, home)
        sid = await open_session(client, workspace)
        answer = await prompt(client, sid, "loop")
        await finish(client)
    assert answer["result"] == {"stopReason": "max_turn_requests"}


async def test_error_messages_are_redacted(workspace, home, configure):
    """An error quoting what the client sent never echoes a secret nyz knows."""
    async with open_fake_llm(script=[]) as server:
        configure(workspace, server.url_for("openai"))
        client = await start(workspace, home)
        await open_session(client, workspace)
        error = (await client.call("session/load", {
            "sessionId": "sk-test-key", "cwd": str(workspace), "mcpServers": []}))["error"]
        await finish(client)
    assert error["code"] == -32002
    assert "sk-test-key" not in error["message"] and "redacted" in error["message"]


async def test_cancel_while_a_permission_is_pending(workspace, home, configure):
    """The spec's cancellation: the client cancels, then answers the pending permission
    ``cancelled``; the call is not made and the prompt answers ``cancelled``."""
    script = [reply(tool_calls=[tool_call("write", {"file_path": "c.txt", "content": "C"})]),
              reply("after the cancel")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        client = await start(workspace, home)
        sid = await open_session(client, workspace)
        client.hold = True
        await client.send({"id": 50, "method": "session/prompt", "params": {
            "sessionId": sid, "prompt": [{"type": "text", "text": "write c"}]}})
        asked = await client.until(lambda m: m.get("method") == "session/request_permission")
        await client.send({"method": "session/cancel", "params": {"sessionId": sid}})
        await client.send({"id": asked["id"], "result": {"outcome": {"outcome": "cancelled"}}})
        answer = await client.until(lambda m: m.get("id") == 50 and "method" not in m)
        assert answer["result"] == {"stopReason": "cancelled"}
        again = await prompt(client, sid, "go on")
        await finish(client)
    assert not (workspace / "c.txt").exists()
    assert again["result"] == {"stopReason": "end_turn"}


async def test_a_mode_changed_by_a_command_is_reported(workspace, home, configure):
    async with open_fake_llm(script=[]) as server:
        configure(workspace, server.url_for("openai"))
        client = await start(workspace, home)
        sid = await open_session(client, workspace)
        assert (await prompt(client, sid, "/plan"))["result"] == {"stopReason": "end_turn"}
        await prompt(client, sid, "/plan")
        await prompt(client, sid, "/trust autoedit")
        set_mode = await client.call("session/set_mode", {"sessionId": sid, "modeId": "full"})
        await prompt(client, sid, "/model other-model")
        await prompt(client, sid, "/status")
        image = await client.call("session/prompt", {"sessionId": sid, "prompt": [
            {"type": "image", "mimeType": "image/png", "data": "AAAA"}]})
        await finish(client)
    modes = [u["currentModeId"] for u in client.updates
             if u["sessionUpdate"] == "current_mode_update"]
    assert modes == ["plan", "off", "autoedit"]
    assert set_mode["result"] == {}
    assert "trust full" in client.text()  # set_mode reached the gates
    assert "fake/other-model" in client.text()  # /model switched the main agent's model
    assert image["error"]["code"] == -32602 and "'image' is not supported" in \
        image["error"]["message"]
    assert not server.requests


async def test_failures_are_one_line_errors_and_the_agent_goes_on(workspace, home, configure):
    """A provider that fails the turn, and a project whose config is broken: each is a
    JSON-RPC error with one line saying why; the agent keeps serving."""
    from nyzhi.testing.fake_llm import http_error

    broken = workspace / "broken"
    (broken / ".nyzhi").mkdir(parents=True)
    (broken / ".nyzhi" / "config.toml").write_text("[provider\n")
    async with open_fake_llm(script=[http_error(400, "the model is gone"),
                                     reply("fine again")]) as server:
        configure(workspace, server.url_for("openai"))
        client = await start(workspace, home)
        sid = await open_session(client, workspace)
        failed = (await prompt(client, sid, "hello"))["error"]
        bad = (await client.call("session/new", {"cwd": str(broken), "mcpServers": []}))["error"]
        again = await prompt(client, sid, "hello again")
        await finish(client)
    assert failed["code"] == -32603 and "the model is gone" in failed["message"]
    assert bad["code"] == -32603 and "config.toml" in bad["message"]
    for error in (failed, bad):
        assert "\n" not in error["message"] and "Traceback" not in error["message"]
    assert again["result"] == {"stopReason": "end_turn"} and "fine again" in client.text()


async def test_a_permission_diff_never_shows_a_secret(workspace, home, configure):
    """The diff a permission request shows is read from the file, outside the event path: it
    is redacted all the same."""
    (workspace / "settings.ini").write_text("key = sk-test-key\n")
    script = [reply(tool_calls=[tool_call("read", {"file_path": "settings.ini"})]),
              reply(tool_calls=[tool_call("edit", {"file_path": "settings.ini",
                                                   "old_string": "key", "new_string": "token"})]),
              reply("left it")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        client = await start(workspace, home)
        sid = await open_session(client, workspace)
        await prompt(client, sid, "rename the key")
        await finish(client)
    [asked] = client.asked
    [diff] = asked["toolCall"]["content"]
    assert diff["type"] == "diff" and diff["path"] == str(workspace / "settings.ini")
    assert diff["oldText"].startswith("key = ") and diff["newText"].startswith("token = ")
    assert "sk-test-key" not in json.dumps(client.asked) + json.dumps(client.updates)
    assert "redacted" in diff["oldText"]
    assert (workspace / "settings.ini").read_text() == "key = sk-test-key\n"  # declined


async def test_the_client_s_mcp_servers_join_the_session(workspace, home, configure):
    """``mcpServers`` of ``session/new``: a stdio server (the MCP tests' scripted one, a real
    process) is connected before the session is answered, and its tools are the agent's."""
    import sys
    from pathlib import Path

    helper = Path(__file__).parent.parent / "mcp" / "helper_server.py"
    script = [reply(tool_calls=[tool_call("mcp__helper__echo", {"text": "ping from the editor"})]),
              reply("echoed")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"), extra='[agent.trust]\nmode = "full"\n')
        client = await start(workspace, home)
        answer = await client.call("session/new", {"cwd": str(workspace), "mcpServers": [
            {"name": "helper", "command": sys.executable, "args": [str(helper)], "env": []}]})
        sid = answer["result"]["sessionId"]
        done = await prompt(client, sid, "echo something")
        await finish(client)
    assert done["result"] == {"stopReason": "end_turn"}
    assert "mcp__helper__echo" in server.requests[0].tool_names()
    assert "ping from the editor" in server.requests[1].tool_results()[-1]


async def test_an_http_mcp_server_of_the_client_gets_its_headers(workspace, home, configure):
    import functools
    import sys
    from pathlib import Path

    from nyzhi.provider.llama_server import free_loopback_port

    helper = Path(__file__).parent.parent / "mcp" / "helper_server.py"
    port = free_loopback_port()
    script = [reply(tool_calls=[tool_call("mcp__web__echo", {"text": "over http"})]),
              reply("echoed")]
    async with open_fake_llm(script=script) as server, trio.open_nursery() as nursery:
        proc = await nursery.start(functools.partial(
            trio.run_process, [sys.executable, str(helper), "--http", str(port),
                               "--require-header", "X-Token=abc"],
            stdout=subprocess.PIPE, check=False))
        async for chunk in proc.stdout:  # the helper says "ready" once it is bound
            if b"ready" in chunk:
                break
        configure(workspace, server.url_for("openai"), extra='[agent.trust]\nmode = "full"\n')
        client = await start(workspace, home)
        answer = await client.call("session/new", {"cwd": str(workspace), "mcpServers": [
            {"type": "http", "name": "web", "url": f"http://127.0.0.1:{port}/mcp",
             "headers": [{"name": "X-Token", "value": "abc"}]}]})
        done = await prompt(client, answer["result"]["sessionId"], "echo over http")
        await finish(client)
        proc.terminate()
    assert done["result"] == {"stopReason": "end_turn"}
    assert "over http" in server.requests[1].tool_results()[-1]


async def test_stdout_carries_the_protocol_only(workspace, home, configure):
    """What nyz would tell a person (here: a config key it does not know) goes to stderr;
    every line on stdout is a JSON-RPC message."""
    async with open_fake_llm(script=[reply("hi")]) as server:
        configure(workspace, server.url_for("openai"), extra="[agent]\nmystery_key = 1\n")
        proc = await trio.lowlevel.open_process(
            [*NYZ, "acp"], cwd=workspace, env=nyz_env(home),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        client = StdioClient(proc)
        await client.call("initialize", {"protocolVersion": 1})
        sid = await open_session(client, workspace)
        await prompt(client, sid, "hello")
        await proc.stdin.aclose()
        with trio.fail_after(30):
            out = await proc.stdout.receive_some(1 << 20)
            err = bytearray()
            while chunk := await proc.stderr.receive_some(1 << 16):
                err += chunk
            assert await proc.wait() == 0
    assert all(json.loads(line)["jsonrpc"] == "2.0" for line in out.splitlines() if line)
    assert b"mystery_key" in err and b"mystery_key" not in bytes(client.buffer) + out


async def test_flags_after_acp_give_every_session_its_defaults(workspace, home, configure):
    async with open_fake_llm(script=[]) as server:
        configure(workspace, server.url_for("openai"))
        client = await start(workspace, home, "-y", "autoedit", "-m", "other-model")
        answer = await client.call("session/new", {"cwd": str(workspace), "mcpServers": []})
        status = await prompt(client, answer["result"]["sessionId"], "/status")
        await finish(client)
    assert answer["result"]["modes"]["currentModeId"] == "autoedit"
    assert status["result"] == {"stopReason": "end_turn"} and "fake/other-model" in client.text()


async def test_without_a_provider_key_the_editor_is_offered_nyz_login(workspace, home,
                                                                       configure):
    client = await start(workspace, home)  # (start asserts initialize answered)
    client.next_id += 1
    await client.send({"id": client.next_id, "method": "initialize",
                       "params": {"protocolVersion": 1}})
    init = await client.until(lambda m: m.get("id") == client.next_id)
    [method] = init["result"]["authMethods"]
    assert method["id"] == "nyz-login" and "nyz login" in method["description"]
    early = await client.call("authenticate", {"methodId": "nyz-login"})
    assert early["error"]["code"] == -32000 and "nyz login" in early["error"]["message"]
    configure(workspace, "http://127.0.0.1:9/v1")  # what nyz login would have set up
    assert (await client.call("authenticate", {"methodId": "nyz-login"}))["result"] == {}
    wrong = await client.call("authenticate", {"methodId": "oauth"})
    assert wrong["error"]["code"] == -32602 and "'methodId'" in wrong["error"]["message"]
    await finish(client)


class TerminalEditor:
    """The client's terminals, as an editor runs them: the argv it is given spawned with the
    editor's own environment (holding a variable only the editor has) plus the given one."""

    def __init__(self, client: StdioClient, nursery: trio.Nursery) -> None:
        self.client = client
        self.nursery = nursery
        self.created: list[dict[str, Any]] = []
        self.procs: dict[str, Any] = {}
        self.output: dict[str, bytearray] = {}
        self.killed: list[str] = []
        self.released: list[str] = []
        self.refuse = False  # True: terminal/create is answered with an error
        self._more = trio.Event()  # set (and replaced) whenever a terminal printed more

    async def handle(self, message: dict[str, Any]) -> None:
        method, params = message["method"], message["params"]
        term = params.get("terminalId", "")
        result: dict[str, Any] = {}
        if method == "terminal/create" and self.refuse:
            self.created.append(params)
            await self.client.send({"id": message["id"], "error": {
                "code": -32603, "message": "no terminal here"}})
            return
        if method == "terminal/create":
            self.created.append(params)
            term = f"t{len(self.created)}"
            env = {**os.environ, "EDITOR_ONLY_TOKEN": "editor-secret-41",
                   **{e["name"]: e["value"] for e in params.get("env", [])}}
            # from a thread that lives while the child does, as an editor's would
            self.procs[term] = await open_bound_process(
                [params["command"], *params.get("args", [])], cwd=params.get("cwd"), env=env,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            self.output[term] = bytearray()
            self.nursery.start_soon(self._read, term)
            result = {"terminalId": term}
        elif method == "terminal/output":
            result = {"output": self.output[term].decode(), "truncated": False,
                      "exitStatus": self._status(term)}
        elif method == "terminal/wait_for_exit":
            self.nursery.start_soon(self._answer_exit, message["id"], term)
            return
        elif method == "terminal/kill":
            self.killed.append(term)
            self.procs[term].terminate()
        elif method == "terminal/release":
            self.released.append(term)
            if self.procs[term].returncode is None:
                self.procs[term].terminate()
        await self.client.send({"id": message["id"], "result": result})

    def _status(self, term: str) -> dict[str, Any] | None:
        code = self.procs[term].returncode
        if code is None:
            return None
        if code < 0:
            return {"exitCode": None, "signal": signal.Signals(-code).name}
        return {"exitCode": code, "signal": None}

    async def _read(self, term: str) -> None:
        stream = self.procs[term].stdout
        while chunk := await stream.receive_some(65536):
            self.output[term] += chunk
            self._more.set()
            self._more = trio.Event()

    async def printed(self, term: str, text: bytes) -> None:
        """Until the terminal's command has printed ``text`` (30 s at most)."""
        with trio.fail_after(30):
            while text not in self.output.get(term, b""):
                await self._more.wait()

    async def _answer_exit(self, request_id: Any, term: str) -> None:
        await self.procs[term].wait()
        with contextlib.suppress(trio.ClosedResourceError, trio.BrokenResourceError):
            await self.client.send({"id": request_id, "result": self._status(term)})


async def test_bash_in_the_client_s_terminal_without_node(workspace, home, configure,
                                                          monkeypatch):
    """The terminal scenario through our own client: the editor is asked to run our bwrap
    command line with our environment; the command stays confined, its output reaches the
    model, and a timeout and a cancel each kill it (terminal/kill) with nothing left."""
    monkeypatch.setenv("NYZ_TEST_SECRET_TOKEN", "nyz-secret-17")
    outside = Path("/var/tmp") / f"nyz-acp-outside-{random.randrange(10**8)}"
    slow, stuck = (f"300.{random.randrange(10**8):08d}" for _ in range(2))
    first = (f"echo x > {outside} || echo outside-refused; echo y > .git/config ||"
             " echo git-refused; echo \"tokens=${EDITOR_ONLY_TOKEN:-none},"
             "${NYZ_TEST_SECRET_TOKEN:-none}\"; pwd")
    script = [reply(tool_calls=[tool_call("bash", {"command": first})]),
              reply(tool_calls=[tool_call("bash", {"command": f"sleep {slow}", "timeout": 1})]),
              reply("both ran"),
              reply(tool_calls=[tool_call("bash", {"command": f"echo started; sleep {stuck}"})])]
    git_config = (workspace / ".git" / "config").read_text()
    try:
        async with open_fake_llm(script=script) as server, trio.open_nursery() as nursery:
            configure(workspace, server.url_for("openai"), extra='[agent.trust]\nmode = "full"\n')
            client = await start(workspace, home, capabilities={"terminal": True})
            editor = client.editor = TerminalEditor(client, nursery)
            sid = await open_session(client, workspace)
            assert (await prompt(client, sid, "try"))["result"] == {"stopReason": "end_turn"}
            assert len(editor.created) == 2 and editor.released == ["t1", "t2"]
            assert editor.killed == ["t2"]  # the timeout
            await wait_gone(running_with(slow))  # fails unless bwrap's namespace goes
            client.next_id += 1
            await client.send({"id": client.next_id, "method": "session/prompt", "params": {
                "sessionId": sid, "prompt": [{"type": "text", "text": "run it"}]}})
            await client.until(lambda m: any(
                c.get("terminalId") == "t3"
                for c in m.get("params", {}).get("update", {}).get("content") or ()))
            # the command runs (it printed): the terminal's content can come before the
            # editor's fork has exec'd, and a look then found nothing on a busy machine
            await editor.printed("t3", b"started")
            pids = await started_running(stuck, including=editor.procs["t3"].pid)
            await client.send({"method": "session/cancel", "params": {"sessionId": sid}})
            answer = await client.until(lambda m: m.get("id") == client.next_id)
            assert answer["result"] == {"stopReason": "cancelled"}
            assert editor.killed == ["t2", "t3"] and editor.released == ["t1", "t2", "t3"]
            await wait_gone(pids)
            assert await settled_running(stuck) == []
            await finish(client)
        assert not outside.exists()
    finally:
        outside.unlink(missing_ok=True)
    first_result = server.requests[1].tool_results()[0]
    assert "outside-refused" in first_result and "git-refused" in first_result
    assert "tokens=none,none" in first_result and str(workspace) in first_result
    assert (workspace / ".git" / "config").read_text() == git_config
    timed_out = server.requests[2].tool_results()[-1]
    assert "timed out after 1 s" in timed_out
    created = editor.created[0]
    assert created["args"][0] == "-i" and "--unshare-pid" in created["args"]
    assert "NYZ_TEST_SECRET_TOKEN" not in {e["name"] for e in created["env"]}


@pytest.mark.parametrize("why", ["the editor refuses", "full-access"])
async def test_bash_falls_back_to_our_executor(why, workspace, home, configure):
    """A command bwrap does not contain (full-access) never goes to the editor, and one the
    editor cannot run goes nowhere else: both run through our own executor, and the model
    gets their output."""
    extra = '[agent.trust]\nmode = "full"\n'
    if why == "full-access":
        extra += '[agent.sandbox]\nlevel = "full-access"\n'
    script = [reply(tool_calls=[tool_call("bash", {"command": "echo ran-$((40+2))"})]),
              reply("done")]
    async with open_fake_llm(script=script) as server, trio.open_nursery() as nursery:
        configure(workspace, server.url_for("openai"), extra=extra)
        client = await start(workspace, home, capabilities={"terminal": True})
        editor = client.editor = TerminalEditor(client, nursery)
        editor.refuse = why == "the editor refuses"
        sid = await open_session(client, workspace)
        assert (await prompt(client, sid, "go"))["result"] == {"stopReason": "end_turn"}
        await finish(client)
    assert len(editor.created) == (1 if editor.refuse else 0) and not editor.procs
    assert "ran-42" in server.requests[1].tool_results()[-1]


async def test_the_editor_going_away_mid_terminal_command_leaves_nothing(workspace, home,
                                                                          configure):
    """nyz's stdin closes while a command runs in a terminal of an editor whose process lives
    on (so ``--die-with-parent`` does not fire): nyz cannot ask it to kill, and ends the
    run's processes itself before it exits."""
    marker = f"300.{random.randrange(10**8):08d}"
    script = [reply(tool_calls=[tool_call("bash", {"command": f"echo started; sleep {marker}"})])]
    async with open_fake_llm(script=script) as server, trio.open_nursery() as nursery:
        configure(workspace, server.url_for("openai"), extra='[agent.trust]\nmode = "full"\n')
        client = await start(workspace, home, capabilities={"terminal": True})
        editor = client.editor = TerminalEditor(client, nursery)
        sid = await open_session(client, workspace)
        client.next_id += 1
        await client.send({"id": client.next_id, "method": "session/prompt", "params": {
            "sessionId": sid, "prompt": [{"type": "text", "text": "run it"}]}})
        await client.until(lambda m: any(
            c.get("type") == "terminal"
            for c in m.get("params", {}).get("update", {}).get("content") or ()))
        # the command runs (it printed): its process shows the marker, not a fork of the
        # editor's that has yet to exec (a first look right at terminal/create missed it once)
        await editor.printed("t1", b"started")
        pids = running_with(marker)
        assert editor.procs["t1"].pid in pids
        await client.proc.stdin.aclose()
        with trio.fail_after(30):
            assert await client.proc.wait() == 0
        await wait_gone(pids)
        # processes forked after the first look (the sleep under bash) are torn down with the
        # sandbox's PID namespace, asynchronously: wait for them too, then none may be left
        # (a leaked `sleep 300` would outlive the wait and fail it)
        await wait_gone(running_with(marker))
        assert await settled_running(marker) == []
        with trio.fail_after(10):
            await editor.procs["t1"].wait()  # the editor saw its terminal's command end


async def test_the_model_command_switches_the_session_s_model(workspace, home, configure):
    """No ``session/set_model`` exists in protocol v1: ``/model NAME`` is how an editor's
    user switches, and the session's next request goes to that model, same thread."""
    async with open_fake_llm(script=[reply("first"), reply("second")]) as server:
        configure(workspace, server.url_for("openai"))
        client = await start(workspace, home)
        sid = await open_session(client, workspace)
        await prompt(client, sid, "one")
        switched = await prompt(client, sid, "/model fake-model-2")
        assert switched["result"] == {"stopReason": "end_turn"}
        assert "fake/fake-model-2" in client.text()
        await prompt(client, sid, "two")
        await finish(client)
    first, second = [r for r in server.requests if r.wire is not None]
    assert (first.model, second.model) == ("fake-model-1", "fake-model-2")
    assert ("user", "one") in second.transcript()
