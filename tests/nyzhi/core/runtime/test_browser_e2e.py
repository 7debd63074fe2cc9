"""The browser tools in ``nyz run``: a real subprocess, the scripted fake LLM, a page served on
loopback and Debian's ``chromium``. The screenshot reaches the model as an image, approvals
hold headless, and when nyz exits no browser process or profile is left."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import trio

from nyzhi.testing.cli import NYZ, json_lines, nyz_env, running_with, settled_running
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call
from nyzhi.testing.loopback_http import serve_pages
from nyzhi.tools.cdp import BrowserUnavailable, find_browser

try:
    find_browser(None)
    HAVE_CHROMIUM = True
except BrowserUnavailable:
    HAVE_CHROMIUM = False

pytestmark = pytest.mark.skipif(
    not HAVE_CHROMIUM,
    reason="chromium is not installed (make test installs it: apt-get install chromium)")

PAGE = b"<!doctype html><title>Served</title><h1>Hello, browser</h1>"


def _allow_loopback(home: Path) -> Path:
    """The user's own config lets the model's requests reach the test page on loopback
    (``[network] allow_hosts``; a project's could not); where the browser's profiles go."""
    config = home / ".config" / "nyzhi" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    old = config.read_text() if config.exists() else ""
    config.write_text(old + '\n[network]\nallow_hosts = ["127.0.0.1"]\n')
    return home / ".local" / "state" / "nyzhi" / "browser"


async def _run(workspace, home, tmp, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {**nyz_env(home), "TMPDIR": str(tmp)}  # its temporary files, when the profile path is long
    return await trio.run_process(
        [*NYZ, "run", "--output-format", "stream-json", *args], cwd=workspace, env=env,
        stdin=b"", capture_stdout=True, capture_stderr=True, check=False)


async def test_screenshot_reaches_the_model_and_nothing_outlives_nyz(
        workspace, home, configure, tmp_path, nursery):
    url = await serve_pages(nursery, {"/": ("text/html", PAGE)}) + "/"
    # the browser's profile is made in TMPDIR: a short one of the test's own (Chromium's
    # sockets live there, and a Unix socket's path has room for 107 bytes only)
    tmp = Path(tempfile.mkdtemp(prefix="nyzb", dir="/tmp"))
    try:
        await _look_and_exit(workspace, home, configure, tmp, url)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


async def _look_and_exit(workspace, home, configure, tmp, url) -> None:
    profiles = _allow_loopback(home)
    script = [
        reply(tool_calls=[tool_call("browser_open", {"url": url})]),
        reply(tool_calls=[tool_call("browser_screenshot", {})]),
        reply("seen"),
        reply(tool_calls=[tool_call("browser_open", {"url": url})]),
        reply("denied"),
    ]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        proc = await _run(workspace, home, tmp, "--trust", "full", "look at the page")
        assert proc.returncode == 0, proc.stderr.decode()
        done = [e for e in json_lines(proc.stdout) if e["type"] == "tool_done"]
        assert [e["is_error"] for e in done] == [False, False], [e["output"] for e in done]
        assert "Hello, browser" in done[0]["output"]
        shots = list((workspace / ".nyzhi" / "screenshots").glob("*.png"))
        assert len(shots) == 1 and shots[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        # the screenshot went to the model as an image, beside the tool's text
        assert b"data:image/png;base64," in server.requests[2].body
        assert json.loads(server.requests[2].body)  # a well-formed request
        assert (workspace / ".nyzhi" / "screenshots" / ".gitignore").is_file()
        # nyz has exited: no process mentions the profile's directory, and it is gone
        assert await settled_running(str(profiles)) == []
        assert list(profiles.glob("nyz-browser-*")) == []
        assert list(tmp.glob("nyzb-*")) == []

        # headless without trust, a browser tool is refused as any network tool is
        proc = await _run(workspace, home, tmp, "open it")
        done = [e for e in json_lines(proc.stdout) if e["type"] == "tool_done"]
        assert done[0]["is_error"] and "--trust" in done[0]["output"]
        assert await settled_running(str(profiles)) == []


async def test_no_browser_outlives_nyz_killed_with_sigkill(
        workspace, home, configure, tmp_path, nursery):
    """kill -9 of nyz while its browser is open: the browser dies with it (its parent-death
    signal), and no process mentions the profile's directory."""
    import os
    import signal

    from nyzhi.testing.cli import wait_gone
    from nyzhi.testing.fake_llm import hang

    url = await serve_pages(nursery, {"/": ("text/html", PAGE)}) + "/"
    tmp = Path(tempfile.mkdtemp(prefix="nyzk", dir="/tmp"))
    profiles = _allow_loopback(home)
    script = [reply(tool_calls=[tool_call("browser_open", {"url": url})]), hang()]
    try:
        async with open_fake_llm(script=script) as server:
            configure(workspace, server.url_for("openai"))
            env = {**nyz_env(home), "TMPDIR": str(tmp)}
            proc = await trio.lowlevel.open_process(
                [*NYZ, "run", "--trust", "full", "open the page"], cwd=workspace, env=env,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL)
            try:
                with trio.fail_after(90):
                    second = await server.wait_for_requests(2)  # the page was opened
                assert "Hello, browser" in second.tool_results()[0]
                browsers = running_with(str(profiles))
                assert browsers, "the browser should be running now"
                os.kill(proc.pid, signal.SIGKILL)
                await proc.wait()
                await wait_gone(browsers)
            finally:
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
        assert await settled_running(str(profiles)) == []
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
