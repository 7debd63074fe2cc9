"""A live session's socket and ``nyz attach`` (issue 50 item 8): a running ``nyz run`` or console
serves its session on an owner-only unix socket; several front ends see every event; an approval answered
from one is seen answered by the others and the run goes on; a front end that goes away does
not stop it; ``nyz sessions`` marks it live while it runs; ``nyz attach`` in tmux shows its
stream and answers its approval. Real processes, a real socket, a real tmux; every wait is on
a condition."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
import trio

from nyzhi.testing.cli import NYZ, json_lines, nyz_env, run_nyz
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call
from nyzhi.testing.tmux import INPUT_READY, TmuxPane, open_console, say
from nyzhi.testing.waits import until

MARK = "attached-run-ok"
ANSWER = "Done: the command printed its line."


@pytest.fixture
def runtime():
    """A private runtime directory of a path short enough for a unix socket under it (a
    pytest temp path is not)."""
    import shutil
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="nyzrt-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _env(home: Path, runtime: Path) -> dict[str, str]:
    return {**nyz_env(home), "XDG_RUNTIME_DIR": str(runtime)}


def _held_script(released: trio.Event):
    """The model waits until the test has attached, then asks for ``bash`` (which needs a
    person's approval), then answers."""
    calls = 0

    async def script(request):
        nonlocal calls
        calls += 1
        if calls == 1:
            await released.wait()
            return reply(tool_calls=[tool_call("bash", {"command": f"echo {MARK}"})])
        return reply(ANSWER)

    return script


async def _socket(runtime: Path) -> Path:
    live = runtime / "nyzhi" / "live"

    def found() -> Path | None:
        return next(iter(sorted(live.glob("*.sock"))), None) if live.is_dir() else None

    return await until(found, what="the run's live socket")


class Client:
    """One front end on the live socket, speaking its JSON lines."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.buffer = b""
        self.seen: list[dict] = []

    @classmethod
    async def attach(cls, path: Path) -> Client:
        client = cls(await trio.open_unix_socket(str(path)))
        await client.send({"type": "hello", "protocol": 1})
        return client

    async def send(self, message: dict) -> None:
        await self.stream.send_all((json.dumps(message) + "\n").encode())

    async def next(self) -> dict | None:
        with trio.fail_after(60):
            while b"\n" not in self.buffer:
                chunk = await self.stream.receive_some(65536)
                if not chunk:
                    return None
                self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        message = json.loads(line)
        self.seen.append(message)
        return message

    async def until(self, check) -> dict:
        while True:
            message = await self.next()
            assert message is not None, f"closed before the message looked for; saw {self.seen}"
            if check(message):
                return message


def _event(kind: str):
    return lambda m: m.get("type") == "event" and m["event"]["type"] == kind


async def _start_run(workspace: Path, env: dict, *args: str) -> trio.Process:
    return await trio.lowlevel.open_process(
        [*NYZ, "run", "--output-format", "stream-json", *args, "run the echo"],
        cwd=workspace, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE)


async def _finish(proc: trio.Process) -> tuple[int, bytes]:
    out = bytearray()
    with trio.fail_after(60):
        while chunk := await proc.stdout.receive_some(65536):
            out += chunk
        await proc.wait()
    return proc.returncode, bytes(out)


async def test_the_live_socket_is_owner_only_and_refuses_an_oversize_line(
        workspace, home, configure, runtime):
    released = trio.Event()
    async with open_fake_llm(script=_held_script(released)) as server:
        configure(workspace, server.url_for("openai"))
        proc = await _start_run(workspace, _env(home, runtime))
        try:
            path = await _socket(runtime)
            for d in (path.parent, path.parent.parent):
                st = os.lstat(d)
                assert stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == os.getuid()
            st = os.lstat(path)
            assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
            # a line past the bound: one clear error, and that peer alone is closed
            big = await trio.open_unix_socket(str(path))
            await big.send_all(b"x" * (1024 * 1024 + 10))
            got = b""
            with trio.fail_after(30):
                while chunk := await big.receive_some(65536):
                    got += chunk
            await big.aclose()
            error = json.loads(got.decode().strip().splitlines()[0])
            assert error["type"] == "error" and "longer than 1048576 bytes" in error["message"]
            # the session still serves others
            other = await Client.attach(path)
            welcome = await other.next()
            assert welcome["type"] == "welcome" and path.name.startswith(welcome["session_id"])
            system_python = shutil.which("python3", path="/usr/bin:/bin")
            if os.getuid() == 0 and system_python:
                # a peer of another uid is refused by its credentials (SO_PEERCRED), even
                # where the modes were loosened by mistake
                for d in (path.parent, path.parent.parent, runtime):
                    os.chmod(d, 0o711)
                os.chmod(path, 0o666)
                code = ("import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]);"
                        "print(s.recv(4096).decode())")  # refused before any hello
                refused = await trio.run_process(
                    [system_python, "-c", code, str(path)], user=65534, capture_stdout=True,
                    capture_stderr=True, check=False, cwd="/")
                assert "serves only its owner" in refused.stdout.decode(), refused.stderr.decode()[-400:].replace("\n", " | ")
            await other.stream.aclose()  # nobody attached: the run refuses the call, as before
            released.set()
        finally:
            released.set()
            code, out = await _finish(proc)
    assert code == 0
    assert not path.exists()  # gone with the session


async def test_two_front_ends_see_every_event_and_the_first_answer_wins(
        workspace, home, configure, runtime):
    released = trio.Event()
    async with open_fake_llm(script=_held_script(released)) as server:
        configure(workspace, server.url_for("openai"))
        proc = await _start_run(workspace, _env(home, runtime))
        try:
            path = await _socket(runtime)
            a, b = await Client.attach(path), await Client.attach(path)
            for c in (a, b):
                await c.until(lambda m: m.get("type") == "state")
            released.set()
            asks = [await c.until(_event("approval_request")) for c in (a, b)]
            request_id = asks[0]["event"]["request_id"]
            assert asks[1]["event"]["request_id"] == request_id
            await a.send({"type": "approve", "request_id": request_id, "answer": "approve"})
            await b.until(lambda m: m == {"type": "resolved", "request_id": request_id})
            # a late second answer is refused, not applied
            await b.send({"type": "approve", "request_id": request_id, "answer": "deny"})
            refusal = await b.until(lambda m: m.get("type") == "error")
            assert "already answered" in refusal["message"]
            await a.stream.aclose()  # the front end that answered goes away: the run goes on
            done = await b.until(_event("tool_done"))
            assert MARK in done["event"]["output"] and not done["event"]["is_error"]
            await b.until(_event("turn_complete"))
            seqs = [m["seq"] for m in b.seen if m.get("type") == "event"]
            assert seqs == sorted(seqs) and len(seqs) == len(set(seqs))
            # a's events up to where it left are b's too, in the same order
            a_events = [m for m in a.seen if m.get("type") == "event"]
            assert a_events == [m for m in b.seen if m.get("type") == "event"][:len(a_events)]
            await b.stream.aclose()
        finally:
            released.set()
            code, out = await _finish(proc)
    assert code == 0
    result = json_lines(out)[-1]
    assert result["type"] == "result" and result["result"] == ANSWER and not result["is_error"]


async def test_a_run_with_nobody_attached_still_refuses_what_needs_approval(
        workspace, home, configure, runtime):
    """Unattended, a headless run is as before: the call needing approval is refused."""
    released = trio.Event()
    released.set()
    async with open_fake_llm(script=_held_script(released)) as server:
        configure(workspace, server.url_for("openai"))
        proc = await _start_run(workspace, _env(home, runtime))
        code, out = await _finish(proc)
    done = [e for e in json_lines(out) if e["type"] == "tool_done"]
    assert code == 0 and done and done[0]["is_error"] and "headless" in done[0]["output"]


# A command of the session itself tries its own live socket: it lists the sockets and, for
# each, connects, says hello and prints the first line it gets back.
_REACH_OWN_SOCKET = (
    "python3 -c \"import glob,os,socket; "
    "found=glob.glob(os.environ['XDG_RUNTIME_DIR']+'/nyzhi/live/*.sock'); "
    "print('SOCKETS', len(found)); "
    "[print('REPLY', (lambda s: (s.connect(p), s.sendall(b'{\\\"type\\\": \\\"hello\\\", "
    "\\\"protocol\\\": 1}\\\\n'), s.recv(4096).decode())[-1])(socket.socket(socket.AF_UNIX))) "
    "for p in found]\""
)


@pytest.mark.parametrize("sandbox", ["workspace-write", "full-access"])
async def test_a_session_s_own_commands_cannot_reach_its_live_socket(
        workspace, home, configure, runtime, sandbox):
    """Nothing the agent runs may answer its own session's approvals: under bubblewrap the
    sockets' directory is masked (the command finds no socket); without a sandbox the socket
    refuses a process the session started (by its parent chain), before any hello."""
    calls = 0
    served: list[int] = []

    async def script(request):
        nonlocal calls
        calls += 1
        if calls == 1:
            return reply(tool_calls=[tool_call("bash", {"command": _REACH_OWN_SOCKET})])
        # the command has run and the session is still live: its socket, seen from outside
        served.append(len(list((runtime / "nyzhi" / "live").glob("*.sock"))))
        return reply(ANSWER)

    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        proc = await _start_run(workspace, _env(home, runtime), "--trust", "full",
                                "--sandbox", sandbox)
        code, out = await _finish(proc)
    done = [e for e in json_lines(out) if e["type"] == "tool_done"]
    assert code == 0 and done, out[-2000:]
    output = done[0]["output"]
    assert served == [1]  # there was a socket to reach
    if sandbox == "workspace-write":
        assert "SOCKETS 0" in output, output
    else:
        assert "SOCKETS 1" in output, output
        assert "a process this session started cannot attach to it" in output, output
        assert '"welcome"' not in output


async def test_nyz_sessions_marks_a_running_session_live_and_not_once_it_ended(
        workspace, home, configure, runtime):
    env = _env(home, runtime)
    released = trio.Event()
    async with open_fake_llm(script=_held_script(released)) as server:
        configure(workspace, server.url_for("openai"))
        proc = await _start_run(workspace, env)
        try:
            path = await _socket(runtime)
            session_id = path.name.removesuffix(".sock")

            async def listed() -> str:
                done = await trio.run_process([*NYZ, "sessions"], cwd=workspace, env=env,
                                              capture_stdout=True, check=True)
                return done.stdout.decode()

            async def live_row() -> str | None:
                rows = (await listed()).splitlines()
                return next((r for r in rows if r.startswith(session_id[:8])), None)

            row = None
            with trio.fail_after(60):
                while row is None:  # saved once its first message is (the run has started)
                    row = await live_row()
            lines = (await listed()).splitlines()
            assert lines[0].split()[-1] == "LIVE" and row.split()[-1] == "live"
        finally:
            released.set()
            code, _out = await _finish(proc)
    assert code == 0
    after = (await run_nyz(workspace, home, "sessions")).stdout.decode()
    assert session_id[:8] in after and "live" not in after.lower()


async def test_nyz_attach_with_nothing_live_says_so(workspace, home, runtime):
    env = _env(home, runtime)
    done = await trio.run_process([*NYZ, "attach"], cwd=workspace, env=env, check=False,
                                  capture_stdout=True, capture_stderr=True)
    assert done.returncode == 1
    assert done.stderr.decode().strip().splitlines() == [
        "nyz: no live session in this workspace (nyz attach SESSION attaches to another; "
        "nyz sessions marks the live ones)"]


@pytest.mark.skipif(not TmuxPane.available(), reason="tmux is not installed")
async def test_nyz_attach_in_tmux_shows_a_headless_run_and_answers_its_approval(
        workspace, home, configure, runtime, tmp_path):
    env = _env(home, runtime)
    released = trio.Event()
    async with open_fake_llm(script=_held_script(released)) as server:
        configure(workspace, server.url_for("openai"))
        proc = await _start_run(workspace, env)
        pane = TmuxPane(tmp_path / "tmux-attach.sock", width=100, height=30)
        try:
            await _socket(runtime)
            await pane.start([*NYZ, "attach"], cwd=workspace, env=env)
            await pane.wait_for("› run the echo")  # the backlog: the prompt typed elsewhere
            released.set()
            await pane.wait_for("Approve bash?")
            await pane.keys("y")
            screen = await pane.wait_for(ANSWER)
            assert "bash: approve" in screen
            code, out = await _finish(proc)
            assert code == 0
            result = json_lines(out)[-1]
            assert result["result"] == ANSWER and not result["is_error"]
            done = [e for e in json_lines(out) if e["type"] == "tool_done"]
            assert MARK in done[0]["output"] and not done[0]["is_error"]
            await pane.wait_for("the session ended")
            await pane.keys("C-c")
            assert await pane.wait_exit() == 0
        finally:
            released.set()
            pane.kill()
            if proc.returncode is None:
                proc.kill()
                await proc.wait()


def _approval_then_answer():
    """A model that asks for ``bash`` (which needs a person's approval), then answers."""
    return [reply(tool_calls=[tool_call("bash", {"command": f"echo {MARK}"})]), reply(ANSWER)]


@pytest.mark.skipif(not TmuxPane.available(), reason="tmux is not installed")
async def test_nyz_attach_in_tmux_shows_a_nyz_serve_session_and_answers_its_approval(
        workspace, home, configure, runtime, tmp_path, monkeypatch):
    """A ``nyz serve`` session serves its own hub on the live socket: ``nyz attach`` sees the
    page's turn and answers its approval, the page sees it answered, ``nyz sessions`` marks it
    live, a session the page opens gets its own socket, and stopping the server removes them."""
    from nyzhi.testing.web import event_type, serve_nyz

    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))  # serve_nyz's environment is ours
    env = _env(home, runtime)
    async with open_fake_llm(script=_approval_then_answer()) as server:
        configure(workspace, server.url_for("openai"))
        pane = TmuxPane(tmp_path / "tmux-serve.sock", width=100, height=30)
        try:
            async with serve_nyz(workspace, home) as srv, srv.connect() as page:
                welcome, _ = await page.hello()
                session_id = welcome["session_id"]
                path = await _socket(runtime)
                assert path.name == f"{session_id}.sock"
                await pane.start([*NYZ, "attach", session_id[:8]], cwd=workspace, env=env)
                await pane.wait_for("attached")
                await page.send({"type": "message", "text": "run the echo"})
                await pane.wait_for("› run the echo")  # the page's turn, seen in the console
                asked = await page.until(lambda m: event_type(m) == "approval_request")
                request_id = asked["event"]["request_id"]
                await pane.wait_for("Approve bash?")
                await pane.keys("y")
                await page.until(lambda m: m == {"type": "resolved", "request_id": request_id})
                done = await page.until(lambda m: event_type(m) == "tool_done")
                assert MARK in done["event"]["output"] and not done["event"]["is_error"]
                await page.until(lambda m: event_type(m) == "turn_complete")
                assert "bash: approve" in await pane.wait_for(ANSWER)
                listed = await trio.run_process([*NYZ, "sessions"], cwd=workspace, env=env,
                                                capture_stdout=True, check=True)
                row = next(r for r in listed.stdout.decode().splitlines()
                           if r.startswith(session_id[:8]))
                assert row.split()[-1] == "live"
                # a viewer on the socket is not a page: /quit says how it leaves
                viewer = await Client.attach(path)
                await viewer.send({"type": "command", "line": "/quit"})
                shown = await viewer.until(lambda m: m.get("type") == "output")
                assert shown["text"].startswith("detach to leave"), shown
                await viewer.stream.aclose()
                async with srv.connect() as other:  # a session the page opens: its own socket
                    new, _ = await other.hello(session="new")
                    await until(lambda: (runtime / "nyzhi" / "live" /
                                         f"{new['session_id']}.sock").exists(),
                                what="the new session's socket")
            assert not list(path.parent.glob("*.sock"))  # the server stopped: both are gone
            await pane.wait_for("the session ended")
        finally:
            pane.kill()


