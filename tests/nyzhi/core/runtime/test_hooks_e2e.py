"""Every hook event fires from the real runtime, with tools, subagents and sessions."""

from __future__ import annotations

from nyzhi.core.loop.agent import Close, UserInput
from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime
from nyzhi.core.runtime.sessions.store import SessionStore
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call

EVENTS = (
    "session_start", "user_prompt_submit", "pre_tool_use", "post_tool_use", "after_edit",
    "after_turn", "subagent_start", "subagent_stop", "session_end",
)


def hooks_toml(log):
    return "".join(
        f'[[agent.hooks]]\nevent = "{e}"\ncommand = "echo {e} >> {log}"\ntimeout = 10\n\n'
        for e in EVENTS
    )


async def run_turn(ref_or_rt, prompt):
    handle = await (ref_or_rt.submit(prompt) if hasattr(ref_or_rt, "submit")
                    else ref_or_rt.ask(UserInput(prompt)))
    return await handle.wait()


async def test_every_hook_event_fires(workspace, configure, tmp_path):
    log = tmp_path / "hooks.log"
    script = [
        reply(tool_calls=[tool_call("write", {"file_path": "out.txt", "content": "hi"})]),
        reply("written"),
        reply("sub answer"),
    ]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"), extra=hooks_toml(log))
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full")) as rt:
            outcome = await run_turn(rt, "write a file")
            assert outcome.text == "written"
            sub = await rt.spawn_agent("helper")
            assert sub.path == "/agents/main/helper"
            assert (await run_turn(sub, "help")).text == "sub answer"
            await sub.ask(Close())
            await sub.join()
    fired = log.read_text().split()
    for event in EVENTS:
        assert event in fired, (event, fired)
    assert fired[0] == "session_start" and fired[-1] == "session_end"
    assert fired.index("pre_tool_use") < fired.index("post_tool_use") < fired.index("after_edit")
    assert (workspace / "out.txt").read_text() == "hi"


async def test_pre_tool_use_hook_blocks_with_exit_2(workspace, configure):
    extra = (
        '[[agent.hooks]]\nevent = "pre_tool_use"\ntool_name = "bash"\n'
        'command = "echo no shell today >&2; exit 2"\n'
    )
    script = [reply(tool_calls=[tool_call("bash", {"command": "touch made-it"})]), reply("ok")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"), extra=extra)
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full")) as rt:
            await run_turn(rt, "run it")
    assert not (workspace / "made-it").exists()
    assert "no shell today" in server.requests[1].tool_results()[0]


async def test_user_prompt_submit_can_block(workspace, configure):
    extra = '[[agent.hooks]]\nevent = "user_prompt_submit"\ncommand = "echo secret prompt >&2; exit 2"\n'
    async with open_fake_llm(script=[reply("never")]) as server:
        configure(workspace, server.url_for("openai"), extra=extra)
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            outcome = await run_turn(rt, "hello")
    assert outcome.is_error and outcome.stop_reason == "blocked"
    assert server.requests == []


async def test_compaction_then_resume_from_compacted_thread(workspace, configure):
    # half of a 24000-token window: 12000 tokens, some 4000 more than nyz's prompt and tools
    extra = "[agent]\nauto_compact_threshold = 0.5\n[provider.fake.models.\"fake-model-1\"]\n" \
            "context_window = 24000\n"
    big = "lorem ipsum " * 600  # ~1800 tokens a prompt
    # the 5th turn is the first with more than the 6 kept messages before it: it compacts
    script = [*(reply(f"a{i}") for i in range(4)), reply("SUMMARY OF WORK"), reply("a4"),
              reply("SECOND SUMMARY"), reply("after resume")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"), extra=extra)
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            for i in range(5):
                await run_turn(rt, f"{i} {big}")
            session_id = rt.session_id
        # the summary request went to the model, and the archive holds the full history
        assert any("Summarise the conversation" in r.last_user_text() for r in server.requests)
        archives = list((workspace / ".nyzhi" / "context" / "history").glob("*.jsonl"))
        assert archives
        session = SessionStore().load(session_id)
        assert "SUMMARY OF WORK" in session.messages[0].content
        before = len(server.requests)
        async with open_runtime(RuntimeOptions(cwd=workspace, session=session_id[:8])) as rt:
            assert (await run_turn(rt, "continue")).text == "after resume"
        # the resumed thread began at the compacted thread (still over the threshold, so it
        # compacted again: that summary request carries the first summary)
        resumed_first = server.requests[before]
        assert "SUMMARY OF WORK" in resumed_first.last_user_text()
        # the second prompt was summarised away; the first one stays, in the state record
        assert "1 lorem" not in resumed_first.last_user_text()
        assert "First request of the session:\n  0 lorem" in resumed_first.last_user_text()
