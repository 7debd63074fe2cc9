"""The console's model, subagent, MCP and project commands, driven in tmux against the fake
LLM (and a real MCP server): /model, /subagent-config, /mcp, /init, and /help listing them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import trio

from nyzhi.testing.fake_llm import FakeRequest, PerAgent, open_fake_llm, reply, tool_call
from nyzhi.testing.tmux import INPUT_READY, TmuxPane, open_console, say

pytestmark = pytest.mark.skipif(not TmuxPane.available(), reason="tmux is not installed")

MCP_HELPER = Path(__file__).parents[1] / "mcp" / "helper_server.py"


def model_calls(requests: list[FakeRequest]) -> list[FakeRequest]:
    """The model requests (not the GET /models listings)."""
    return [r for r in requests if r.wire is not None]


def other_provider(server) -> str:
    """A second provider, ``other``, on the fake server's Anthropic wire."""
    return (f'\n[provider.other]\napi_style = "anthropic"\n'
            f'base_url = "{server.url_for("anthropic")}"\nmodel = "fake-model-1"\n'
            'api_key = "sk-other"\n')


async def command(pane: TmuxPane, line: str, shows: str) -> str:
    """Clear the screen, run ``line``, and return the screen once it shows ``shows``."""
    await pane.keys("C-l")
    await pane.wait_for(lambda s: shows not in s)
    await say(pane, line)
    return await pane.wait_for(shows)


async def test_model_lists_and_switches_the_main_agents_model_in_place(
        workspace, home, configure):
    async with open_fake_llm(script=[reply("first"), reply("second")]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home) as pane:
            await pane.wait_for(INPUT_READY)
            screen = await command(pane, "/model", "Model (now fake/fake-model-1)")  # a picker
            assert "fake-model-1  in use" in screen and "fake-model-2  fake" in screen  # GET /models
            await pane.keys("Escape")
            await pane.wait_for(lambda s: "Model (now" not in s)
            await say(pane, "one")
            await pane.wait_for("first")
            screen = await command(pane, "/model fake-model-2",
                                   "model: fake/fake-model-2 from the next request")
            assert "fake/fake-model-2 · trust" in screen.splitlines()[-1]  # the status bar
            await say(pane, "two")
            await pane.wait_for("second")
    first, second = model_calls(server.requests)
    assert (first.model, second.model) == ("fake-model-1", "fake-model-2")
    assert ("user", "one") in second.transcript()  # the same thread
    assert "model: fake-model-2" in second.system_text()


async def test_model_with_a_provider_reopens_the_session_on_that_provider(
        workspace, home, configure):
    async with open_fake_llm(script=[reply("noted RED"), reply("it was RED")]) as server:
        configure(workspace, server.url_for("openai"), extra=other_provider(server))
        async with open_console(workspace, home) as pane:
            await pane.wait_for(INPUT_READY)
            await say(pane, "remember RED")
            await pane.wait_for("noted RED")
            await say(pane, "/model other/fake-model-2")
            screen = await pane.wait_for("resumed session")
            assert "› remember RED" in screen  # the thread is kept
            await pane.wait_for(lambda s: "other/fake-model-2 · trust" in s.splitlines()[-1])
            await say(pane, "which colour?")
            await pane.wait_for("it was RED")
    first, second = model_calls(server.requests)
    assert (first.wire, first.model) == ("openai", "fake-model-1")
    assert (second.wire, second.model) == ("anthropic", "fake-model-2")
    assert ("user", "remember RED") in second.transcript()


async def test_model_with_a_provider_typed_during_a_turn_waits_for_it_to_end(
        workspace, home, configure):
    """Typed while the agent works, ``/model PROVIDER/MODEL`` is queued behind the turn and
    runs when it ends (it was refused, so a person typing it as a reply streamed in lost it)."""
    release = trio.Event()

    async def held(_request):
        await release.wait()  # the first turn stays busy until the command is queued
        return reply("noted RED")

    answers = [held]

    async def script(request):
        return await answers.pop(0)(request) if answers else reply("it was RED")

    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"), extra=other_provider(server))
        async with open_console(workspace, home) as pane:
            await pane.wait_for(INPUT_READY)
            await say(pane, "remember RED")
            await server.wait_until(lambda: len(model_calls(server.requests)) == 1)
            await say(pane, "/model other/fake-model-2")
            await pane.wait_for("queued (1): /model other/fake-model-2")
            release.set()
            screen = await pane.wait_for("resumed session")
            assert "noted RED" in screen and "waits for an idle agent" not in screen
            await pane.wait_for(lambda s: "other/fake-model-2 · trust" in s.splitlines()[-1])
            await say(pane, "which colour?")
            await pane.wait_for("it was RED")
    first, second = model_calls(server.requests)
    assert (second.wire, second.model) == ("anthropic", "fake-model-2")
    assert ("user", "remember RED") in second.transcript()


