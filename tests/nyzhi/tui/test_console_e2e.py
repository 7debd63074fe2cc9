"""The real console (``nyz`` on a terminal) driven in tmux against the fake LLM: keys in with
send-keys, the screen read with capture-pane (bounded polling: a terminal gives no event)."""

from __future__ import annotations

import json
import re
import shlex

import pytest
import trio

from nyzhi.testing.cli import NYZ, nyz_env, run_nyz, settled_running, started_running
from nyzhi.testing.fake_llm import PerAgent, hang, http_error, open_fake_llm, reply, tool_call
from nyzhi.testing.tmux import INPUT_READY, TmuxPane, open_console, say

pytestmark = pytest.mark.skipif(not TmuxPane.available(), reason="tmux is not installed")


async def ready(pane: TmuxPane, marker: str = INPUT_READY) -> str:
    return await pane.wait_for(marker)


async def test_a_prompt_streams_and_esc_cancels_it(workspace, home, configure):
    answer = "Streaming words arrive one by one " * 3
    script = [hang(reply(answer, chunk_size=6), after_frames=3), reply("second answer")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home) as pane:
            await ready(pane)
            await say(pane, "tell me something")
            screen = await pane.wait_for("Streaming")
            assert "› tell me something" in screen
            assert "[cancelled]" not in screen  # the answer is still arriving
            await pane.keys("Escape")
            await pane.wait_for("[cancelled]")
            await say(pane, "again")  # the thread is kept and the console still answers
            await pane.wait_for("second answer")
    assert ("user", "tell me something") in server.requests[1].transcript()


async def test_approval_answered_with_y_and_a_remembers(workspace, home, configure):
    script = [
        reply(tool_calls=[tool_call("write", {"file_path": "a.txt", "content": "A"})]),
        reply("first written"),
        reply(tool_calls=[tool_call("write", {"file_path": "b.txt", "content": "B"})]),
        reply(tool_calls=[tool_call("write", {"file_path": "c.txt", "content": "C"})]),
        reply("all written"),
    ]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home) as pane:
            await ready(pane)
            await say(pane, "write a")
            screen = await pane.wait_for("Approve write?")
            assert "/agents/main" in screen and "a.txt" in screen
            assert not (workspace / "a.txt").exists()
            await pane.keys("y")
            await pane.wait_for("first written")
            assert (workspace / "a.txt").read_text() == "A"
            await say(pane, "write b and c")
            await pane.wait_for("Approve write?")
            await pane.keys("a")
            # c.txt needs no second answer: the console reaches the end without a dialog
            screen = await pane.wait_for("all written")
            assert "Approve write?" not in screen
    assert (workspace / "b.txt").read_text() == "B" and (workspace / "c.txt").read_text() == "C"


async def test_esc_cancels_a_running_bash_and_leaves_no_process(workspace, home, configure):
    marker = "876543"
    command = f"sleep {marker} & echo READY-TO-$((6*7)); sleep {marker}"
    script = [reply(tool_calls=[tool_call("bash", {"command": command, "timeout": 600})]),
              reply("after the cancel")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"),
                  extra='[agent.sandbox]\nlevel = "full-access"\n')
        async with open_console(workspace, home, "--trust", "full") as pane:
            await ready(pane)
            await say(pane, "run it")
            await pane.wait_for("READY-TO-42")
            assert await started_running(marker)
            await pane.keys("Escape")
            await pane.wait_for("[cancelled]")
            assert await settled_running(marker) == []  # reaped before the turn ended
            await say(pane, "still there?")
            await pane.wait_for("after the cancel")


