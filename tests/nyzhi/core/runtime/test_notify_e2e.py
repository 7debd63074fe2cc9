"""``[notify]`` (issue 37): a long turn's end and a waiting approval reach a webhook, received
by a real HTTP server on loopback, in the JSON Slack and Discord both take; a short turn sends
nothing; the webhook URL (a credential) never reaches the session log."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import trio

from nyzhi.testing.cli import run_nyz
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call


class Hook:
    """A loopback webhook receiver: every POST's path, headers and JSON body."""

    def __init__(self) -> None:
        self.received: list[tuple[str, dict[str, str], dict]] = []
        self.status = 200
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                hook.received.append((self.path, dict(self.headers), json.loads(body)))
                self.send_response(hook.status)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/services/T0/B0/secret-part"

    @property
    def bodies(self) -> list[dict]:
        return [body for _, _, body in self.received]


@pytest.fixture
def hook() -> Iterator[Hook]:
    h = Hook()
    thread = threading.Thread(target=h.server.serve_forever, daemon=True)
    thread.start()
    yield h
    h.server.shutdown()
    thread.join()
    h.server.server_close()


def notify_config(url: str, after: str = "1ms") -> str:
    return f'[notify]\nafter = "{after}"\nwebhook_url = "{url}"\nbell = false\n'


async def test_a_long_turn_ends_with_a_webhook(workspace, home, configure, hook):
    # the model repeats the webhook URL: a credential, redacted everywhere it would show
    async with open_fake_llm(script=[reply(f"ALL DONE HERE, see {hook.url}")]) as server:
        configure(workspace, server.url_for("openai"), extra=notify_config(hook.url))
        with trio.fail_after(60):
            proc = await run_nyz(workspace, home, "run", "do the long thing")
            shown = await run_nyz(workspace, home, "config", "get", "notify.webhook_url")
    assert proc.returncode == 0, proc.stderr.decode()
    assert b"secret-part" not in proc.stdout + shown.stdout and shown.returncode == 0
    [(path, headers, body)] = hook.received
    assert path == "/services/T0/B0/secret-part"
    assert headers["Content-Type"] == "application/json"
    # Slack reads "text", Discord "content": the same line
    assert body["text"] == body["content"]
    assert body["text"].startswith(f"nyz · {workspace.name}: turn finished after ")
    assert body["text"].endswith(": ALL DONE HERE, see [redacted: notify.webhook_url]")
    assert body["nyz"]["event"] == "turn_complete" and body["nyz"]["session_id"]
    # the URL is a credential: redacted in the session log
    logs = list((home / ".local/share/nyzhi/sessions").glob("*.jsonl"))
    assert logs and all(b"secret-part" not in p.read_bytes() for p in logs)


async def test_a_short_turn_sends_nothing(workspace, home, configure, hook):
    async with open_fake_llm(script=[reply("quick")]) as server:
        configure(workspace, server.url_for("openai"), extra=notify_config(hook.url, "1h"))
        with trio.fail_after(60):
            proc = await run_nyz(workspace, home, "run", "quick one")
    assert proc.returncode == 0, proc.stderr.decode()
    assert hook.received == []


