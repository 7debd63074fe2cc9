"""``nyz acp`` driven by the official ACP client (the TypeScript SDK, which validates every
message nyz sends against the protocol's schema), as an editor would: a real ``nyz acp``
process, the scripted fake LLM behind it."""

from __future__ import annotations

import random
from pathlib import Path

import trio

from nyzhi.testing.cli import settled_running, started_running, wait_gone
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call


async def test_initialize_new_session_and_a_streamed_prompt(acp_client, workspace, configure):
    (workspace / ".nyzhi" / "commands").mkdir()
    (workspace / ".nyzhi" / "commands" / "review.md").write_text(
        "---\ndescription: review the diff\n---\nReview $ARGUMENTS\n")
    async with open_fake_llm(script=[reply("Hello from nyz, streamed", thinking="pondering")]) \
            as server:
        configure(workspace, server.url_for("openai"))
        async with acp_client("basic") as client:
            init = (await client.step("initialized"))["result"]
            session = (await client.step("session"))["result"]
            prompted = await client.step("prompted")
            command = await client.step("command")
            assert (await client.step("agent-exited"))["code"] == 0
    assert init["protocolVersion"] == 1
    assert init["agentCapabilities"]["loadSession"] is True
    assert init["agentInfo"]["name"] == "nyz"
    assert init["authMethods"] == []  # a provider is configured: nothing to log in to
    assert session["sessionId"] and session["modes"]["currentModeId"] == "off"
    assert {m["id"] for m in session["modes"]["availableModes"]} >= {"plan", "full", "off"}
    assert prompted["stopReason"] == "end_turn"
    assert prompted["message"] == "Hello from nyz, streamed"
    assert prompted["messageChunks"] > 1  # streamed in chunks, not sent at the end
    assert prompted["thought"] == "pondering"
    assert {"help", "status", "compact", "plan", "review"} <= set(prompted["commands"])
    # /status ran from the command table, answered locally: only one request reached the model
    assert command["stopReason"] == "end_turn"
    assert "trust off" in command["message"] and session["sessionId"] in command["message"]
    assert len(server.requests) == 1


async def test_permission_allowed_once_then_rejected(acp_client, workspace, configure):
    todos = [{"id": "1", "content": "Write a.txt", "status": "in_progress"}]
    script = [
        reply(tool_calls=[tool_call("todowrite", {"todos": todos}),
                          tool_call("read", {"file_path": "a.txt"})]),
        reply(tool_calls=[tool_call("write", {"file_path": "a.txt", "content": "A"})]),
        reply("wrote a"),
        reply(tool_calls=[tool_call("write", {"file_path": "b.txt", "content": "B"})]),
        reply("b was refused"),
    ]
    (workspace / "a.txt").write_text("old A\n")
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with acp_client("permissions") as client:
            done = await client.step("done")
    assert done["stopReasons"] == ["end_turn", "end_turn"]
    assert (workspace / "a.txt").read_text() == "A"
    assert not (workspace / "b.txt").exists()
    first, second = done["permissions"]
    assert [o["kind"] for o in first["options"]] == ["allow_once", "allow_always", "reject_once"]
    assert first["toolCall"]["title"] == "write a.txt" and first["toolCall"]["kind"] == "edit"
    assert first["toolCall"]["locations"] == [{"path": str(workspace / "a.txt")}]
    assert second["toolCall"]["title"] == "write b.txt"
    # each shows its file before and after: an overwrite, then a new file
    assert first["toolCall"]["content"] == [{"type": "diff", "path": str(workspace / "a.txt"),
                                             "oldText": "old A\n", "newText": "A"}]
    assert second["toolCall"]["content"] == [{"type": "diff", "path": str(workspace / "b.txt"),
                                              "newText": "B"}]
    finals = {u["toolCallId"]: u["status"] for u in done["toolUpdates"]
              if u["sessionUpdate"] == "tool_call_update"}
    starts = {u["toolCallId"]: u["title"] for u in done["toolUpdates"]
              if u["sessionUpdate"] == "tool_call"}
    by_title = {title: finals[call] for call, title in starts.items()}
    assert by_title == {"todowrite": "completed", "read a.txt": "completed",
                        "write a.txt": "completed", "write b.txt": "failed"}
    [plan] = done["plans"]
    assert plan["entries"] == [{"content": "Write a.txt", "priority": "medium",
                                "status": "in_progress"}]
    assert "declined" in server.requests[4].tool_results()[-1]