async def test_help_status_and_an_unknown_command_stay_local(workspace, home, configure):
    async with open_fake_llm(script=[reply("unused")]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home) as pane:
            await ready(pane)
            await say(pane, "/help")
            screen = await pane.wait_for("keys: Enter send")
            assert "/status" in screen and "/undo" in screen
            for _ in range(4):  # the list is taller than the screen: page up to /compact
                await pane.keys("PageUp")
                screen = await pane.wait_for(lambda s, before=screen: s != before)
                if "/compact" in screen:
                    break
            assert "/compact" in screen
            await pane.keys("End")
            await pane.keys("C-l")
            await pane.type("/statu")  # Tab completes the command name (/sta: /stats too)
            await pane.keys("Tab")
            await pane.wait_for("› /status")
            await pane.keys("Enter")
            screen = await pane.wait_for("session ")
            assert "trust off" in screen and "fake/fake-model-1" in screen
            await say(pane, "/nosuch thing")
            await pane.wait_for("unknown command /nosuch")
            await pane.keys("C-r")
            await pane.type("stat")  # Ctrl-R finds the /status typed above
            await pane.wait_for("(search: stat) /status")
            await pane.keys("Enter")
            await pane.wait_for("› /status")
    assert server.requests == []  # nothing reached the model


async def test_a_resumed_session_shows_its_history(workspace, home, configure):
    async with open_fake_llm(script=[reply("the colour is BLUE")]) as server:
        configure(workspace, server.url_for("openai"))
        first = await run_nyz(workspace, home, "run", "remember the colour")
        assert first.returncode == 0, first.stderr.decode()
        async with open_console(workspace, home, "--continue") as pane:
            screen = await pane.wait_for("resumed session")
            assert "› remember the colour" in screen and "the colour is BLUE" in screen


