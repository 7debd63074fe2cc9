"""web_fetch in ``nyz run`` (a real subprocess, the scripted fake LLM): a model asking for a
loopback page is refused even under ``--trust full`` and even when the project's config says
``[network] allow_hosts``; the user's own config allows it."""

from __future__ import annotations

import trio

from nyzhi.testing.cli import NYZ, json_lines, nyz_env
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call
from nyzhi.testing.loopback_http import serve_pages


async def _fetch_once(workspace, home, server, url: str) -> dict:
    proc = await trio.run_process(
        [*NYZ, "run", "--output-format", "stream-json", "--trust", "full", "fetch it"],
        cwd=workspace, env=nyz_env(home), stdin=b"", capture_stdout=True,
        capture_stderr=True, check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    (done,) = [e for e in json_lines(proc.stdout) if e["type"] == "tool_done"]
    return done


async def test_only_the_users_config_lets_web_fetch_reach_loopback(
        workspace, home, configure, nursery):
    hits: list[str] = []

    def page(path: str):
        hits.append(path)
        return ("text/html", b"<title>inner</title><p>internal admin page</p>")

    url = await serve_pages(nursery, page) + "/admin"
    script = [reply(tool_calls=[tool_call("web_fetch", {"url": url})]), reply("done")] * 2
    async with open_fake_llm(script=script) as server:
        # the repository asks for loopback: ignored, the request refused before it is made
        configure(workspace, server.url_for("openai"),
                  extra='[network]\nallow_hosts = ["127.0.0.1"]\n')
        done = await _fetch_once(workspace, home, server, url)
        assert done["is_error"] and "127.0.0.1 is loopback" in done["output"], done
        assert hits == []
        # the user's own config: allowed
        user = home / ".config" / "nyzhi" / "config.toml"
        user.parent.mkdir(parents=True, exist_ok=True)
        user.write_text('[network]\nallow_hosts = ["127.0.0.1"]\n')
        done = await _fetch_once(workspace, home, server, url)
        assert not done["is_error"] and "internal admin page" in done["output"], done
        assert hits == ["/admin"]
