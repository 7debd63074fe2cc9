"""Every bad input one clear line, nothing lost (issue 55): a prompt that is not UTF-8 (argv,
piped stdin, the line chat), a failed start, a prompt larger than the window. Real nyz, the
fake LLM over loopback HTTP, the real session store."""

from __future__ import annotations

import subprocess

import trio

from nyzhi.core.runtime.sessions.store import SessionStore
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


async def test_a_failed_start_leaves_no_session(workspace, home, configure):
    """`-i` with a file that is not an image: one line naming it, nothing sent, and no empty
    "(untitled)" session in `nyz sessions` nor on disk."""
    (workspace / "notes.png").write_text("not an image\n")
    async with open_fake_llm(script=[reply("never")]) as server:
        configure(workspace, server.url_for("openai"))
        done = await _nyz(workspace, home, "run", "-i", "notes.png", "look at this")
        listed = await _nyz(workspace, home, "sessions")
    assert done.returncode == 1
    assert "notes.png is not a PNG, JPEG, GIF or WebP image" in done.stderr.decode()
    assert server.requests == []
    assert _sessions(home) == []
    assert b"untitled" not in listed.stdout, listed.stdout.decode()
    assert list((home / ".local" / "share" / "nyzhi" / "sessions").glob("*.jsonl")) == []


async def test_a_prompt_larger_than_the_window_is_refused_before_anything_is_sent(
        workspace, home, configure):
    """A 2 MB prompt (about 500k tokens) against a 128k window: one line with both figures and
    the way out (a file), no request, exit 1, no session left."""
    async with open_fake_llm(script=[reply("never")]) as server:
        configure(workspace, server.url_for("openai"))
        done = await _nyz(workspace, home, "run", "--trust", "full",
                          stdin=b"word " * 400_000)
    err = done.stderr.decode()
    assert done.returncode == 1
    assert server.requests == []  # refused before anything is sent
    [line] = [ln for ln in err.splitlines() if "the prompt is about" in ln]
    assert "500,0" in line and "2,000,0" in line  # ~tokens and characters of the prompt
    assert "128,000-token context window" in line and "Save it to a file" in line
    assert "Traceback" not in err
    assert _sessions(home) == []


async def test_a_corrupt_session_line_is_dropped_said_once_and_kept_aside(workspace, home,
                                                                           configure):
    """A torn line mid-log and a broken meta.json: `nyz sessions` says once which file it
    rebuilt; `--continue` goes on, says once which file and line it skipped, keeps the
    damaged log beside the repaired one, and a second resume says nothing."""
    async with open_fake_llm(script=[reply("one"), reply("two"), reply("three")]) as server:
        configure(workspace, server.url_for("openai"))
        first = await _nyz(workspace, home, "run", "--trust", "full", "first")
        assert first.returncode == 0, first.stderr.decode()
        [meta] = _sessions(home)
        root = home / ".local" / "share" / "nyzhi" / "sessions"
        log, meta_file = root / f"{meta.id}.jsonl", root / f"{meta.id}.meta.json"
        lines = log.read_bytes().splitlines(keepends=True)
        log.write_bytes(b"".join([*lines[:2], b'{"kind": "mess\n', *lines[2:]]))
        meta_file.write_text("{not json")
        listed = await _nyz(workspace, home, "sessions")
        assert listed.returncode == 0 and meta.id[:8].encode() in listed.stdout
        err = listed.stderr.decode()
        assert err.count("not valid session metadata") == 1 and str(meta_file) in err, err
        assert (root / f"{meta.id}.meta.json.damaged").read_text() == "{not json"
        again = await _nyz(workspace, home, "run", "--trust", "full", "--continue", "second")
        assert again.returncode == 0, again.stderr.decode()
        assert again.stdout.decode().strip() == "two"
        err = again.stderr.decode()
        assert err.count("skipped line 3") == 1 and str(log) in err, err
        assert b'{"kind": "mess\n' in (root / f"{meta.id}.jsonl.damaged").read_bytes()
        assert b'{"kind": "mess' not in log.read_bytes()
        third = await _nyz(workspace, home, "run", "--trust", "full", "--continue", "third")
        assert third.returncode == 0 and b"skipped" not in third.stderr
    sent = [m["content"] for m in server.requests[-1].json["messages"] if m["role"] == "user"]
    assert sent == ["first", "second", "third"]  # nothing of the session was lost