async def test_an_approval_that_waits_is_sent(workspace, home, configure, hook):
    script = [reply(tool_calls=[tool_call("write", {"file_path": "note.txt", "content": "hi"})]),
              reply("WROTE-IT")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"), extra=notify_config(hook.url, "1h"))
        with trio.fail_after(60):
            proc = await run_nyz(workspace, home, "chat", "--plain",
                                 stdin=b"write a note\ny\n")
    assert proc.returncode == 0, proc.stderr.decode()
    assert (workspace / "note.txt").read_text() == "hi"
    [body] = hook.bodies  # the turn was short: only the approval
    assert body["nyz"]["event"] == "approval_request"
    assert "approval needed to run write" in body["text"]


async def test_a_failing_webhook_is_one_warning_and_the_run_succeeds(workspace, home,
                                                                     configure, hook):
    hook.status = 404
    async with open_fake_llm(script=[reply("done")]) as server:
        configure(workspace, server.url_for("openai"), extra=notify_config(hook.url))
        with trio.fail_after(60):
            proc = await run_nyz(workspace, home, "run", "go")
    assert proc.returncode == 0
    assert len(hook.received) == 1
    err = proc.stderr.decode()
    assert "could not notify through the notification webhook: the webhook answered HTTP 404" \
        in err
    assert "secret-part" not in err


async def test_a_bad_notify_key_names_the_file_and_key(workspace, home, configure):
    configure(workspace, "http://127.0.0.1:9/v1")
    with (workspace / ".nyzhi" / "config.toml").open("a") as f:
        f.write('[notify]\nwebhook_url = "ftp://x"\n')
    with trio.fail_after(60):
        proc = await run_nyz(workspace, home, "run", "go")
    err = proc.stderr.decode()
    assert proc.returncode != 0
    assert "config.toml: notify: expected webhook_url must be an http(s):// URL" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("osc", ["9", "777"])
async def test_the_console_rings_and_sends_an_osc_notification(workspace, home, configure, osc):
    """In the console (tmux), the note goes to the terminal: the bytes the pane received
    (``pipe-pane``, before tmux interprets them) hold the OSC 9 or 777 sequence and the
    bell."""
    from nyzhi.testing.tmux import INPUT_READY, POLL_S, TmuxPane, open_console, say

    if not TmuxPane.available():
        pytest.skip("tmux is not installed")
    raw = workspace.parent / "pane.raw"
    raw.touch()
    async with open_fake_llm(script=[reply("CONSOLE-ANSWER")]) as server:
        configure(workspace, server.url_for("openai"),
                  extra=f'[notify]\nafter = "1ms"\nosc = "{osc}"\nbell = true\n')
        async with open_console(workspace, home) as pane:
            await pane.tmux("pipe-pane", "-o", f"cat >> {raw}")
            await pane.wait_for(INPUT_READY)
            await say(pane, "hello")
            await pane.wait_for("CONSOLE-ANSWER")
            title = f"nyz · {workspace.name}"
            expected = (f"\x1b]9;{title}: " if osc == "9" else f"\x1b]777;notify;{title};"
                        ).encode() + b"turn finished after "
            with trio.fail_after(20):  # as pane.wait_for: the one acceptable poll
                while True:
                    if expected in raw.read_bytes():
                        break
                    await trio.sleep(POLL_S)
    data = raw.read_bytes()
    start = data.index(expected)
    assert data[start:].split(b"\x07", 1)[0].endswith(b": CONSOLE-ANSWER")
    assert data[start:].split(b"\x07", 2)[1] == b""  # OSC ended by BEL, then the bell itself


async def test_desktop_runs_notify_send(workspace, home, configure, tmp_path):
    """``desktop = true``: notify-send with the title and body. No notification daemon runs
    here, so a stand-in ``notify-send`` on PATH records its arguments."""
    from nyzhi.testing.cli import NYZ, nyz_env

    bindir = tmp_path / "bin"
    bindir.mkdir()
    record = tmp_path / "notify-send.args"
    script = bindir / "notify-send"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {record}\n')
    script.chmod(0o755)
    env = {**nyz_env(home), "PATH": f"{bindir}:{os.environ['PATH']}", "DISPLAY": ":99"}
    async with open_fake_llm(script=[reply("DESKTOP-DONE")]) as server:
        configure(workspace, server.url_for("openai"),
                  extra='[notify]\nafter = "1ms"\ndesktop = true\n')
        with trio.fail_after(60):
            proc = await trio.run_process([*NYZ, "run", "go"], cwd=workspace, env=env,
                                          capture_stdout=True, capture_stderr=True,
                                          check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    app, title, body = record.read_text().splitlines()
    assert app == "--app-name=nyz" and title == f"nyz · {workspace.name}"
    assert body.startswith("turn finished after ") and body.endswith(": DESKTOP-DONE")


async def test_a_failing_webhook_is_a_notice_in_the_console(workspace, home, configure, hook):
    """Interactive, the warning is an event the console shows (stderr would scribble over
    the full screen)."""
    from nyzhi.testing.tmux import INPUT_READY, TmuxPane, open_console, say

    if not TmuxPane.available():
        pytest.skip("tmux is not installed")
    hook.status = 500
    async with open_fake_llm(script=[reply("CONSOLE-DONE")]) as server:
        configure(workspace, server.url_for("openai"), extra=notify_config(hook.url))
        async with open_console(workspace, home) as pane:
            await pane.wait_for(INPUT_READY)
            await say(pane, "hello")
            screen = await pane.wait_for("could not notify through the notification webhook")
            assert "HTTP 500" in screen and "secret-part" not in screen
    assert len(hook.received) == 1
