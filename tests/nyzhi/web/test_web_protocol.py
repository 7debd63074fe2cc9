"""``nyz serve`` as a client sees it: real WebSocket connections (trio-websocket) and raw
HTTP requests against a real ``nyz serve`` process, its model the scripted fake LLM."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import trio
from trio_websocket import ConnectionClosed, ConnectionRejected

from nyzhi.team_files.lead_lease import lead_pid
from nyzhi.team_files.store import TeamStore
from nyzhi.testing.cli import NYZ, nyz_env, run_nyz, settled_running, started_running
from nyzhi.testing.fake_llm import PerAgent, open_fake_llm, reply, tool_call
from nyzhi.testing.web import TOKEN, event_type, serve_nyz


def _get(path: str, port: int, *headers: str) -> bytes:
    lines = [f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", *headers, "Connection: close"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def test_the_token_is_required_everywhere_but_the_shell_and_never_logged(
        workspace, home, configure):
    async with open_fake_llm(script=[]) as server:
        configure(workspace, server.url_for("openai"))
        async with serve_nyz(workspace, home) as srv:
            port = srv.port
            status, head, body = await srv.http_full(_get("/", port))
            assert status == 200 and b"app.js" in body and TOKEN.encode() not in body
            assert b"Content-Security-Policy: default-src 'none'; script-src 'nonce-" in head
            assert b"frame-ancestors 'none'" in head and b"Cache-Control: no-store" in head
            # the one loopback header set (nyzhi.loopback), on a refusal too
            for wanted in (b"X-Content-Type-Options: nosniff", b"Referrer-Policy: no-referrer",
                           b"X-Frame-Options: DENY"):
                assert wanted in head, wanted
            status, head, _ = await srv.http_full(_get("/static/app.js", port))
            assert status == 401 and b"Content-Security-Policy: default-src 'none'" in head
            assert b"Referrer-Policy: no-referrer" in head and b"Cache-Control: no-store" in head
            for path in ("/static/app.js", "/static/app.css", "/ws"):
                assert (await srv.http(_get(path, port)))[0] == 401, path
                assert (await srv.http(_get(path + "?token=nope", port)))[0] == 401, path
            status, body = await srv.http(_get(f"/static/app.js?token={TOKEN}", port))
            assert status == 200 and b"PROTOCOL" in body
            status, _ = await srv.http(_get("/static/app.js", port,
                                            f"Authorization: Bearer {TOKEN}"))
            assert status == 200
            assert (await srv.http(_get(f"/static/../server.py?token={TOKEN}", port)))[0] == 404
            for wrong in ("wrong-token-value-1", "", TOKEN[:-1]):
                with pytest.raises(ConnectionRejected) as refused:
                    async with srv.connect(token=wrong):
                        pass
                assert refused.value.status_code == 401
            async with srv.connect() as client:
                welcome, state = await client.hello()
            assert welcome["protocol"] == 1 and welcome["server"] == "nyzhi"
            assert state["agents"][0]["path"] == "/agents/main"
            log = srv.stderr.decode()
            assert "wrong token" in log and "no token" in log
            assert "wrong-token-value-1" not in log and TOKEN[:-1] + " " not in log
            assert "refused so far" in log


async def test_a_foreign_host_or_origin_is_refused_before_the_upgrade(workspace, home, configure):
    async with open_fake_llm(script=[]) as server:
        configure(workspace, server.url_for("openai"))
        async with serve_nyz(workspace, home) as srv:
            port = srv.port
            for origin in ("http://evil.example", f"http://evil.example:{port}", "null",
                           f"https://127.0.0.1:{port}", f"http://127.0.0.1:{port + 1}"):
                with pytest.raises(ConnectionRejected) as refused:
                    async with srv.connect(extra_headers=[("Origin", origin)]):
                        pass
                assert refused.value.status_code == 403, origin
            upgrade = ["Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Version: 13",
                       "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="]
            for host in (f"evil.example:{port}", f"127.0.0.1.evil.example:{port}",
                         f"127.0.0.1:{port + 1}", "127.0.0.1"):
                request = "\r\n".join([f"GET /ws?token={TOKEN} HTTP/1.1", f"Host: {host}",
                                       *upgrade, "", ""]).encode()
                assert (await srv.http(request))[0] == 421, host
            # the same request with the right Host is upgraded (101)
            request = "\r\n".join([f"GET /ws?token={TOKEN} HTTP/1.1", f"Host: 127.0.0.1:{port}",
                                   f"Origin: http://localhost:{port}", *upgrade, "", ""]).encode()
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            async with stream:
                await stream.send_all(request)
                assert (await stream.receive_some(4096)).startswith(b"HTTP/1.1 101")


async def test_a_prompt_streams_to_every_viewer_and_a_reconnect_gets_what_it_missed(
        workspace, home, configure):
    script = [reply("Hello from the **fake** model", chunk_size=3), reply("second answer")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with serve_nyz(workspace, home) as srv, srv.connect() as one, \
                srv.connect() as two:
            welcome, _ = await one.hello()
            await two.hello(session=welcome["session_id"])
            await one.send({"type": "message", "text": "say hello"})
            done = [await c.until(lambda m: event_type(m) == "turn_complete") for c in (one, two)]
            for client, end in zip((one, two), done, strict=True):
                deltas = [m["event"]["text"] for m in client.seen
                          if event_type(m) == "text_delta"]
                assert len(deltas) > 3 and "".join(deltas) == "Hello from the **fake** model"
                assert end["event"]["agent"] == "/agents/main"
            seqs = [m["seq"] for m in one.seen if m["type"] == "event"]
            assert seqs == sorted(seqs) == [m["seq"] for m in two.seen if m["type"] == "event"]
            last = seqs[-1]
            # a reconnect with since= gets only what came after, with the state first
            async with srv.connect() as again:
                _, state = await again.hello(session=welcome["session_id"][:8], since=last - 2)
                now = state["seq"]  # an agent_status may follow turn_complete
                assert now >= last and state["busy"] is False
                assert [(await again.receive())["seq"] for _ in range(last - 1, now + 1)] == \
                    list(range(last - 1, now + 1))
                await again.send({"type": "message", "text": "more"})
                end = await again.until(lambda m: event_type(m) == "turn_complete")
                assert end["event"]["text"] == "second answer"
            # a reload (since 0) gets everything, in order
            async with srv.connect() as reload:
                await reload.hello()
                end = await reload.until(lambda m: event_type(m) == "turn_complete"
                                         and m["event"]["text"] == "second answer")
                got = [m["seq"] for m in reload.seen if m["type"] == "event"]
                # in order; a finished message's deltas come as one event (its last number)
                assert got == sorted(set(got)) and got[0] == 1 and got[-1] == end["seq"]
                texts = "".join(m["event"]["text"] for m in reload.seen
                                if event_type(m) == "text_delta")
                assert texts == "Hello from the **fake** modelsecond answer"
    [first, second] = [r for r in server.requests if r.wire is not None]
    assert first.last_user_text() == "say hello" and second.last_user_text() == "more"


async def test_an_approval_is_answered_by_one_viewer_and_closed_for_the_other(
        workspace, home, configure):
    script = [reply(tool_calls=[tool_call("write", {"file_path": "note.txt", "content": "hi"})]),
              reply("WROTE-IT")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with serve_nyz(workspace, home) as srv, srv.connect() as one, \
                srv.connect() as two:
            await one.hello()
            await two.hello()
            await one.send({"type": "message", "text": "write a note"})
            asked = await two.until(lambda m: event_type(m) == "approval_request")
            request_id = asked["event"]["request_id"]
            assert asked["event"]["tool"] == "write"
            assert not (workspace / "note.txt").exists()
            # a typo is an error, never a silent deny
            await two.send({"type": "approve", "request_id": request_id, "answer": "yess"})
            error = await two.until(lambda m: m["type"] == "error")
            assert "yess" in error["message"] and "Traceback" not in error["message"]
            # the state of a viewer arriving now shows what waits
            async with srv.connect() as late:
                _, state = await late.hello()
                assert [p["request_id"] for p in state["pending"]] == [request_id]
            await two.send({"type": "approve", "request_id": request_id, "answer": "approve"})
            await one.until(lambda m: m == {"type": "resolved", "request_id": request_id})
            await one.until(lambda m: event_type(m) == "turn_complete")
            assert (workspace / "note.txt").read_text() == "hi"
            await one.send({"type": "approve", "request_id": request_id, "answer": "deny"})
            error = await one.until(lambda m: m["type"] == "error")
            assert "already answered" in error["message"]


async def test_a_question_is_answered_from_the_client(workspace, home, configure):
    options = [{"value": "pg", "label": "PostgreSQL"}, {"value": "lite", "label": "SQLite"}]
    script = [reply(tool_calls=[tool_call("ask_user", {"question": "Which database?",
                                                       "options": options})]),
              reply("USING-IT")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with serve_nyz(workspace, home) as srv, srv.connect() as client:
            await client.hello()
            await client.send({"type": "message", "text": "pick a database"})
            asked = await client.until(lambda m: event_type(m) == "user_question")
            await client.send({"type": "answer", "request_id": asked["event"]["request_id"],
                               "text": "lite"})
            done = await client.until(lambda m: event_type(m) == "tool_done")
            assert "lite" in done["event"]["output"]
            await client.until(lambda m: event_type(m) == "turn_complete")


async def test_cancel_stops_a_running_bash_and_leaves_no_process(workspace, home, configure):
    marker = "876549"
    command = f"sleep {marker} & echo READY-TO-$((6*7)); sleep {marker}"
    script = [reply(tool_calls=[tool_call("bash", {"command": command, "timeout": 600})]),
              reply("after the cancel")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"),
                  extra='[agent.sandbox]\nlevel = "full-access"\n')
        async with serve_nyz(workspace, home, "--trust", "full") as srv, \
                srv.connect() as client:
            await client.hello()
            await client.send({"type": "message", "text": "run it"})
            await client.until(lambda m: event_type(m) == "tool_output_delta"
                               and "READY-TO-42" in m["event"]["text"])
            assert await started_running(marker)
            await client.send({"type": "cancel", "agent": "/agents/main", "scope": "subtree"})
            end = await client.until(lambda m: event_type(m) == "turn_complete")
            assert end["event"]["stop_reason"] == "cancelled"
            assert await settled_running(marker) == []
            await client.send({"type": "message", "text": "still there?"})
            end = await client.until(lambda m: event_type(m) == "turn_complete")
            assert end["event"]["text"] == "after the cancel"


async def test_a_slash_command_runs_from_the_one_table(workspace, home, configure):
    async with open_fake_llm(script=[]) as server:
        configure(workspace, server.url_for("openai"))
        async with serve_nyz(workspace, home) as srv, srv.connect() as client:
            welcome, _ = await client.hello()
            names = {c["name"] for c in welcome["commands"]}
            assert {"/status", "/help", "/model"} <= names and "/clear" not in names
            await client.send({"type": "command", "line": "/status"})
            out = await client.until(lambda m: m["type"] == "output")
            assert "fake-model-1" in out["text"] and "trust" in out["text"]
            await client.send({"type": "command", "line": "/nonsense"})
            out = await client.until(lambda m: m["type"] == "output")
            assert out["kind"] == "error" and "unknown command /nonsense" in out["text"]
    assert not [r for r in server.requests if r.wire is not None]  # nothing reached the model


async def test_bad_messages_get_one_line_and_an_oversized_one_closes_the_connection(
        workspace, home, configure):
    async with open_fake_llm(script=[]) as server:
        configure(workspace, server.url_for("openai"))
        async with serve_nyz(workspace, home, "serve", "--max-message", "4096") as srv:
            async with srv.connect() as client:
                await client.send({"type": "hello", "protocol": 99})
                error = await client.receive()
                assert error["type"] == "error" and "protocol 99" in error["message"]
            async with srv.connect() as client:
                await client.hello()
                for bad, words in (("not json", "not JSON"), ("[1]", "JSON object"),
                                   (json.dumps({"type": "launch"}), "unknown message type"),
                                   (json.dumps({"type": "message", "text": 5}), "'text'"),
                                   (json.dumps({"type": "cancel", "scope": "all"}), "scope")):
                    await client.ws.send_message(bad)
                    error = await client.until(lambda m: m["type"] == "error")
                    assert words in error["message"] and "\n" not in error["message"]
                await client.send({"type": "message", "text": "x" * 10_000})
                with pytest.raises(ConnectionClosed) as closed:
                    await client.until(lambda m: False)
                assert closed.value.reason.code == 1009


async def test_a_client_that_stops_reading_is_dropped_while_the_agent_goes_on(
        workspace, home, configure):
    # 400 deltas of 2000 characters, one every 2 ms: a reading client keeps up; the stalled
    # one fills its 4 KiB receive buffer, the server's 128 KiB send buffer and its queue
    long = "".join(f"{n:05d}" + "x" * 1994 + "\n" for n in range(400))
    script = [reply(long, chunk_size=2000, delay=0.002), reply("still answering")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with serve_nyz(workspace, home, "serve", "--send-queue", "64") as srv, \
                srv.connect() as reader, srv.connect_stalled() as stalled:
            await reader.hello()
            await stalled.send({"type": "hello", "protocol": 1})
            await reader.send({"type": "message", "text": "talk a lot"})
            end = await reader.until(lambda m: event_type(m) == "turn_complete")
            assert end["event"]["text"] == long
            await reader.send({"type": "message", "text": "and again"})
            end = await reader.until(lambda m: event_type(m) == "turn_complete")
            assert end["event"]["text"] == "still answering"
            assert "dropped a viewer that stopped reading" in srv.stderr.decode()
            with pytest.raises(ConnectionClosed), trio.fail_after(60):  # noqa: PT012
                while True:
                    await stalled.ws.get_message()


async def test_serve_team_shows_the_lead_and_its_teammates_and_outlives_its_viewers(
        workspace, home, configure):
    script = PerAgent({
        "LEAD-TASK": [reply(tool_calls=[tool_call("spawn_teammate", {
            "name": "alice", "message": "ALICE-JOB say hello to the lead"})]),
            reply("alice is on it")],
        "ALICE-JOB": [reply("hello from alice"), reply("alice again")],
    })
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with serve_nyz(workspace, home, "serve", "--team-name", "crew") as srv:
            async with srv.connect() as client:
                await client.hello()
                await client.send({"type": "message", "text": "LEAD-TASK: start alice"})
                await client.until(lambda m: event_type(m) == "turn_complete"
                                   and m["event"]["agent"] == "/team/crew/alice")
            # every viewer has left: the runtime goes on, and a new one sees the tree
            async with srv.connect() as client:
                _, state = await client.hello()
                paths = {a["path"] for a in state["agents"]}
                assert {"/agents/main", "/team/crew/alice"} <= paths
                # the replay (since 0) has the teammate's answer, tagged with its path
                done = await client.until(lambda m: event_type(m) == "turn_complete"
                                          and m["event"]["text"] == "hello from alice")
                assert done["event"]["agent"] == "/team/crew/alice"
                # a message to the teammate, by path, lands in its inbox and wakes it
                await client.send({"type": "message", "agent": "/team/crew/alice",
                                   "text": "one more thing"})
                await client.until(lambda m: event_type(m) == "turn_complete"
                                   and m["event"]["text"] == "alice again")
    [_, again] = script.seen["ALICE-JOB"]
    assert "one more thing" in again.last_user_text()


async def test_serving_another_machine_needs_allow_remote(workspace, home):
    for host in ("0.0.0.0", "10.1.2.3", "::"):
        proc = await run_nyz(workspace, home, "serve", "--host", host, "--port", "0")
        assert proc.returncode == 1 and b"--allow-remote" in proc.stderr, host
        assert b"Traceback" not in proc.stderr


async def test_connections_are_limited(workspace, home, configure):
    async with open_fake_llm(script=[]) as server:
        configure(workspace, server.url_for("openai"))
        async with serve_nyz(workspace, home, "serve", "--max-connections", "2") as srv, \
                srv.connect() as one, srv.connect() as two:
            await one.hello()
            await two.hello()
            with pytest.raises(ConnectionRejected) as refused:
                async with srv.connect():
                    pass
            assert refused.value.status_code == 429


async def test_what_reaches_the_browser_is_redacted(workspace, home, configure):
    # the configured key (sk-test-key) in the model's answer, in a tool's output and in an
    # error a command reports: none of them reaches a client
    script = [reply("the key is sk-test-key, see", tool_calls=[tool_call(
        "bash", {"command": "echo sk-test-key"})]), reply("done: sk-test-key")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"),
                  extra='[agent.sandbox]\nlevel = "full-access"\n')
        async with serve_nyz(workspace, home, "--trust", "full") as srv, \
                srv.connect() as client:
            await client.hello()
            await client.send({"type": "message", "text": "show me"})
            await client.until(lambda m: event_type(m) == "turn_complete")
            await client.send({"type": "command", "line": "/model sk-test-key"})
            await client.until(lambda m: m["type"] in ("output", "error"))
            await client.send({"type": "message", "text": "x", "agent": "/agents/sk-test-key"})
            await client.until(lambda m: m["type"] == "error")
            wire = json.dumps(client.seen)
            assert "sk-test-key" not in wire and "redacted" in wire


async def test_a_connection_starts_a_new_session_or_attaches_to_one_by_id(
        workspace, home, configure):
    async with open_fake_llm(script=[reply("in the new one")]) as server:
        configure(workspace, server.url_for("openai"))
        async with serve_nyz(workspace, home) as srv:
            async with srv.connect() as client:
                first, _ = await client.hello()
            async with srv.connect() as client:
                welcome, state = await client.hello(session="new")
                new = welcome["session_id"]
                assert new != first["session_id"] and state["seq"] >= 0
                assert set(welcome["sessions"]) == {first["session_id"], new}
                await client.send({"type": "message", "text": "hi"})
                await client.until(lambda m: event_type(m) == "turn_complete")
            async with srv.connect() as client:
                welcome, _ = await client.hello(session=new)
                assert welcome["session_id"] == new
                done = await client.until(lambda m: event_type(m) == "turn_complete")
                assert done["event"]["text"] == "in the new one"
            async with srv.connect() as client:  # the first session saw none of it
                await client.hello(session=first["session_id"])
                await client.send({"type": "command", "line": "/status"})
                await client.until(lambda m: m["type"] == "output")
                assert not [m for m in client.seen if event_type(m) == "turn_complete"]
            async with srv.connect() as client:
                await client.send({"type": "hello", "protocol": 1, "session": "no-such-id"})
                error = await client.receive()
                assert error == {"type": "error",
                                 "message": "no session 'no-such-id' on this server"}


async def test_serve_team_attaches_to_a_running_team_without_becoming_its_lead(
        workspace, home, configure):
    """A real ``nyz team start --headless`` lead runs (its model request held); ``nyz serve
    --team`` shows its lead and teammate, and a browser's message wakes the teammate."""
    lead_waits, alice_asked, alice_may_answer = trio.Event(), trio.Event(), trio.Event()

    async def hold(request):
        lead_waits.set()
        await trio.sleep_forever()

    async def alice(request):
        alice_asked.set()
        await alice_may_answer.wait()
        return reply("alice read the browser's message")

    script = PerAgent({
        "LEAD-TASK": [reply(tool_calls=[tool_call("task_create", {"subject": "one"})]),
                      hold, hold],
        "ALICE-JOB": [alice, alice]})
    env = nyz_env(home)
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        lead = await trio.lowlevel.open_process(
            [*NYZ, "team", "start", "crew", "--members", "alice:worker", "--task",
             "LEAD-TASK", "--headless"],
            cwd=workspace, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            with trio.fail_after(120):
                await lead_waits.wait()
            async with serve_nyz(workspace, home, "serve", "--team", "crew") as srv, \
                    srv.connect() as client:
                _, state = await client.hello()
                tree = {a["path"]: a for a in state["agents"]}
                assert tree["/team/crew/lead"]["status"] == "running"
                assert f"pid {lead.pid}" in tree["/team/crew/lead"]["detail"]
                assert "tasks: 1 pending" in tree["/team/crew/lead"]["detail"]
                assert tree["/team/crew/alice"]["detail"].startswith("worker, ")
                assert "/agents/main" in tree  # the served session itself, as ever
                await client.send({"type": "message", "agent": "/team/crew/alice",
                                   "text": "ALICE-JOB: a word from the browser"})
                sent = await client.until(lambda m: event_type(m) == "team_message")
                assert (sent["event"]["agent"], sent["event"]["sender"], sent["event"]["to"]) \
                    == ("/team/crew/alice", "user", "alice")
                inbox = TeamStore(env).inbox("crew", "alice").messages()
                assert [(m.sender, m.text) for m in inbox if m.sender == "user"] == \
                    [("user", "ALICE-JOB: a word from the browser")]
                with trio.fail_after(60):
                    await alice_asked.wait()  # the teammate woke and asked its model
                # the tree follows the store: alice's status file says running, an event too
                assert tree["/team/crew/alice"]["status"] != "running"
                await client.until(lambda m: event_type(m) == "agent_status"
                                   and m["event"]["agent"] == "/team/crew/alice"
                                   and m["event"]["status"] == "running")
                alice_may_answer.set()
                # not a second lead: the lease is still the lead's
                assert lead_pid(TeamStore(env).team_dir("crew")) == lead.pid
                for bad in ({"type": "cancel", "agent": "/team/crew/alice"},
                            {"type": "message", "agent": "/team/crew/alice/sub", "text": "x"},
                            {"type": "message", "agent": "/team/crew/nobody", "text": "x"},
                            {"type": "message", "agent": "/team/crew/all", "text": "x"},
                            {"type": "message", "agent": "/team/crew/../crew/alice",
                             "text": "x"}):
                    await client.send(bad)
                    error = await client.until(lambda m: m["type"] == "error")
                    assert "\n" not in error["message"] and "Traceback" not in error["message"]
                assert any("nyz team stop crew" in m.get("message", "") for m in client.seen)
                assert any("no member 'nobody'" in m.get("message", "") for m in client.seen)
                inbox = TeamStore(env).inbox("crew", "alice").messages()
                assert [m.text for m in inbox if m.sender == "user"] == \
                    ["ALICE-JOB: a word from the browser"]  # none of the refused ones landed
                assert "/team/crew/all" not in {m["event"]["agent"] for m in client.seen
                                                if m["type"] == "event"}
                # the lead ends: the tree shows it without a viewer reconnecting
                lead.kill()
                await lead.wait()
                gone = await client.until(lambda m: event_type(m) == "agent_status"
                                          and m["event"]["agent"] == "/team/crew/lead")
                assert gone["event"]["status"] == "shutdown"
                assert gone["event"]["detail"].startswith("no lead running")
        finally:
            if lead.returncode is None:
                lead.kill()
            await lead.wait()


async def test_serve_team_refuses_a_missing_team_and_team_name_with_it(workspace, home):
    missing = await run_nyz(workspace, home, "serve", "--team", "nosuch", "--port", "0")
    assert missing.returncode == 1 and b"Traceback" not in missing.stderr
    assert b"--team nosuch: no team 'nosuch'" in missing.stderr
    both = await run_nyz(workspace, home, "serve", "--team", "a", "--team-name", "b")
    assert both.returncode == 2 and b"give one of them" in both.stderr
    before = await run_nyz(workspace, home, "--team", "crew", "serve")
    assert before.returncode == 2 and b"put it after serve" in before.stderr


async def test_serve_team_shows_a_detached_teammates_stream_after_its_lead_left(
        workspace, home, configure):
    """A ``--detach`` teammate outlives its lead and logs its events: a browser attached with
    ``--team`` messages it and sees its answer stream in, tagged with its path."""
    async with open_fake_llm(script=PerAgent({"AMY-JOB": [reply("amy answers the browser")]})) \
            as server:
        configure(workspace, server.url_for("openai"))
        try:
            with trio.fail_after(120):
                started = await run_nyz(workspace, home, "team", "start", "det", "--members",
                                        "amy:worker", "--teammate-mode", "process", "--detach",
                                        "--headless")
            assert started.returncode == 0, started.stderr.decode()[-3000:]
            async with serve_nyz(workspace, home, "serve", "--team", "det") as srv, \
                    srv.connect() as client:
                _, state = await client.hello()
                tree = {a["path"]: a for a in state["agents"]}
                assert tree["/team/det/lead"]["status"] == "shutdown"
                assert "/team/det/amy" in tree
                assert b"has no running lead" in srv.stderr
                await client.send({"type": "message", "agent": "/team/det/amy",
                                   "text": "AMY-JOB: hello from the browser"})
                done = await client.until(lambda m: event_type(m) == "turn_complete"
                                          and m["event"]["agent"] == "/team/det/amy")
                assert done["event"]["text"] == "amy answers the browser"
                deltas = [m["event"]["text"] for m in client.seen
                          if event_type(m) == "text_delta"
                          and m["event"]["agent"] == "/team/det/amy"]
                assert "".join(deltas) == "amy answers the browser"
                # a reload replays it
                async with srv.connect() as again:
                    await again.hello()
                    await again.until(lambda m: event_type(m) == "turn_complete"
                                      and m["event"]["agent"] == "/team/det/amy")
        finally:
            stopped = await run_nyz(workspace, home, "team", "stop", "det")
            assert stopped.returncode == 0, stopped.stderr.decode()


@pytest.mark.parametrize("via", ["file", "env"])
async def test_the_token_from_a_file_or_the_environment_is_not_in_the_command_line(
        workspace, home, configure, via):
    secret = f"tok-{via}-9f8e7d6c5b4a39281706"
    async with open_fake_llm(script=[]) as server:
        configure(workspace, server.url_for("openai"))
        async with serve_nyz(workspace, home, token=secret, token_via=via) as srv:
            cmdline = Path(f"/proc/{srv.proc.pid}/cmdline").read_bytes()  # noqa: ASYNC240
            assert secret.encode() not in cmdline
            assert (await srv.http(_get(f"/static/app.js?token={secret}", srv.port)))[0] == 200
            assert (await srv.http(_get("/static/app.js?token=nope", srv.port)))[0] == 401
            assert secret not in srv.stderr.decode()  # a given token is never printed


@pytest.mark.parametrize("problem", ["missing", "empty", "fifo", "both"])
async def test_a_bad_token_file_is_one_line(workspace, home, problem):
    path = home / "token"
    if problem == "empty":
        path.write_text("\n")
    elif problem == "fifo":
        os.mkfifo(path)
    args = ["serve", "--port", "0", "--token-file", str(path)]
    if problem == "both":
        path.write_text("x\n")
        args += ["--token", "y"]
    with trio.fail_after(30):
        proc = await run_nyz(workspace, home, *args)
    [line] = proc.stderr.decode().splitlines()
    assert proc.returncode == 2 and line.startswith("nyz serve: ")
    assert ("not both" in line) if problem == "both" else f"--token-file {path}" in line


async def test_a_background_process_is_shown_and_killed_from_the_web_console(
        workspace, home, configure):
    from nyzhi.testing.cli import wait_gone

    marker = f"nyzbg-web-{workspace.parent.name}"
    script = [reply(tool_calls=[tool_call("bash", {
        "command": f"exec -a {marker} sleep 300", "run_in_background": True, "yield_ms": 0})]),
        reply("started it")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"), extra='[agent.trust]\nmode = "full"\n')
        async with serve_nyz(workspace, home) as srv, srv.connect() as client:
            await client.hello()
            await client.send({"type": "message", "text": "start it"})
            started = await client.until(lambda m: event_type(m) == "process_start")
            assert started["event"]["shell_id"] == "bg_1"
            assert started["event"]["agent"] == "/agents/main"
            await client.until(lambda m: event_type(m) == "turn_complete")
            pids = await started_running(marker)
            await client.send({"type": "kill_shell", "id": "bg_1"})
            ended = await client.until(lambda m: event_type(m) == "process_exit")
            assert ended["event"]["state"] == "killed"
            await wait_gone(pids)
            await client.send({"type": "kill_shell", "id": "bg_9"})
            refused = await client.until(lambda m: m.get("type") == "error")
            assert "unknown background shell 'bg_9'" in json.dumps(refused)
