"""``nyz`` with no subcommand: the line-mode chat, driven through its stdin like a person."""

from __future__ import annotations

import trio

from nyzhi.testing.cli import read_until, start_chat
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call


async def test_chat_answers_and_asks_for_approval(workspace, home, configure):
    script = [
        reply(tool_calls=[tool_call("write", {"file_path": "note.txt", "content": "hi"})]),
        reply("Wrote note.txt"),
    ]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        proc, out = await start_chat(workspace, home)
        await proc.stdin.send_all(b"please write a note\n")
        await read_until(proc.stdout, out, b"[y/a/N]")
        assert b"note.txt" in out and not (workspace / "note.txt").exists()
        await proc.stdin.send_all(b"y\n")
        await read_until(proc.stdout, out, b"Wrote note.txt")
        assert (workspace / "note.txt").read_text() == "hi"
        await read_until(proc.stdout, out, b"Wrote note.txt\n> ")
        del out[:]
        await proc.stdin.send_all(b"/undo\n")
        await read_until(proc.stdout, out, b"> ")
        assert not (workspace / "note.txt").exists(), bytes(out)
        await proc.stdin.send_all(b"/exit\n")
        with trio.fail_after(20):
            code = await proc.wait()
    assert code == 0


async def test_ask_user_reaches_the_chat_and_the_answer_reaches_the_model(workspace, home, configure):
    options = [{"value": "pg", "label": "PostgreSQL"}, {"value": "lite", "label": "SQLite"}]
    script = [
        reply(tool_calls=[tool_call("ask_user", {"question": "Which database?", "options": options})]),
        reply("Using SQLite"),
    ]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        proc, out = await start_chat(workspace, home)
        await proc.stdin.send_all(b"set up a database\n")
        await read_until(proc.stdout, out, b"2. SQLite")
        await proc.stdin.send_all(b"2\n")
        await read_until(proc.stdout, out, b"Using SQLite")
        await proc.stdin.send_all(b"/exit\n")
        with trio.fail_after(20):
            assert await proc.wait() == 0
    assert "lite" in server.requests[1].tool_results()[0]


async def test_a_mistyped_approval_asks_again_instead_of_declining(workspace, home, configure):
    script = [
        reply(tool_calls=[tool_call("write", {"file_path": "note.txt", "content": "hi"})]),
        reply("Wrote note.txt"),
    ]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        proc, out = await start_chat(workspace, home)
        await proc.stdin.send_all(b"please write a note\n")
        await read_until(proc.stdout, out, b"[y/a/N]")
        await proc.stdin.send_all(b"yse\n")
        await read_until(proc.stdout, out, b"please answer y (yes), a (always this session) or n")
        assert not (workspace / "note.txt").exists()
        await proc.stdin.send_all(b"y\n")
        await read_until(proc.stdout, out, b"Wrote note.txt\n> ")
        await proc.stdin.send_all(b"/exit\n")
        with trio.fail_after(20):
            assert await proc.wait() == 0
    assert (workspace / "note.txt").read_text() == "hi"


async def test_the_chat_dispatches_the_shared_command_table(workspace, home, configure):
    """/help lists every command the chat offers (the shared table less the console's screen
    commands), each runs from the same code as the console's, and an unknown /word is reported
    and never reaches the model."""
    from nyzhi.core.runtime.commands import available

    async with open_fake_llm(script=[reply("planned")]) as server:
        configure(workspace, server.url_for("openai"))
        proc, out = await start_chat(workspace, home)
        del out[:]
        await proc.stdin.send_all(b"/help\n")
        await read_until(proc.stdout, out, b"n = no.\n> ")  # the help, then the prompt
        listed = {line.split()[0][1:] for line in out.decode().splitlines()
                  if line.startswith("  /")}
        assert listed == set(available(frozenset())) and "spawn" in listed
        assert not listed & {"clear", "agents", "theme", "resume"}
        del out[:]
        await proc.stdin.send_all(b"/nonsense here\n")
        await read_until(proc.stdout, out, b"unknown command /nonsense (not sent to the model)")
        await proc.stdin.send_all(b"/trust autoedit\n")
        await read_until(proc.stdout, out, b"trust: autoedit")
        await proc.stdin.send_all(b"/status\n")
        await read_until(proc.stdout, out, b"fake/fake-model-1 \xc2\xb7 trust autoedit")
        await proc.stdin.send_all(b"/plan\n")
        await read_until(proc.stdout, out, b"[plan mode on: read-only tools only]")
        await proc.stdin.send_all(b"think first\n")
        await read_until(proc.stdout, out, b"planned")
        await proc.stdin.send_all(b"/theme\n")
        await read_until(proc.stdout, out, b"unknown command /theme")
        await proc.stdin.send_all(b"/quit\n")
        with trio.fail_after(20):
            assert await proc.wait() == 0
    [request] = server.requests  # only the prompt: no command reached the model
    assert request.last_user_text().startswith("think first")
    assert "write" not in request.tool_names()  # plan mode: read-only tools


async def test_a_path_and_a_double_slash_are_prompts_not_commands(workspace, home, configure):
    """The command registry's one rule: a line whose first word is a path is sent as typed,
    and //x sends /x; only a /name that names no command is refused."""
    async with open_fake_llm(script=[reply("one"), reply("two")]) as server:
        configure(workspace, server.url_for("openai"))
        proc, out = await start_chat(workspace, home)
        await proc.stdin.send_all(b"/etc/hosts has a typo\n")
        await read_until(proc.stdout, out, b"one")
        await proc.stdin.send_all(b"//plan is a word here\n")
        await read_until(proc.stdout, out, b"two")
        await proc.stdin.send_all(b"/quit\n")
        with trio.fail_after(20):
            assert await proc.wait() == 0
    assert [r.last_user_text() for r in server.requests] == [
        "/etc/hosts has a typo", "/plan is a word here"]