async def test_a_resumed_session_is_redrawn_from_its_recorded_events(
        workspace, home, configure):
    """The replay goes through the live renderer: the tool card with its arguments and result,
    an error the run met, and the answer of each turn."""
    (workspace / "notes.txt").write_text("the secret word is MAGENTA\n")
    script = [reply(tool_calls=[tool_call("read", {"file_path": "notes.txt"})]),
              reply("the word is MAGENTA"), http_error(400, "no such model")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        first = await run_nyz(workspace, home, "run", "read the notes")
        assert first.returncode == 0, first.stderr.decode()
        second = await run_nyz(workspace, home, "run", "--continue", "and again")
        assert second.returncode == 1
        async with open_console(workspace, home, "--continue") as pane:
            screen = await pane.wait_for("resumed session")
            assert "› read the notes" in screen and "the word is MAGENTA" in screen
            assert "read file_path='notes.txt' [done" in screen  # the card, as drawn live
            assert "› and again" in screen and "error: " in screen


async def test_ctrl_c_twice_quits(workspace, home, configure):
    async with open_fake_llm(script=[]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home) as pane:
            await ready(pane)
            await pane.keys("C-c")
            await pane.wait_for("press Ctrl-C again to quit")
            assert await pane.exit_status() is None
            await pane.keys("C-c")
            assert await pane.wait_exit() == 0


async def test_spawned_subagents_show_live_in_the_tree_and_one_is_cancelled_from_it(
        workspace, home, configure):
    script = [hang(reply("sub work " * 10), after_frames=2),
              hang(reply("sub work " * 10), after_frames=2), reply("beta carries on")]
    # a role must be defined to be spawned (issue 31): two config-table roles
    roles = ('\n[agent.agents.roles.alpha]\ndescription = "reads code"\n'
             '[agent.agents.roles.beta]\ndescription = "reads tests"\n')
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"), extra=roles)
        async with open_console(workspace, home) as pane:
            await ready(pane)
            await say(pane, "/spawn explorer look at the code")  # tracked by the manager; an unknown role is refused
            await pane.wait_for("started explorer-1")
            await say(pane, "/spawn worker look at the tests")
            await pane.wait_for("started worker-1")
            await pane.keys("F2")
            screen = await pane.wait_for(
                lambda s: "explorer-1 [running]" in s and "worker-1 [running]" in s)
            assert "main [" in screen
            await pane.keys("Down", "Down", "c")  # main, alpha, beta: cancel beta's turn
            screen = await pane.wait_for("worker-1 [shutdown]")
            assert "explorer-1 [running]" in screen and "cancelled worker-1" in screen
            await pane.keys("Enter")  # beta's own stream
            await pane.wait_for(lambda s: "› look at the tests" in s and "[cancelled]" in s)
            await say(pane, "go on, beta")  # typed input goes to the agent on screen
            await pane.wait_for("beta carries on")
            await pane.keys("F2", "F2", "Up", "Up", "C")  # main's row: cancel its subtree
            screen = await pane.wait_for("explorer-1 [shutdown]")
            assert "cancelled main and its subagents" in screen
    assert ("user", "go on, beta") in server.requests[2].transcript()


async def test_a_subagent_of_a_resumed_session_is_resumed_from_the_tree(
        workspace, home, configure):
    keeper = "/agents/main/worker-1"
    agents = PerAgent({
        "MAIN": [reply(tool_calls=[tool_call("spawn_agent", {"message": "KEEPER remember PURPLE",
                                                             "agent_type": "worker"})]),
                 reply(tool_calls=[tool_call("wait", {"ids": [keeper]})]),
                 reply("first run done")],
        "KEEPER": [reply("noted PURPLE"),
                   lambda req: reply("it was " + ("PURPLE" if ("assistant", "noted PURPLE")
                                                  in req.transcript() else "unknown"))],
    })
    async with open_fake_llm(script=agents) as server:
        configure(workspace, server.url_for("openai"))
        first = await run_nyz(workspace, home, "run", "MAIN one")
        assert first.returncode == 0, first.stderr.decode()
        async with open_console(workspace, home, "--continue") as pane:
            await pane.wait_for("resumed session")
            await pane.keys("F2")
            await pane.wait_for("worker-1 [shutdown]")  # closed with its session: resumable
            await pane.keys("Down", "Enter")  # its thread, from the session log
            await pane.wait_for(lambda s: "› KEEPER remember PURPLE" in s and "noted PURPLE" in s)
            await say(pane, "which colour?")  # not running: refused, the text is kept
            await pane.wait_for("resume_agent it first")
            await pane.keys("F2", "F2", "r")  # back in the tree on worker-1: resume it
            await pane.wait_for(lambda s: "worker-1 [idle]" in s and "resumed worker-1" in s)
            await pane.keys("Enter", "Enter")  # show it again; send the kept text
            await pane.wait_for("it was PURPLE")
    assert agents.seen["KEEPER"][1].last_user_text() == "which colour?"


async def test_plain_flag_keeps_the_line_chat_on_a_terminal(workspace, home, configure):
    async with open_fake_llm(script=[reply("plain answer")]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home, "chat", "--plain") as pane:
            await ready(pane, "session")
            await say(pane, "hi")
            await pane.wait_for("plain answer")
            screen = await pane.screen()
            assert "›" not in screen  # no console input box


async def test_tui_config_keys_change_the_open_console(workspace, home, configure):
    answer = reply("# Plan\nuse `ls`", thinking="pondering quietly")
    tui = '[tui]\nmarkdown = false\nshow_thinking = false\ntheme = "light"\n'
    async with open_fake_llm(script=[answer, answer]) as server:
        configure(workspace, server.url_for("openai"), extra=tui)
        async with open_console(workspace, home) as pane:
            await ready(pane)
            await say(pane, "plan it")
            screen = await pane.wait_for("use `ls`")  # markdown off: the raw text
            assert "# Plan" in screen and "pondering" not in screen
            await say(pane, "/status")
            await pane.wait_for("theme light")
        (workspace / ".nyzhi" / "config.toml").write_text(
            (workspace / ".nyzhi" / "config.toml").read_text().replace(tui, ""))
        async with open_console(workspace, home) as pane:
            await ready(pane)
            await say(pane, "plan it")
            screen = await pane.wait_for("use ls")  # markdown on: inline code drawn as code
            assert "# Plan" not in screen and "✻ pondering quietly" in screen


async def test_no_color_draws_without_colour_and_resize_redraws(workspace, home, configure):
    async with open_fake_llm(script=[]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home, env={"NO_COLOR": "1"}) as pane:
            await ready(pane)
            styled = await pane.tmux("capture-pane", "-p", "-e")
            assert not re.search(r"\x1b\[[0-9;]*(3[0-7]|9[0-7]|38;5)[;m]", styled), styled
            await pane.tmux("resize-window", "-x", "100", "-y", "30")
            screen = await pane.wait_for(lambda s: s.splitlines()[-1:] != []
                                         and "fake/fake-model-1" in s.splitlines()[-1]
                                         and len(s.splitlines()) == 30)
            assert "─" * 100 in screen  # the divider spans the new width


async def test_resume_command_switches_to_another_session_in_place(workspace, home, configure):
    async with open_fake_llm(script=[reply("old answer GREEN")]) as server:
        configure(workspace, server.url_for("openai"))
        first = await run_nyz(workspace, home, "run", "--output-format", "json", "the old task")
        assert first.returncode == 0, first.stderr.decode()
        old_id = json.loads(first.stdout)["session_id"]
        async with open_console(workspace, home) as pane:
            screen = await ready(pane)
            assert "old answer GREEN" not in screen  # a new session
            await say(pane, f"/resume {old_id[:8]}")
            screen = await pane.wait_for("resumed session")
            assert "› the old task" in screen and "old answer GREEN" in screen
            await say(pane, "/status")
            await pane.wait_for(f"session {old_id}")


async def test_a_runtime_that_cannot_start_exits_with_its_error(workspace, home):
    (workspace / ".nyzhi" / "config.toml").write_text("[agent]\nmax_steps = 'many'\n")
    async with open_console(workspace, home) as pane:
        assert await pane.wait_exit() == 1
        screen = await pane.history()
        # said after the screen is restored
        assert "nyz:" in screen and 'agent.max_steps: expected an integer, found string "many"' in screen


async def test_a_tool_card_shows_the_tail_of_its_output_and_ctrl_o_expands_it(
        workspace, home, configure):
    command = "for i in $(seq -w 1 20); do echo line-$i; done"
    script = [reply(tool_calls=[tool_call("bash", {"command": command})]), reply("listed")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"),
                  extra='[agent.sandbox]\nlevel = "full-access"\n')
        async with open_console(workspace, home, "--trust", "full") as pane:
            await ready(pane)
            await say(pane, "count")
            screen = await pane.wait_for("listed")
            assert "⚙ bash command=" in screen and "[done " in screen
            assert "line-20" in screen and "line-01" not in screen
            assert "12 more line(s) (Ctrl-O expands)" in screen
            await pane.keys("C-o")
            await pane.wait_for("expanded")
            await pane.keys("PageUp")  # scrolls the conversation, the input keeps the focus
            await pane.wait_for("line-01")
            await pane.keys("PageDown", "PageDown", "PageDown")
            await pane.wait_for(lambda s: "listed" in s and "line-01" not in s)


async def test_the_other_commands_do_their_jobs(workspace, home, configure):
    script = [reply(tool_calls=[tool_call("write", {"file_path": "new.txt", "content": "N"})]),
              reply("wrote new.txt"), reply("second answer"), reply("third answer"),
              reply("fourth answer"),
              reply("a summary of the thread")]
    (workspace / "tracked.txt").write_text("old\n")
    await trio.run_process(["git", "-C", str(workspace), "add", "tracked.txt"])
    (workspace / "tracked.txt").write_text("changed line\n")
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home, "--trust", "full") as pane:
            await ready(pane)

            async def command(line: str, shows: str) -> str:
                await pane.keys("C-l")  # clears the screen: what follows is this command's
                await pane.wait_for(lambda s: shows not in s)
                await say(pane, line)
                return await pane.wait_for(shows)

            await command("/sandbox", "sandbox: workspace-write (writable:")
            await command("/diff", "+changed line")
            await command("/hooks", "no hooks")
            await command("/config", "[tui] theme=auto")
            await command("/theme light", "theme: light")  # no argument: a picker
            await command("/trust autoedit", "trust: autoedit")
            await pane.keys("BTab")
            await pane.wait_for(lambda s: "plan mode on" in s and "PLAN" in s)
            await pane.keys("BTab")
            await pane.wait_for("plan mode off")
            await say(pane, "write it")
            await pane.wait_for("wrote new.txt")
            assert (workspace / "new.txt").read_text() == "N"
            await command("/undo", "new.txt")
            assert not (workspace / "new.txt").exists()
            await command("/export thread.md", "exported")
            assert "write it" in (workspace / "thread.md").read_text()
            await command("/compact", "nothing to compact")
            for prompt, answer in (("two", "second answer"), ("three", "third answer"),
                                   ("four", "fourth answer")):
                await say(pane, prompt)
                await pane.wait_for(answer)
            await command("/compact keep the papaya decision", "context compacted:")
            await command("/sessions", "msgs")
            await say(pane, "/quit")
            assert await pane.wait_exit() == 0
    assert len(server.requests) == 6  # two steps of the first turn, three turns, the summary
    # /compact HINT: the hint reached the summary request (issue 54)
    assert "keep the papaya decision" in server.requests[5].body.decode()


