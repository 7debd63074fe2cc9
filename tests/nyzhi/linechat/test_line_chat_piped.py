"""The line chat reads piped input to its end before it decides there is nothing to do.

``printf 'hello\\n' | nyz chat --plain`` used to exit 0 without a model request: the end of
the input cancelled the turn the line had just started. Each test checks what the scripted
fake LLM server received.
"""

from __future__ import annotations

import trio

from nyzhi.testing.cli import run_nyz
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call


def chat_requests(server) -> list:
    return [r for r in server.requests if r.wire is not None]


async def test_one_piped_line_makes_its_request_and_shows_the_answer(workspace, home, configure):
    async with open_fake_llm(script=[reply("HELLO-BACK")]) as server:
        configure(workspace, server.url_for("openai"))
        with trio.fail_after(60):
            proc = await run_nyz(workspace, home, "chat", "--plain", stdin=b"hello\n")
    assert proc.returncode == 0, proc.stderr.decode()
    [request] = chat_requests(server)
    assert request.last_user_text() == "hello"
    assert b"HELLO-BACK" in proc.stdout


async def test_no_subcommand_and_a_line_without_newline(workspace, home, configure):
    async with open_fake_llm(script=[reply("NO-NEWLINE-BACK")]) as server:
        configure(workspace, server.url_for("openai"))
        with trio.fail_after(60):
            proc = await run_nyz(workspace, home, stdin=b"no newline at the end")
    assert proc.returncode == 0, proc.stderr.decode()
    [request] = chat_requests(server)
    assert request.last_user_text() == "no newline at the end"
    assert b"NO-NEWLINE-BACK" in proc.stdout


async def test_piped_lines_run_one_after_another_then_exit(workspace, home, configure):
    script = [reply("FIRST-ANSWER"), reply("SECOND-ANSWER")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        with trio.fail_after(60):
            proc = await run_nyz(workspace, home, "chat", "--plain",
                                 stdin=b"one\ntwo\n/exit\nthree\n")
    assert proc.returncode == 0, proc.stderr.decode()
    first, second = chat_requests(server)  # /exit came before "three"
    assert first.last_user_text() == "one"
    assert [t for r, t in second.transcript() if r != "system"] == [
        "one", "FIRST-ANSWER", "two"]
    assert b"a turn is running" not in proc.stdout
    assert b"SECOND-ANSWER" in proc.stdout


async def test_a_piped_line_answers_the_approval_the_turn_asks_for(workspace, home, configure):
    script = [reply(tool_calls=[tool_call("write", {"file_path": "note.txt", "content": "hi"})]),
              reply("WROTE-IT")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        with trio.fail_after(60):
            proc = await run_nyz(workspace, home, "chat", "--plain",
                                 stdin=b"write a note\ny\n")
    assert proc.returncode == 0, proc.stderr.decode()
    assert (workspace / "note.txt").read_text() == "hi"
    assert len(chat_requests(server)) == 2 and b"WROTE-IT" in proc.stdout


async def test_what_the_turn_asks_after_the_input_ended_is_declined(workspace, home, configure):
    options = [{"value": "pg", "label": "PostgreSQL"}, {"value": "lite", "label": "SQLite"}]
    script = [reply(tool_calls=[tool_call("write", {"file_path": "note.txt", "content": "hi"})]),
              reply(tool_calls=[tool_call("ask_user", {"question": "Which database?",
                                                       "options": options})]),
              reply("GAVE-UP")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        with trio.fail_after(60):
            proc = await run_nyz(workspace, home, "chat", "--plain", stdin=b"write a note\n")
    assert proc.returncode == 0, proc.stderr.decode()
    assert not (workspace / "note.txt").exists()
    requests = chat_requests(server)
    assert len(requests) == 3
    assert "denied" in requests[1].tool_results()[0].lower()
    assert "the input ended" in requests[2].tool_results()[-1]
    assert b"GAVE-UP" in proc.stdout


async def test_continue_with_piped_input(workspace, home, configure):
    script = [reply("FIRST-SESSION-ANSWER"), reply("CONTINUED-ANSWER")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        with trio.fail_after(60):
            first = await run_nyz(workspace, home, "chat", "--plain", stdin=b"remember 42\n")
            assert first.returncode == 0, first.stderr.decode()
            again = await run_nyz(workspace, home, "--continue", stdin=b"what was it?\n")
    assert again.returncode == 0, again.stderr.decode()
    first_request, continued = chat_requests(server)
    assert [t for r, t in continued.transcript() if r != "system"] == [
        "remember 42", "FIRST-SESSION-ANSWER", "what was it?"]
    assert b"CONTINUED-ANSWER" in again.stdout


GC_WRAPPER = """
import gc, runpy, sys
import nyzhi.cli.cmd_chat as cmd
seen = []
def young():
    return gc.get_stats()[0]["collections"]
import nyzhi.linechat.chat as chat
class Renderer(chat.ChatRenderer):  # made once the runtime is open, before any prompt
    def __init__(self, *a, **k):
        print(f"READY enabled={gc.isenabled()} startup={young() - seen[0]}",
              file=sys.stderr, flush=True)
        super().__init__(*a, **k)
chat.ChatRenderer = Renderer
real_run_chat = cmd.run_chat
def run_chat(args):
    seen.append(young())  # from here: the runtime's imports and assembly
    return real_run_chat(args)
cmd.run_chat = run_chat
sys.argv = ["nyz", *sys.argv[1:]]
runpy.run_module("nyzhi", run_name="__main__")
"""


async def test_the_collector_is_off_while_the_chat_starts_and_back_on_after(
        workspace, home, configure):
    """``nyz chat`` pauses the garbage collector while it starts (as ``nyz run`` does) and
    turns it back on once the runtime is open: a chat that never collected again would grow
    for as long as it runs."""
    import sys

    from nyzhi.testing.cli import nyz_env

    async with open_fake_llm(script=[reply("GC-BACK")]) as server:
        configure(workspace, server.url_for("openai"))
        with trio.fail_after(60):
            proc = await trio.run_process(
                [sys.executable, "-c", GC_WRAPPER, "chat", "--plain"], cwd=workspace,
                env=nyz_env(home), stdin=b"hello\n", capture_stdout=True, capture_stderr=True,
                check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    assert b"GC-BACK" in proc.stdout
    [ready] = [x for x in proc.stderr.decode().splitlines() if x.startswith("READY ")]
    enabled, startup = (part.split("=")[1] for part in ready.split()[1:])
    assert enabled == "True"  # back on once the runtime was open
    # none while starting (it paused), where start-up collected ~100 times before
    assert int(startup) == 0, ready
