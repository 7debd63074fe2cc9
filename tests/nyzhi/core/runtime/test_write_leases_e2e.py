"""Write leases in a real runtime: two subagents (Runtime.spawn_agent) race to edit one file,
over real HTTP against the fake LLM, with real file tools."""

from __future__ import annotations

import trio
import trio.testing

from nyzhi.core.loop.agent import UserInput
from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call


def script(request):
    """Each agent's prompt names what to do; once a tool result came back, it is done."""
    if request.tool_results():
        return reply("done: " + request.tool_results()[0][:60])
    prompt = request.last_user_text()
    if prompt.startswith("append"):
        return reply(tool_calls=[tool_call("slow_append", {"path": "src/app.py",
                                                           "line": "c = 3"})])
    return reply(tool_calls=[tool_call("edit", {"file_path": "./src/app.py",
                                                "old_string": "a = 1", "new_string": "a = 10"})])


async def test_two_subagents_race_to_edit_one_file_both_edits_land(workspace, configure, slow_append):
    target = workspace / "src" / "app.py"
    target.parent.mkdir()
    target.write_text("a = 1\nb = 2\n")
    slow = slow_append
    async with open_fake_llm(script=script) as server:
        # Leases are under test here, not the stale-write guard (test_stale_writes.py).
        configure(workspace, server.url_for("openai"), extra="[agent]\nstale_write_guard = false\n")
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full",
                                               ephemeral=True)) as rt:
            rt.main_agent.tooling.registry.register(slow)  # the shared store: every agent's view has it
            table = rt.main_agent.tooling.context.leases
            one = await rt.spawn_agent("worker-1")
            two = await rt.spawn_agent("worker-2")
            first = await one.ask(UserInput("append a line to src/app.py"))
            await slow.entered.wait()
            assert table.holder_of(target) == "/agents/main/worker-1"
            second = await two.ask(UserInput("edit src/app.py"))
            await trio.testing.wait_all_tasks_blocked()
            assert not second.done.is_set()  # parked on worker-1's lease
            assert target.read_text() == "a = 1\nb = 2\n"
            slow.release.set()
            out1, out2 = await first.wait(), await second.wait()
    assert out1.text.startswith("done: appended")
    assert out2.text.startswith("done: Edited src/app.py")
    assert target.read_text() == "a = 10\nb = 2\nc = 3\n"