async def test_files_go_through_the_editor(acp_client, workspace, configure):
    """A linked file is read from the editor's buffer (not the disk), and a file the agent
    writes is handed to the editor with its new text."""
    (workspace / "notes.md").write_text("text on disk\n")
    script = [reply(tool_calls=[tool_call("write", {"file_path": "summary.md",
                                                    "content": "tidied\n"})]),
              reply("done")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with acp_client("fs") as client:
            done = await client.step("done")
    assert done["stopReason"] == "end_turn"
    [read] = done["reads"]
    assert read["path"] == str(workspace / "notes.md")
    sent = server.requests[0].last_user_text()
    assert "UNSAVED BUFFER TEXT" in sent and "text on disk" not in sent
    assert "EMBEDDED CONTEXT" in sent  # a resource block's text is given as it is
    assert [(w["path"], w["content"]) for w in done["writes"]] == [
        (str(workspace / "summary.md"), "tidied\n")]
    assert (workspace / "summary.md").read_text() == "tidied\n"  # our gated tool wrote it


async def test_cancel_mid_bash_leaves_no_process(acp_client, workspace, configure):
    marker = f"300.{random.randrange(10**8):08d}"
    script = [reply(tool_calls=[tool_call("bash", {"command": f"echo started; sleep {marker}"})]),
              reply("still here")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with acp_client("cancel") as client:
            running = await client.step("running")
            assert await started_running(marker), "the bash should be running before the cancel"
            await client.go_on()
            cancelled = await client.step("cancelled")
            assert await settled_running(marker) == []  # gone before the prompt answered
            await client.go_on()
            after = await client.step("after")
    assert running["modes"]["currentModeId"] == "off"
    assert cancelled["stopReason"] == "cancelled"
    assert after["stopReason"] == "end_turn" and after["message"] == "still here"
    assert len(server.requests) == 2


async def test_two_sessions_at_once(acp_client, workspace, configure):
    async def answer(request):
        return reply(f"answer to {request.last_user_text().split()[-1]}")

    async with open_fake_llm(script=answer) as server:
        configure(workspace, server.url_for("openai"))
        async with acp_client("two") as client:
            done = await client.step("done")
    assert len(set(done["ids"])) == 2
    assert done["stopReasons"] == ["end_turn", "end_turn"]
    assert done["messages"] == ["answer to alpha", "answer to beta"]


async def test_load_replays_the_session_and_continues_it(acp_client, workspace, configure):
    script = [reply("I will remember plum"), reply("plum")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with acp_client("load") as client:
            first = await client.step("first")
            loaded = await client.step("loaded")
    assert loaded["response"]["modes"]["currentModeId"] == "off"
    assert loaded["replayed"] == [["user_message_chunk", "remember the word plum"],
                                  ["agent_message_chunk", "I will remember plum"]]
    assert loaded["stopReason"] == "end_turn"
    history = str(server.requests[1].json["messages"])
    assert "remember the word plum" in history and "I will remember plum" in history
    assert first["sessionId"]


async def test_errors_are_json_rpc_errors_and_the_agent_goes_on(acp_client, workspace,
                                                                 configure):
    async with open_fake_llm(script=[]) as server:
        configure(workspace, server.url_for("openai"))
        async with acp_client("errors") as client:
            done = await client.step("done")
    unknown, relative, mode = done["errors"]
    assert unknown["code"] == -32002 and "nope" in unknown["message"]
    assert relative["code"] == -32602 and "'cwd' must be an absolute path" in relative["message"]
    assert mode["code"] == -32602 and "'modeId' must be one of" in mode["message"]


async def test_the_editor_exiting_mid_turn_ends_everything(acp_client, workspace, home,
                                                           configure):
    """The client process exits while a bash runs: nyz sees its stdin close, cancels the
    turn, kills the bash, saves the session and exits."""
    import os

    from nyzhi.core.runtime.sessions.store import SessionStore

    marker = f"300.{random.randrange(10**8):08d}"
    script = [reply(tool_calls=[tool_call("bash", {"command": f"echo started; sleep {marker}"})])]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with acp_client("exit") as client:
            running = await client.step("running")
            assert await started_running(marker)
            nyz = os.pidfd_open(running["pid"])  # nyz is the client's child, not ours
            try:
                await client.go_on()
                with trio.fail_after(30):
                    await trio.lowlevel.wait_readable(nyz)  # readable once nyz has exited
            finally:
                os.close(nyz)
    assert await settled_running(marker) == []
    saved = SessionStore(home / ".local" / "share" / "nyzhi" / "sessions").load(
        running["sessionId"])
    assert any(getattr(e, "prompt", "") == "run the long thing" for e in saved.events)


async def test_bash_runs_in_the_editor_s_terminal_still_confined(acp_client, workspace, configure,
                                                                  monkeypatch):
    """With the terminal capability the editor runs bash: it is asked to run our bwrap command
    line with our environment, so the command is confined as ours would be (no write outside
    the workspace, none to its protected config, none of the editor's or nyz's secrets), its
    output is what the model gets, and a cancel kills it (terminal/kill) with nothing left."""
    monkeypatch.setenv("NYZ_TEST_SECRET_TOKEN", "nyz-secret-17")  # nyz's and the editor's env
    outside = Path("/var/tmp") / f"nyz-acp-outside-{random.randrange(10**8)}"
    marker = f"300.{random.randrange(10**8):08d}"
    first = ("echo in-terminal > inside.txt; echo x > " + str(outside)
             + " || echo outside-refused; echo y >> .nyzhi/config.toml || echo config-refused;"
             " echo \"tokens=${EDITOR_ONLY_TOKEN:-none},${NYZ_TEST_SECRET_TOKEN:-none}\"")
    script = [reply(tool_calls=[tool_call("bash", {"command": first})]), reply("ran it"),
              reply(tool_calls=[tool_call("bash", {"command": f"echo started; sleep {marker}"})])]
    try:
        async with open_fake_llm(script=script) as server:
            configure(workspace, server.url_for("openai"))
            config = (workspace / ".nyzhi" / "config.toml").read_text()
            async with acp_client("terminal") as client:
                done = await client.step("first")
                running = await client.step("running")
                # the process the editor spawned (bwrap) is the one running the command
                pids = await started_running(marker, including=running["pid"])
                await client.go_on()
                cancelled = await client.step("cancelled")
                await wait_gone(pids)  # the kernel ends bwrap's namespace with it
                assert await settled_running(marker) == []
        assert not outside.exists()
    finally:
        outside.unlink(missing_ok=True)
    assert done["stopReason"] == "end_turn"
    [created] = done["created"]  # the editor was asked once, to run our wrapped command
    assert created["command"].endswith("/env") and created["args"][0] == "-i"
    assert any(arg.endswith("/bwrap") for arg in created["args"])
    assert "--unshare-pid" in created["args"] and "--die-with-parent" in created["args"]
    assert created["cwd"] == str(workspace)
    env = {e["name"]: e["value"] for e in created["env"]}
    assert "NYZ_TEST_SECRET_TOKEN" not in env and env["HOME"]  # our policy's environment
    assert done["released"] == ["term-1"]
    # the model saw the terminal's output, confined
    result = server.requests[1].tool_results()[0]
    assert "outside-refused" in result and "config-refused" in result
    assert "tokens=none,none" in result
    assert (workspace / "inside.txt").read_text() == "in-terminal\n"
    assert (workspace / ".nyzhi" / "config.toml").read_text() == config
    # the call embeds the terminal while it runs and after it ends
    updates = [u for u in done["toolUpdates"] if u["sessionUpdate"] == "tool_call_update"]
    assert {"type": "terminal", "terminalId": "term-1"} in updates[-1]["content"]
    assert updates[-1]["status"] == "completed"
    assert cancelled["stopReason"] == "cancelled"
    assert cancelled["killed"] == ["term-2"] and cancelled["released"] == ["term-1", "term-2"]
    assert cancelled["exit"]["signal"] == "SIGTERM"


async def test_session_list_close_and_resume(acp_client, workspace, configure, home):
    """The stable v1 session/list, session/close and session/resume, driven by the official
    client (which validates each answer against the schema): closing saves the session and
    frees it; the list finds it by its cwd with its title; resume continues it without
    sending its history again, and the model sees the earlier turn."""
    from nyzhi.core.runtime.sessions.store import SessionStore

    script = [reply("noted"), reply("fig")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with acp_client("lifecycle") as client:
            done = await client.step("lifecycle")
            assert (await client.step("agent-exited"))["code"] == 0
    assert done["capabilities"] == {"list": {}, "resume": {}, "close": {}}
    assert done["closed"] == {}
    assert done["afterClose"]["code"] == -32002  # the closed session is gone from the agent
    [listed] = [s for s in done["listed"]["sessions"] if s["sessionId"] == done["sessionId"]]
    assert listed["cwd"] == str(workspace) and listed["title"] == "remember the word fig"
    assert listed["updatedAt"]
    assert all(s["sessionId"] != done["sessionId"] for s in done["elsewhere"]["sessions"])
    assert done["resumed"]["modes"]["currentModeId"] == "off"
    assert done["replayedOnResume"] == 0  # resume sends no history (load does)
    assert done["stopReason"] == "end_turn"
    assert "remember the word fig" in str(server.requests[-1].json)  # the thread went on
    saved = SessionStore(home / ".local" / "share" / "nyzhi" / "sessions").load(done["sessionId"])
    assert [m.content for m in saved.history if m.role == "user"][-1] == "which word?"


async def test_background_shells_are_shown_in_editor_terminals(acp_client, workspace, configure):
    """With the terminal capability a background shell stays nyz's process (its sandbox, its
    stdin, dead with nyz) and the editor gets a terminal viewing its redacted log, embedded
    in the bash call: kill_shell ends the process and the view is killed and released; a
    shell still running when the session closes ends with it, its view released first."""
    first_marker = f"300.{random.randrange(10**8):08d}"
    second_marker = f"300.{random.randrange(10**8):08d}"
    script = [
        reply(tool_calls=[tool_call("bash", {
            "command": f"echo bg-first-up; exec sleep {first_marker}",
            "run_in_background": True, "yield_ms": 0})]),
        reply("started"),
        reply(tool_calls=[tool_call("kill_shell", {"id": "bg_1"})]),
        reply("stopped"),
        reply(tool_calls=[tool_call("bash", {
            "command": f"echo bg-second-up; exec sleep {second_marker}",
            "run_in_background": True, "yield_ms": 0})]),
        reply("started again"),
    ]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with acp_client("background") as client:
            started = await client.step("started")
            first = await started_running(first_marker)
            # nyz runs it, not the editor: the editor's only process is the view
            [created] = started["created"]
            assert created["command"].endswith("/tail")
            # following the process nyz started (bwrap, running the command)
            [pid] = [int(a[6:]) for a in created["args"] if a.startswith("--pid=")]
            assert pid in first
            await client.go_on()
            stopped = await client.step("stopped")
            await wait_gone(first)
            assert await settled_running(first_marker) == []
            await client.go_on()
            await client.step("second")
            second = await started_running(second_marker)
            await client.go_on()
            closed = await client.step("closed")
            await wait_gone(second)
            assert await settled_running(second_marker) == []
            assert (await client.step("agent-exited"))["code"] == 0
    assert started["stopReason"] == "end_turn"
    assert "bg-first-up" in started["view"]
    assert "bg-first-up" in await trio.Path(created["args"][-1]).read_text()  # nyz's log
    # the call completed with its result, then the view was embedded beside that result
    [embedded] = started["embedded"]
    assert embedded["content"][0] == {"type": "terminal", "terminalId": "term-1"}
    assert "started bg_1" in str(embedded["content"][1:])
    assert started["finalStatus"] == "completed"
    assert stopped["killed"] == ["term-1"] and stopped["released"] == ["term-1"]
    assert stopped["exit"] is not None  # the view ended
    assert "bg_1" in server.requests[3].tool_results()[0]
    assert closed["released"] == ["term-1", "term-2"] and "term-2" in closed["killed"]