async def test_shell_prefix_at_path_and_the_queue(workspace, home, configure):
    (workspace / "notes.md").write_text("the secret word is PAPAYA\n")
    script = [reply("read it"), hang(reply("working on it " * 5, chunk_size=14), after_frames=2)]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"),
                  extra='[agent.sandbox]\nlevel = "full-access"\n')
        async with open_console(workspace, home, "--trust", "full") as pane:
            await ready(pane)
            await say(pane, "!echo shell-$((40+2))")  # through the bash tool and its gates
            screen = await pane.wait_for("shell-42")
            assert "⚙ bash" in screen
            await say(pane, "summarise @notes.md")
            await pane.wait_for("read it")
            await say(pane, "long task")
            await pane.wait_for("working on it")
            await say(pane, "and then this")  # typed while the agent streams: queued
            await pane.wait_for("queued (1): and then this")
            await pane.keys("Escape")
            await pane.wait_for("1 queued message(s) dropped")
            await pane.wait_for("[cancelled]")
    assert len(server.requests) == 2  # the shell command and the queued message never reached it
    first = server.requests[0].transcript()[-1][1]
    assert "the secret word is PAPAYA" in first
    # the !cmd's output went with the next prompt, as framed command output (issue 54)
    assert "The user ran `echo shell-$((40+2))`" in first and "shell-42" in first
    assert "untrusted-content" in first
    assert "shell-42" not in server.requests[1].transcript()[-1][1]  # said once


