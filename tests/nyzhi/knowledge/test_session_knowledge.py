"""Plan mode and command expansion through the runtime's API (in process, real config)."""

from __future__ import annotations

from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime
from nyzhi.knowledge import plans
from nyzhi.testing.fake_llm import open_fake_llm


def names(tooling) -> set[str]:
    return {s.name for s in tooling.schemas()}


async def test_plan_mode_covers_agents_spawned_later_and_leaving_it(workspace, home, configure):
    (workspace / ".nyzhi/commands").mkdir()
    (workspace / ".nyzhi/commands/fix.md").write_text("Fix $ARGUMENTS")
    async with open_fake_llm(script=[]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace, plan=True, ephemeral=True)) as rt:
            kn = rt.knowledge
            assert kn.plan_mode and "write" not in names(rt.main_agent.tooling)
            child = rt.factory.build(rt.main_agent.spec.child("helper"))
            assert child.tooling.gates.plan_mode and "write" not in names(child.tooling)
            assert kn.set_plan_mode(False) is None  # no plan written: nothing to execute
            assert "write" in names(rt.main_agent.tooling)
            kn.set_plan_mode(True)
            kn.plan_path.parent.mkdir(parents=True)
            kn.plan_path.write_text(plans.render_plan("p", "", "do it", []))
            assert kn.set_plan_mode(False) == plans.execute_plan_prompt(kn.plan_path)
            assert kn.expand("/fix the bug") == "Fix the bug"
            assert "<plan_mode>" not in await kn.turn_context("anything")