async def test_subagent_config_shows_and_sets_the_model_of_a_role(workspace, home, configure):
    agents = PerAgent({
        "MAIN": [reply(tool_calls=[tool_call("spawn_agent", {"message": "EXPLORE the code",
                                                             "agent_type": "explorer"})]),
                 reply(tool_calls=[tool_call("wait", {"ids": ["/agents/main/explorer-1"]})]),
                 reply("explored")],
        "EXPLORE": [reply("found it")],
    })
    async with open_fake_llm(script=agents) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home) as pane:
            await pane.wait_for(INPUT_READY)
            screen = await command(pane, "/subagent-config", "subagent models by role")
            assert "explorer             fake-model-1  (parent)" in screen
            await command(pane, "/subagent-config explorer fake-model-2",
                          "explorer: fake-model-2; for subagents spawned from now on")
            screen = await command(pane, "/subagent-config", "subagent models by role")
            assert "explorer             fake-model-2  (override)" in screen
            await say(pane, "MAIN go")
            await pane.wait_for("explored")
    assert [r.model for r in agents.seen["MAIN"]] == ["fake-model-1"] * 3
    assert [r.model for r in agents.seen["EXPLORE"]] == ["fake-model-2"]


async def test_mcp_shows_the_servers_and_reads_a_resource(workspace, home, configure):
    server_toml = (f'\n[mcp.servers.helper]\ncommand = "{sys.executable}"\n'
                   f'args = ["{MCP_HELPER}"]\n')
    async with open_fake_llm(script=[]) as server:
        configure(workspace, server.url_for("openai"), extra=server_toml)
        async with open_console(workspace, home) as pane:
            await pane.wait_for(INPUT_READY)
            with trio.fail_after(60):
                while True:  # the server connects in the background: ask until it has
                    screen = await command(pane, "/mcp", "helper: ")
                    if "helper: connected · 2 tools" in screen:
                        break
                    assert "helper: starting" in screen, screen
            assert "resource helper helper://greeting" in screen
            await command(pane, "/mcp read helper helper://greeting", "hello from the helper")
            await command(pane, "/mcp nonsense", "usage: /mcp")
    assert model_calls(server.requests) == []


async def test_init_scaffolds_the_project_and_help_lists_the_commands(
        workspace, home, configure):
    async with open_fake_llm(script=[]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home) as pane:
            await pane.wait_for(INPUT_READY)
            screen = await command(pane, "/init", "initialised .nyzhi/")
            assert "created  .nyzhi/rules.md" in screen
            assert "exists   .nyzhi/config.toml (left unchanged)" in screen
            assert (workspace / ".nyzhi" / "commands" / "explain.md").is_file()
            await command(pane, "/init", "nothing to do: .nyzhi/ is already set up")
            await pane.keys("C-l")
            await say(pane, "/help")
            await pane.wait_for("keys: Enter send")
            # The list is longer than the 24-row screen: page up to its start, then down to its
            # end, keeping every screen seen on the way.
            await pane.keys("PageUp", "PageUp", "PageUp")
            shown = seen = await pane.wait_for("commands:")
            while "keys: Enter send" not in shown:
                await pane.keys("PageDown")
                shown = await pane.wait_for(lambda s, before=shown: s != before)
                seen += shown
            for line in ("/init ", "/mcp ", "/model ", "/spawn ", "/subagent-config", "/team ",
                         "/thinking "):
                assert line in seen, seen


async def test_a_custom_command_is_completed_listed_and_sent_as_its_prompt(
        workspace, home, configure):
    commands = workspace / ".nyzhi" / "commands"
    commands.mkdir()
    (commands / "audit.md").write_text("---\ndescription: audit a file\n---\n"
                                       "Audit $ARGUMENTS for bugs.\n")
    async with open_fake_llm(script=[reply("reviewed")]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home) as pane:
            await pane.wait_for(INPUT_READY)
            await command(pane, "/help", "custom commands")
            await pane.wait_for("/audit")
            await pane.keys("C-l")
            await pane.type("/aud")
            await pane.keys("Tab")
            await pane.wait_for("› /audit")  # (and a space: capture-pane trims it)
            await say(pane, "app.py")
            await pane.wait_for("reviewed")
    assert server.requests[0].last_user_text() == "Audit app.py for bugs."


async def test_plan_mode_reaches_subagents_spawned_while_it_is_on(workspace, home, configure):
    agents = PerAgent({"WRITER": [reply(tool_calls=[tool_call("write", {"file_path": "w.txt",
                                                                         "content": "W"})]),
                                  lambda req: reply("writer: " + req.tool_results()[-1])]})
    async with open_fake_llm(script=agents) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home, "--trust", "full") as pane:
            await pane.wait_for(INPUT_READY)
            await pane.keys("BTab")
            await pane.wait_for("plan mode on")
            await say(pane, "/spawn worker WRITER write w.txt")
            await pane.keys("F2")
            await pane.wait_for("worker-1 [completed]")
            await pane.keys("Down", "Enter")
            await pane.wait_for("writer: Permission denied (plan mode)")
    assert not (workspace / "w.txt").exists()
    assert "write" not in agents.seen["WRITER"][0].tool_names()  # only read-only tools shown
