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
