"""Every bad input one clear line, nothing lost (issue 55): a prompt that is not UTF-8 (argv,
piped stdin, the line chat), a failed start, a prompt larger than the window. Real nyz, the
fake LLM over loopback HTTP, the real session store."""

from __future__ import annotations

import subprocess

import trio

from nyzhi.core.sessions.store import SessionStore
from nyzhi.testing.cli import NYZ, nyz_env, read_until
from nyzhi.testing.fake_llm import open_fake_llm, reply


def _sessions(home):
    return SessionStore(home / ".local" / "share" / "nyzhi" / "sessions").list()


async def _nyz(workspace, home, *args, stdin=b""):
    return await trio.run_process(
        [*NYZ, *args], cwd=workspace, env=nyz_env(home), stdin=stdin,
        capture_stdout=True, capture_stderr=True, check=False)


async def test_a_non_utf8_prompt_in_argv_is_sent_replaced_and_said_once(workspace, home,
                                                                         configure):
    async with open_fake_llm(script=[reply("fixed")]) as server:
        configure(workspace, server.url_for("openai"))
        done = await _nyz(workspace, home, "run", "--trust", "full", b"fix \xff it")
    err = done.stderr.decode()
    assert done.returncode == 0, err
    assert done.stdout.decode().strip() == "fixed"
    assert err.count("UTF-8") == 1 and "Error" not in err and "Traceback" not in err, err
    assert "the prompt in the arguments is not valid UTF-8 (byte 0xff at position 4)" in err
    assert server.requests[0].last_user_text() == "fix \ufffd it"
    [meta] = _sessions(home)  # the session took its turn and is whole
    assert meta.title != "(untitled)"


async def test_a_non_utf8_prompt_on_stdin_is_sent_replaced_and_said_once(workspace, home,
                                                                          configure):
    async with open_fake_llm(script=[reply("read it")]) as server:
        configure(workspace, server.url_for("openai"))
        done = await _nyz(workspace, home, "run", "--trust", "full",
                          stdin=b"caf\xe9 notes\n")
    err = done.stderr.decode()
    assert done.returncode == 0, err
    assert err.count("UTF-8") == 1 and "Error" not in err, err
    assert "the prompt on stdin is not valid UTF-8 (byte 0xe9 at position 3)" in err
    assert server.requests[0].last_user_text().startswith("caf\ufffd notes")
    assert len(_sessions(home)) == 1


async def test_a_non_utf8_line_in_the_line_chat_is_sent_not_the_end(workspace, home,
                                                                     configure):
    async with open_fake_llm(script=[reply("seen")]) as server:
        configure(workspace, server.url_for("openai"))
        proc = await trio.lowlevel.open_process(
            NYZ, cwd=workspace, env=nyz_env(home), stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out = bytearray()
        await read_until(proc.stdout, out, b"> ")
        await proc.stdin.send_all(b"na\xefve\n")
        await read_until(proc.stdout, out, b"seen")
        await proc.stdin.aclose()
        with trio.fail_after(60):
            assert await proc.wait() == 0
        err = (await proc.stderr.receive_some(65536)).decode()
    assert "not valid UTF-8 (byte 0xef at position 2)" in err, err
    assert server.requests[0].last_user_text() == "na\ufffdve"
