"""The web console's page in a real headless Chromium (Debian's ``chromium``, installed by
``make test``), driven over CDP, against a real ``nyz serve`` and the scripted fake LLM.

Without chromium these tests are skipped, saying why; in CI (``CI`` set) they fail instead,
since ``make test`` installs it there.
"""

from __future__ import annotations

import os

import pytest

from nyzhi.testing.browser import chromium, open_browser
from nyzhi.testing.cli import settled_running, started_running
from nyzhi.testing.fake_llm import PerAgent, open_fake_llm, reply, tool_call
from nyzhi.testing.web import TOKEN, serve_nyz

if chromium() is None:
    if os.environ.get("CI"):
        raise RuntimeError("chromium is missing in CI: make test installs it "
                           "(scripts/system-deps.sh test)")
    pytestmark = pytest.mark.skip(
        reason="chromium is not installed (make test installs it: apt-get install chromium)")

ANSWER = "document.querySelector('.assistant') && document.querySelector('.assistant').innerText"


def page_url(srv, token: str = TOKEN) -> str:
    return f"http://127.0.0.1:{srv.port}/#token={token}"


async def test_the_page_loads_with_the_token_streams_an_answer_and_refuses_without_it(
        workspace, home, configure, tmp_path):
    script = [reply("# Done\n\nHello from the **fake** model, with `code`.", chunk_size=3)]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with serve_nyz(workspace, home) as srv, open_browser(tmp_path / "profile") as br:
            page = await br.new_page()
            await page.goto(f"http://127.0.0.1:{srv.port}/")
            assert await page.wait("document.body.dataset.state === 'no-token' && "
                                   "document.body.innerText")
            await page.goto(page_url(srv, "not-the-token"))
            assert await page.wait("document.body.dataset.state === 'refused'")
            await page.goto(page_url(srv))
            await page.wait("document.body.dataset.state === 'connected'")
            await page.type_and_send("say hello")
            await page.wait("document.querySelector('.msg.user')")
            text = await page.wait(f"({ANSWER} || '').includes('code.') && {ANSWER}")
            assert "Hello from the fake model, with code." in text
            html = await page.evaluate("document.querySelector('.assistant').innerHTML")
            assert "<strong>fake</strong>" in html and "<code>code</code>" in html
            assert "<h3>Done</h3>" in html
            await page.screenshot(tmp_path / "answer.png")
            # slash-command completion from the one table, and a command's output
            await page.evaluate("""(() => { const i = document.getElementById('prompt');
                i.value = '/statu'; i.dispatchEvent(new Event('input')); })()""")
            shown = await page.wait("!document.getElementById('complete').hidden && "
                                    "document.getElementById('complete').innerText")
            assert shown.startswith("/status")
            await page.evaluate("""document.getElementById('prompt').dispatchEvent(
                new KeyboardEvent('keydown', {key: 'Tab'}))""")
            assert await page.evaluate("document.getElementById('prompt').value") == "/status "
            await page.type_and_send("/status")
            status = await page.wait("[...document.querySelectorAll('.note.output')]"
                                     ".map(n => n.innerText).join('\\n')")
            assert "fake-model-1" in status