async def test_one_tool_card_is_selected_and_expanded_on_its_own(workspace, home, configure):
    def lines(tag):
        return f"for i in $(seq -w 1 12); do echo {tag}-$i; done"

    script = [reply(tool_calls=[tool_call("bash", {"command": lines("first")})]),
              reply(tool_calls=[tool_call("bash", {"command": lines("second")})]),
              reply("both listed")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"),
                  extra='[agent.sandbox]\nlevel = "full-access"\n')
        async with open_console(workspace, home, "--trust", "full") as pane:
            await ready(pane)
            await say(pane, "list twice")
            screen = await pane.wait_for("both listed")
            assert "second-12" in screen and "second-01" not in screen  # collapsed: the tail
            await pane.keys("M-Up")  # the last card
            await pane.wait_for(lambda s: "▶ bash command='for i in $(seq -w 1 12); do echo s"
                                in s)
            await pane.keys("M-Up")  # the one before it
            await pane.wait_for("▶ bash command='for i in $(seq -w 1 12); do echo f")
            await pane.keys("Enter")  # expands this card only
            screen = await pane.wait_for("first-01")
            assert "4 more line(s)" in screen  # the second card is still collapsed
            await pane.keys("Enter")
            await pane.wait_for(lambda s: "first-01" not in s and "first-12" in s)
            await pane.keys("Escape")  # leaves the selection; nothing was cancelled
            screen = await pane.wait_for(lambda s: "both listed" in s and "▶" not in s)
            assert "[cancelled]" not in screen
    assert len(server.requests) == 3


