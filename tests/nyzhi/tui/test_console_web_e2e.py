"""``/web`` in the real console (tmux, the fake LLM): the URL it prints opens the console's own
live session in a browser's protocol (a real WebSocket client), with what happened before
``/web`` as the backlog and what happens after live; a second ``/web`` prints the same URL;
the page going away leaves the console running; the console leaving stops the server."""

from __future__ import annotations

import json
import re

import pytest
import trio

from nyzhi.testing.fake_llm import open_fake_llm, reply
from nyzhi.testing.tmux import INPUT_READY, TmuxPane, open_console, say

pytestmark = pytest.mark.skipif(not TmuxPane.available(), reason="tmux is not installed")

URL = re.compile(r"http://127\.0\.0\.1:(\d+)/#token=([A-Za-z0-9_-]+)")


def urls(screen: str) -> list[tuple[str, str]]:
    return URL.findall(screen)  # the pane is wide enough for the URL on one row


async def receive(ws) -> dict:
    return json.loads(await ws.get_message())


async def until(ws, done) -> dict:
    with trio.fail_after(60):
        while True:
            message = await receive(ws)
            if done(message):
                return message


def event(message: dict) -> dict:
    return message["event"] if message.get("type") == "event" else {}


async def test_web_serves_the_consoles_own_session_with_its_backlog_and_live(
        workspace, home, configure):
    from trio_websocket import open_websocket_url

    script = [reply("FIRST answer"), reply("SECOND answer"), reply("THIRD answer")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home, width=120, height=40) as pane:
            await pane.wait_for(INPUT_READY)
            await say(pane, "/status")
            screen = await pane.wait_for(lambda s: re.search(r"session\s+[0-9a-f]{8}", s))
            console_id = re.search(r"session\s+([0-9a-f-]{8,})", screen).group(1)
            await say(pane, "before web")  # a turn before /web: the page's backlog
            await pane.wait_for("FIRST answer")
            await say(pane, "/web")
            screen = await pane.wait_for(lambda s: urls(s))
            [(port, token)] = urls(screen)

            # the same token protection as nyz serve: nothing but the shell without it
            stream = await trio.open_tcp_stream("127.0.0.1", int(port))
            async with stream:
                await stream.send_all(f"GET /static/app.js HTTP/1.1\r\nHost: 127.0.0.1:{port}"
                                      "\r\n\r\n".encode())
                got = b""
                with trio.fail_after(30):
                    while chunk := await stream.receive_some(65536):
                        got += chunk
            assert got.startswith(b"HTTP/1.1 401"), got[:80]
            assert b"X-Frame-Options: DENY" in got and b"Cache-Control: no-store" in got

            async with open_websocket_url(f"ws://127.0.0.1:{port}/ws?token={token}") as ws:
                await ws.send_message(json.dumps({"type": "hello", "protocol": 1}))
                welcome, state = await receive(ws), await receive(ws)
                assert welcome["type"] == "welcome" and state["type"] == "state"
                assert welcome["session_id"] == state["session_id"]
                assert state["session_id"].startswith(console_id)
                assert any(c["name"] == "/web" for c in welcome["commands"])
                # the backlog: the console's turn from before /web
                start = await until(ws, lambda m: event(m).get("type") == "turn_start")
                assert "before web" in event(start)["prompt"]
                done = await until(ws, lambda m: event(m).get("type") == "turn_complete")
                assert "FIRST answer" in event(done)["text"]

                await say(pane, "/web")  # again: the same server, the same URL
                await pane.wait_for(lambda s: len(urls(s)) == 2)
                assert set(urls(await pane.screen())) == {(port, token)}

                await say(pane, "after web")  # live: a turn typed in the console
                live = await until(ws, lambda m: event(m).get("type") == "turn_start")
                assert "after web" in event(live)["prompt"]
                done = await until(ws, lambda m: event(m).get("type") == "turn_complete")
                assert "SECOND answer" in event(done)["text"]
                assert live["seq"] > start["seq"]

            # the page went away: the console goes on
            await say(pane, "still here")
            await pane.wait_for("THIRD answer")
            await say(pane, "/quit")
            await pane.wait_exit()
        # the console left: so did its server
        with pytest.raises(OSError):
            await trio.open_tcp_stream("127.0.0.1", int(port))
