"""open_runtime end to end in-process, over real HTTP against the scripted fake LLM."""

from __future__ import annotations

from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call
from nyzhi.testing.runtime import run_turn


async def test_tool_use_and_answer(workspace, configure):
    (workspace / "hello.txt").write_text("hello world\n")
    script = [
        reply(tool_calls=[tool_call("read", {"file_path": "hello.txt"})]),
        reply("The file says hello world."),
    ]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            handle, events = await run_turn(rt, "what does hello.txt say?")
    assert handle.outcome.text == "The file says hello world."
    kinds = [e.type for e in events]
    assert kinds.index("tool_start") < kinds.index("tool_done") < kinds.index("turn_complete")
    done = next(e for e in events if e.type == "tool_done")
    assert "hello world" in done.output and not done.is_error
    # the second request carried the tool result back to the model
    assert "hello world" in server.requests[1].tool_results()[0]
    assert all(e.agent == "/agents/main" for e in events)


async def test_agents_and_tool_executors_are_actors_in_one_tree(workspace, configure):
    import nyzhi

    async with open_fake_llm(script=[reply("hi")]) as server:
        configure(workspace, server.url_for("openai"))
        async with nyzhi.open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            sub = await rt.spawn_agent("explorer")
            await sub.wait_running()  # its started() has spawned its tool executor
            paths = {ref.path for ref in rt.system.actors()}
            assert {"/agents", "/agents/main", "/agents/main/tools",
                    "/agents/main/explorer", "/agents/main/explorer/tools"} <= paths
            # stopping the parent stops its whole subtree
            await rt.main.stop()
            assert sub.status.terminal
            assert rt.system.lookup("/agents/main/explorer/tools") is None


async def test_system_prompt_carries_environment_rules_and_instructions(workspace, configure):
    (workspace / "AGENTS.md").write_text("Always write tests first.\n")
    extra = '[agent]\ncustom_instructions = "Answer in French."\n'
    async with open_fake_llm(script=[reply("oui")]) as server:
        configure(workspace, server.url_for("openai"), extra=extra)
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            handle = await rt.submit("hi")
            await handle.wait()
    system = next(text for role, text in server.requests[0].transcript() if role == "system")
    assert "Always write tests first." in system
    assert "Answer in French." in system
    assert f"working directory: {workspace}" in system
    # tools travel as schemas with the request
    names = {t["function"]["name"] for t in server.requests[0].json["tools"]}
    assert {"read", "edit", "bash", "grep"} <= names


async def test_unparseable_tool_arguments_go_back_to_the_model(workspace, configure):
    """One argument parser (nyzhi.provider.arguments): its error is the call's result."""
    script = [reply(tool_calls=[tool_call("read", '{"file_path": "a.txt", ')]), reply("retrying")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            handle, events = await run_turn(rt, "read a.txt")
    assert handle.outcome.text == "retrying"
    [result] = server.requests[1].tool_results()
    assert "invalid tool arguments: not valid JSON" in result and "a.txt" in result
    done = next(e for e in events if e.type == "tool_done")
    assert done.is_error


async def test_a_new_session_made_beside_the_assembly_is_the_one_everything_uses(
        workspace, home, configure):
    """A new session's files are created in a worker thread while the runtime is assembled
    (nyzhi.core.runtime.assembly.NewSession); the id chosen up front is the one the log, the hooks,
    the tools and the runtime all carry, and the first turn is recorded in that log."""
    from nyzhi.core.runtime.sessions import SessionStore

    async with open_fake_llm(script=[reply("hi")]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            sid = rt.session_id
            assert rt.tooling.context.session_id == sid and rt.hooks.session_id == sid
            store = SessionStore()
            assert store.log_path(sid).is_file() and store.meta_path(sid).is_file()
            handle, _events = await run_turn(rt, "hello")
    assert handle.outcome.text == "hi"
    session = SessionStore().load(sid)
    assert [m.content for m in session.messages] == ["hello", "hi"]
