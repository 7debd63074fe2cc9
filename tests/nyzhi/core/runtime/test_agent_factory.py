"""One factory builds every agent: main and subagents differ only in their ``AgentSpec``."""

from __future__ import annotations

import pytest

from nyzhi.core import events as ev
from nyzhi.core.loop.agent import UserInput
from nyzhi.core.runtime.agent_factory import AgentSpec, AgentSpecError
from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime
from nyzhi.core.runtime.sessions.store import SessionStore
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call


def test_child_specs_live_under_their_parent_and_narrow_its_fence():
    main = AgentSpec(session=object(), prompt_hooks=True, tools={"read", "grep", "bash"})
    child = main.child("explorer", tools={"read", "write"}, model="small", max_steps=3)
    assert child.path == "/agents/main/explorer" and child.name == "explorer"
    assert child.role == "subagent" and child.model == "small" and child.max_steps == 3
    assert child.tools == {"read"}  # never more than the parent
    assert child.session is None and child.prompt_hooks is False
    grandchild = child.child("grep-1", disallowed_tools={"read"})
    assert grandchild.path == "/agents/main/explorer/grep-1"
    assert grandchild.model == "small" and grandchild.tools == {"read"}
    assert grandchild.disallowed_tools == {"read"}


@pytest.mark.parametrize("nickname", ["", "a/b", "../x", "white space", "x" * 65, "tools"])
def test_bad_nicknames_are_refused(nickname):
    with pytest.raises(AgentSpecError, match="nickname"):
        AgentSpec().child(nickname)


def test_paths_outside_the_main_agent_are_refused():
    with pytest.raises(AgentSpecError, match="must be /agents/main"):
        AgentSpec(path="/services/x")


async def test_a_child_spec_runs_with_its_own_model_tools_and_budget(workspace, configure, tmp_path):
    log = tmp_path / "prompts.log"
    extra = (f'[[agent.hooks]]\nevent = "user_prompt_submit"\n'
             f'command = "cat >> {log}; echo >> {log}"\n')
    script = [
        reply("main answer"),
        reply(tool_calls=[tool_call("read", {"file_path": "a.txt"})]),
    ]
    (workspace / "a.txt").write_text("alpha\n")
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"), extra=extra)
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            assert (await (await rt.submit("main prompt")).wait()).text == "main answer"
            spec = rt.main_agent.spec.child(
                "reviewer", model="review-model", tools={"read", "grep"}, max_steps=1,
                role_prompt="You review code.",
            )
            async with rt.subscribe() as events:
                ref = await rt.spawn(spec)
                assert ref.path == "/agents/main/reviewer"
                outcome = await (await ref.ask(UserInput("review prompt"))).wait()
                seen = []
                async for event in events:
                    seen.append(event)
                    if isinstance(event, ev.TurnComplete):
                        break
            session_id = rt.session_id
    # its own model, per request, and only its fenced tools
    main_req, sub_req = server.requests
    assert main_req.json["model"] == "fake-model-1" and sub_req.json["model"] == "review-model"
    assert {t["function"]["name"] for t in sub_req.json["tools"]} == {"read", "grep"}
    assert sub_req.json["messages"][0]["content"].startswith("You review code.")
    # its own budget: one step, then it stops
    assert outcome.stop_reason == "max_steps" and outcome.is_error
    assert all(e.agent == "/agents/main/reviewer" for e in seen)
    # only a person's input fires user_prompt_submit, only the main thread is journaled
    assert "main prompt" in log.read_text() and "review prompt" not in log.read_text()
    history = SessionStore().load(session_id).history
    assert [m.content for m in history if m.role == "user"] == ["main prompt"]


async def test_spawning_under_a_missing_parent_is_an_error(workspace, configure):
    async with open_fake_llm(script=[]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            with pytest.raises(LookupError, match="no running agent at /agents/main/nobody"):
                await rt.spawn(AgentSpec("/agents/main/nobody/child"))


def test_runtime_options_map_every_flag_once():
    """``nyz run`` and the chat build their options through one mapping."""
    import argparse

    from nyzhi.front.flags import runtime_options

    args = argparse.Namespace(provider="p", model="m", trust="full", sandbox="read-only",
                              max_steps=7, ephemeral=True, continue_=True, session="s")
    opts = runtime_options(args, interactive=True)
    assert (opts.provider, opts.model, opts.trust, opts.sandbox, opts.max_steps) == (
        "p", "m", "full", "read-only", 7)
    assert opts.ephemeral and opts.continue_latest and opts.session == "s" and opts.interactive
    bare = runtime_options(argparse.Namespace(), interactive=False)
    assert bare.provider is None and bare.max_steps is None and not bare.ephemeral


async def test_overrides_reach_the_runtime_through_config(workspace, configure):
    """--model, --max-steps, --trust and --sandbox go through Config.with_overrides."""
    script = [reply(tool_calls=[tool_call("write", {"file_path": "x.txt", "content": "x"})])]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        options = RuntimeOptions(cwd=workspace, model="override-model", max_steps=1,
                                 trust="full", sandbox="read-only")
        async with open_runtime(options) as rt:
            async with rt.subscribe() as events:
                outcome = await (await rt.submit("write x")).wait()
                done = [e async for e in _until_turn_complete(events)
                        if isinstance(e, ev.ToolDone)]
            assert rt.model == "override-model"
    assert server.requests[0].json["model"] == "override-model"
    assert outcome.stop_reason == "max_steps"  # one step allowed
    # trust full let the write through the approval gate; the read-only sandbox refused it
    assert done[0].is_error and "read-only" in done[0].output
    assert not (workspace / "x.txt").exists()


async def _until_turn_complete(events):
    async for event in events:
        yield event
        if isinstance(event, ev.TurnComplete):
            return