async def test_keys_typed_at_the_first_frame_are_kept_and_the_terminal_is_restored(
        workspace, home, configure):
    async with open_fake_llm(script=[reply("got the early words")]) as server:
        configure(workspace, server.url_for("openai"))
        pane = TmuxPane(workspace.parent / "tmux-stty.sock")
        # stty after nyz: the settings the console leaves the terminal in
        await pane.start(["sh", "-c", f"{shlex.join(NYZ)}; stty -a"], cwd=workspace,
                         env=nyz_env(home))
        try:
            await pane.wait_for("starting…")  # the first frame: drawn before urwid loads
            await pane.type("early words")
            await pane.keys("C-c", "Enter")  # Ctrl-C is a key from the first frame on
            await pane.wait_for("got the early words")
            await pane.keys("C-c", "C-c")
            assert await pane.wait_exit() == 0
            settings = await pane.history()
        finally:
            pane.kill()
    assert server.requests[0].last_user_text() == "early words"
    assert re.search(r"(?<![-\w])icanon\b", settings) and re.search(r"(?<![-\w])echo\b",
                                                                     settings), settings


async def test_a_background_process_shows_in_the_tree_and_is_killed_from_it(
        workspace, home, configure):
    from nyzhi.testing.cli import wait_gone

    marker = f"nyzbg-tui-{workspace.parent.name}"
    start = reply(tool_calls=[tool_call("bash", {
        "command": f"echo serving-now; exec -a {marker} sleep 300", "run_in_background": True,
        "yield_ms": 2000})])
    trust = '[agent.trust]\nmode = "full"\n'
    async with open_fake_llm(script=[start, reply("it runs")]) as server:
        configure(workspace, server.url_for("openai"), extra=trust)
        async with open_console(workspace, home) as pane:
            await ready(pane)
            await say(pane, "start it")
            await pane.wait_for("it runs")
            await pane.keys("F2")
            screen = await pane.wait_for("⚙ bg_1 [running")
            assert "serving-now" in screen and "main [" in screen
            pids = await started_running(marker)
            await pane.keys("Down", "Enter")  # its last lines, in the conversation
            await pane.wait_for(lambda s: "bg_1 (running" in s)
            await pane.keys("F2", "F2", "Down", "k")
            await pane.wait_for(lambda s: "bg_1 killed" in s or "[killed" in s)
            await wait_gone(pids)
    assert await settled_running(marker) == []  # a leaked one stays; one exiting goes


async def test_an_ampersand_prompt_runs_on_a_background_agent_and_posts_its_summary(
        workspace, home, configure):
    agents = PerAgent({
        "count the files": [reply("there are 3 files")],
        "and you": [reply("main answers meanwhile")],
    })
    async with open_fake_llm(script=agents) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home) as pane:
            await ready(pane)
            await say(pane, "& count the files")
            screen = await pane.wait_for("completed: there are 3 files")
            name = re.search(r"& (\S+) works on it in the background", screen).group(1)
            await say(pane, "and you")  # the main agent was free all along
            await pane.wait_for("main answers meanwhile")
            await pane.keys("F2")
            await pane.wait_for(f"{name} [completed]")
    assert len(agents.seen["count the files"]) == 1


async def test_ctrl_b_moves_the_running_command_to_the_background_and_the_turn_goes_on(
        workspace, home, configure):
    from nyzhi.testing.fake_llm import in_order

    script = in_order([
        reply(tool_calls=[tool_call("bash", {
            "command": "echo cmd-is-$((40+2)); until [ -e go.flag ]; do sleep 0.05; done; echo done",
            "timeout": 600})]),
        reply("the turn went on"),
        reply(tool_calls=[tool_call("bash_output", {"id": "bg_1"})]),
        reply("saw it"),
    ])
    trust = '[agent.trust]\nmode = "full"\n'
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"), extra=trust)
        async with open_console(workspace, home) as pane:
            await ready(pane)
            await say(pane, "run it")
            await pane.wait_for("cmd-is-42")  # its output: it runs in the foreground
            await pane.keys("C-b")
            await pane.wait_for("the turn went on")
            await trio.Path(workspace / "go.flag").touch()
            await pane.wait_for("bg_1 exited with code 0")  # process_exit, drawn
            await say(pane, "did it finish?")
            await pane.wait_for("saw it")
    moved = server.requests[1].tool_results()[0]
    assert "cmd-is-42" in moved and "moved to the background as bg_1 (Ctrl-B)" in moved
    assert "done" in server.requests[3].tool_results()[0]