async def test_the_line_chat_is_live_and_an_answer_from_a_viewer_wins_over_its_prompt(
        workspace, home, configure, runtime):
    """``nyz chat --plain`` serves its session too: a viewer answers the approval the chat is
    asking, and the chat stops waiting for it, says so in one line, and takes the next line
    as a prompt (not as the answer to what was withdrawn)."""
    env = _env(home, runtime)
    script = [*_approval_then_answer(), reply("SECOND-ANSWER")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        proc = await trio.lowlevel.open_process(
            [*NYZ, "chat", "--plain"], cwd=workspace, env=env, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        out = bytearray()

        async def shown(text: str) -> None:
            with trio.fail_after(60):
                while text.encode() not in out:
                    chunk = await proc.stdout.receive_some(65536)
                    assert chunk, f"the chat ended before {text!r}: {out.decode()[-2000:]}"
                    out.extend(chunk)

        try:
            viewer = await Client.attach(await _socket(runtime))
            await viewer.until(lambda m: m.get("type") == "state")
            await proc.stdin.send_all(b"run the echo\n")
            asked = await viewer.until(_event("approval_request"))
            request_id = asked["event"]["request_id"]
            await shown("Approve bash")  # the chat asks too, and waits for a line
            await viewer.send({"type": "approve", "request_id": request_id, "answer": "approve"})
            await shown("[approval answered in another front end]")
            done = await viewer.until(_event("tool_done"))
            assert MARK in done["event"]["output"] and not done["event"]["is_error"]
            await shown(ANSWER)
            await proc.stdin.send_all(b"and again\n")
            await shown("SECOND-ANSWER")
            await proc.stdin.aclose()
            with trio.fail_after(60):
                assert await proc.wait() == 0
            await viewer.stream.aclose()
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    texts = [r.last_user_text() for r in server.requests if r.wire is not None]
    assert texts[-1] == "and again" and out.decode().count("answered in another front end") == 1


@pytest.mark.skipif(not TmuxPane.available(), reason="tmux is not installed")
async def test_nyz_attach_onto_a_running_console_answers_its_approval_and_closes_its_dialog(
        workspace, home, configure, runtime, tmp_path):
    """A second console attached to a first: it shows the first's stream and answers the
    approval the first asks; the first's dialog closes, saying it was answered elsewhere, and
    its transcript shows the tool ran."""
    env = _env(home, runtime)
    released = trio.Event()
    async with open_fake_llm(script=_held_script(released)) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home, env={"XDG_RUNTIME_DIR": str(runtime)},
                                width=100, height=30) as console:
            await console.wait_for(INPUT_READY)
            await _socket(runtime)
            await say(console, "run the echo")
            attached = TmuxPane(tmp_path / "tmux-attach.sock", width=100, height=30)
            try:
                await attached.start([*NYZ, "attach"], cwd=workspace, env=env)
                await attached.wait_for("› run the echo")  # the console's prompt, its backlog
                released.set()
                await console.wait_for("Approve bash?")
                await attached.wait_for("Approve bash?")
                await attached.keys("y")
                screen = await attached.wait_for(ANSWER)
                assert "bash: approve" in screen
                screen = await console.wait_for(ANSWER)
                assert "Approve bash?" not in screen
                assert "answered in another front end" in screen
                assert MARK in screen  # the tool ran: its output in the console's card
                await attached.keys("C-c")
                assert await attached.wait_exit() == 0
            finally:
                released.set()
                attached.kill()
            await say(console, "/quit")  # the viewer went away: the console goes on
            assert await console.wait_exit() == 0


@pytest.mark.skipif(not TmuxPane.available(), reason="tmux is not installed")
async def test_nyz_sessions_marks_a_running_console_s_session_live(
        workspace, home, configure, runtime):
    env = _env(home, runtime)
    async with open_fake_llm(script=[reply("FIRST answer")]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home, env={"XDG_RUNTIME_DIR": str(runtime)},
                                width=100, height=30) as console:
            await console.wait_for(INPUT_READY)
            path = await _socket(runtime)
            session_id = path.name.removesuffix(".sock")
            await say(console, "hello")  # the session is kept (listed) once it took a turn
            await console.wait_for("FIRST answer")
            done = await trio.run_process([*NYZ, "sessions"], cwd=workspace, env=env,
                                          capture_stdout=True, check=True)
            rows = done.stdout.decode().splitlines()
            row = next(r for r in rows if r.startswith(session_id[:8]))
            assert rows[0].split()[-1] == "LIVE" and row.split()[-1] == "live"
            await say(console, "/quit")
            assert await console.wait_exit() == 0
    assert not path.exists()  # gone with the console
