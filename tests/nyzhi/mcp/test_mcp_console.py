"""`/mcp` in the line chat: server status, a resource, and a server prompt sent as a message."""

from __future__ import annotations

import trio
from _mcp_servers import toml_server

from nyzhi.testing.cli import read_until, start_chat
from nyzhi.testing.fake_llm import open_fake_llm, reply


async def test_mcp_command_lists_reads_and_sends_a_prompt(workspace, home, configure,
                                                          npm_servers):
    extra = toml_server("everything", str(npm_servers["everything"]), [])
    async with open_fake_llm(script=[reply("got the prompt")]) as server:
        configure(workspace, server.url_for("openai"), extra=extra)
        proc, out = await start_chat(workspace, home)
        del out[:]
        await proc.stdin.send_all(b"/mcp\n")
        await read_until(proc.stdout, out, b"\n> ")
        with trio.fail_after(60):
            while b"connected" not in out:  # still starting: ask again (each waits a reply)
                assert b"starting" in out, bytes(out)
                del out[:]
                await proc.stdin.send_all(b"/mcp\n")
                await read_until(proc.stdout, out, b"\n> ")
        assert b"everything: connected \xc2\xb7 15 tools" in out
        assert b"prompt everything simple-prompt" in out
        uri = next(line.split()[2] for line in out.decode().splitlines()
                   if line.strip().startswith("resource everything"))
        del out[:]
        await proc.stdin.send_all(f"/mcp read everything {uri}\n".encode())
        await read_until(proc.stdout, out, b"\n> ")
        assert len(out.strip()) > 10
        del out[:]
        await proc.stdin.send_all(b"/mcp prompt everything simple-prompt\n")
        await read_until(proc.stdout, out, b"got the prompt")
        assert b"[sending prompt everything/simple-prompt]" in out
        sent = server.requests[0].last_user_text()
        assert sent.strip() and "/mcp" not in sent
        await proc.stdin.send_all(b"/exit\n")
        with trio.fail_after(30):
            assert await proc.wait() == 0