async def test_an_approval_is_answered_from_the_page_and_two_pages_see_it(
        workspace, home, configure, tmp_path):
    script = [reply(tool_calls=[tool_call("write", {"file_path": "note.txt", "content": "hi"})]),
              reply("WROTE-IT")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with serve_nyz(workspace, home) as srv, open_browser(tmp_path / "profile") as br:
            one, two = await br.new_page(), await br.new_page()
            await one.goto(page_url(srv))
            await one.wait("document.body.dataset.state === 'connected'")
            await two.goto(await one.evaluate("location.href"))  # the same session, by id
            await two.wait("document.body.dataset.state === 'connected'")
            await one.type_and_send("write a note")
            for page in (one, two):
                await page.wait("document.querySelector('dialog#ask[open]')")
            assert "Approve write?" in await two.evaluate(
                "document.querySelector('dialog').innerText")
            await two.screenshot(tmp_path / "approval.png")
            assert not (workspace / "note.txt").exists()
            await two.click("#approve")
            for page in (one, two):
                await page.wait(f"({ANSWER} || '').includes('WROTE-IT')")
                await page.wait("!document.querySelector('dialog#ask[open]')")
                await page.wait("document.querySelector('details.tool .state')"
                                ".innerText.startsWith('done')")
            assert (workspace / "note.txt").read_text() == "hi"
            # the write's card shows its diff, the added line marked
            assert await one.evaluate("[...document.querySelectorAll('details.tool pre .add')]"
                                      ".map(s => s.textContent.trim())") == ["+hi"]
            # a reload resumes the session with every event
            before = await one.evaluate("document.getElementById('stream').innerText")
            await one.reload()
            await one.wait(f"({ANSWER} || '').includes('WROTE-IT')")
            after = await one.evaluate("document.getElementById('stream').innerText")
            assert after == before


async def test_cancel_from_the_tree_stops_a_running_bash(workspace, home, configure, tmp_path):
    marker = "876551"
    command = f"sleep {marker} & echo READY-TO-$((6*7)); sleep {marker}"
    script = [reply(tool_calls=[tool_call("bash", {"command": command, "timeout": 600})]),
              reply("after the cancel")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"),
                  extra='[agent.sandbox]\nlevel = "full-access"\n')
        async with serve_nyz(workspace, home, "--trust", "full") as srv, \
                open_browser(tmp_path / "profile") as br:
            page = await br.new_page()
            await page.goto(page_url(srv))
            await page.wait("document.body.dataset.state === 'connected'")
            await page.type_and_send("run it")
            await page.wait("document.querySelector('details.tool pre').textContent"
                            ".includes('READY-TO-42')")
            assert await started_running(marker)
            await page.click(".node[data-path='/agents/main'] .cancel-agent")
            await page.wait("document.getElementById('stream').innerText.includes('[cancelled]')")
            assert await settled_running(marker) == []


def three_agents() -> PerAgent:
    return PerAgent({
        "MAIN": [reply(tool_calls=[
            tool_call("spawn_agent", {"message": "EXPLORE-A look around", "agent_type": "worker"}),
            tool_call("spawn_agent", {"message": "EXPLORE-B read the docs",
                                      "agent_type": "worker"})]),
                 reply(tool_calls=[tool_call("wait", {"ids": ["/agents/main/worker-1",
                                                              "/agents/main/worker-2"]})]),
                 reply("## Summary\n\nBoth workers reported:\n\n- **A** found `src/`\n"
                       "- **B** read the docs\n\n```python\nprint('done')\n```")],
        "EXPLORE-A": [reply("found src/", thinking="looking at the tree first")],
        "EXPLORE-B": [reply("read the docs")],
    })


async def test_subagents_show_in_the_tree_and_screenshots_dark_and_light(
        workspace, home, configure, tmp_path):
    agents = three_agents()
    async with open_fake_llm(script=agents) as server:
        configure(workspace, server.url_for("openai"))
        async with serve_nyz(workspace, home) as srv, open_browser(tmp_path / "profile") as br:
            page = await br.new_page()
            await page.goto(page_url(srv))
            await page.wait("document.body.dataset.state === 'connected'")
            await page.type_and_send("MAIN explore with two workers")
            await page.wait(f"({ANSWER} || '').length && "
                            "document.getElementById('stream').innerText.includes('Both workers')")
            nodes = await page.wait(
                "document.querySelectorAll('.node').length === 3 && "
                "[...document.querySelectorAll('.node')].map(n => n.dataset.path + ' ' + "
                "n.dataset.status)")
            assert nodes[0].startswith("/agents/main ")
            assert {n.split()[0] for n in nodes[1:]} == {"/agents/main/worker-1",
                                                        "/agents/main/worker-2"}
            assert all(n.split()[1] in ("completed", "idle", "shutdown") for n in nodes[1:])
            # selecting a subagent shows its stream only
            await page.click(".node[data-path='/agents/main/worker-1']")
            shown = await page.evaluate("[...document.querySelectorAll('#stream > .msg')]"
                                        ".filter(m => !m.hidden).map(m => m.dataset.agent)")
            assert shown and set(shown) == {"/agents/main/worker-1"}
            await page.click(".node[data-path='/agents/main/worker-1']")  # all again
            await page.evaluate("document.querySelectorAll('details.tool')[0].open = true")
            for theme in ("dark", "light"):
                await page.evaluate(f"document.documentElement.dataset.theme = '{theme}'")
                path = await page.screenshot(tmp_path / f"console-{theme}.png")
                assert path.stat().st_size > 10_000
    print("screenshots:", tmp_path)
