"""The browser tools against a real headless Chromium (Debian's ``chromium``, installed by
``make test``) and pages served on loopback: open, screenshot, evaluate, click, type; a browser
killed mid-call; file:// outside the workspace; no browser at all.

Without chromium these tests are skipped, saying why; in CI (``CI`` set) they fail instead.
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import struct
import tempfile
from pathlib import Path

import attrs
import pytest
import trio
from _toolctx import make_ctx

import actors
from nyzhi.core.runtime import browser as browser_core
from nyzhi.core.runtime.assembly import services_supervisor
from nyzhi.core.runtime.browser import BrowserPool, BrowserSettings
from nyzhi.testing.cli import settled_running
from nyzhi.testing.loopback_http import Page, serve_pages
from nyzhi.testing.waits import settled
from nyzhi.tools.builtin import browser as browser_tools
from nyzhi.tools.builtin.browser import (
    BrowserClickTool,
    BrowserEvaluateTool,
    BrowserOpenTool,
    BrowserScreenshotTool,
    BrowserTypeTool,
)
from nyzhi.tools.cdp import BrowserUnavailable, find_browser
from nyzhi.tools.netguard import NetPolicy
from nyzhi.tools.workspace_http import WorkspaceFiles

try:
    CHROMIUM: str | None = find_browser(None)
except BrowserUnavailable:
    CHROMIUM = None
    if os.environ.get("CI"):
        raise RuntimeError("chromium is missing in CI: make test installs it "
                           "(scripts/system-deps.sh)") from None

needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed (make test installs it: apt-get install chromium)")

PAGE = b"""<!doctype html><html><head><title>Counter</title></head>
<body style="margin:0">
<h1 id="h">Hello from loopback</h1>
<button id="b" onclick="document.getElementById('out').textContent = 'clicked ' + (++window.n)"
  style="width:200px;height:60px">Press</button>
<p id="out">not yet</p>
<form onsubmit="event.preventDefault(); document.getElementById('sent').textContent = document.getElementById('name').value">
  <input id="name" value="old"></form>
<p id="sent"></p>
<script>window.n = 0;</script>
<div style="height:3000px"></div>
</body></html>"""

HANG = b"""<!doctype html><html><body><script>
window.hang = () => { fetch('/started'); return new Promise(() => {}); };
</script></body></html>"""


@attrs.define
class Site:
    url: str = ""
    started: trio.Event = attrs.Factory(trio.Event)
    hits: list[str] = attrs.Factory(list)

    def page(self, path: str) -> Page | None:
        self.hits.append(path)
        if path == "/started":
            self.started.set()
            return ("text/html", b"")
        body = {"/": PAGE, "/hang": HANG}.get(path)
        return ("text/html", body) if body is not None else None


@pytest.fixture
async def site(nursery) -> Site:
    found = Site()
    found.url = await serve_pages(nursery, found.page)
    return found


@pytest.fixture
def profiles(monkeypatch):
    """Where browser profiles are made: a short directory of this test's own (Chromium's
    sockets live under it, and a Unix socket's path has room for 107 bytes only)."""
    where = Path(tempfile.mkdtemp(prefix="nyzb", dir="/tmp"))
    monkeypatch.setattr(browser_core, "PROFILE_PARENT", str(where))
    yield where
    shutil.rmtree(where, ignore_errors=True)


# The test pages are served on loopback, which the browser's pages may reach only when the
# user allows it ([network] allow_hosts); the guard's own tests use a strict pool.
LOOPBACK = NetPolicy.from_hosts(["127.0.0.1"])


@pytest.fixture
async def pool(profiles):
    async with actors.open_system(name="test") as system:
        yield BrowserPool(lambda: services_supervisor(system),
                          BrowserSettings(env=dict(os.environ), net=LOOPBACK))


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def _read(path: Path | str) -> bytes:
    return Path(path).read_bytes()


def _exists(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


async def _ends(pid: int) -> bool:
    """True once ``pid`` is gone or a zombie (bounded): a process killed a moment ago may
    still be exiting on a busy machine; a leaked one never ends."""
    return await settled(lambda: [pid] if _alive(pid) else []) == []


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


@needs_chromium
async def test_open_screenshot_evaluate_click_type(pool, site, tmp_path, monkeypatch) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    ctx = make_ctx(ws, sandbox=False, browser=pool)
    res = await BrowserOpenTool().run({"url": site.url + "/", "wait_for": "#b"}, ctx)
    assert not res.is_error, res.output
    assert res.output.startswith(f"URL: {site.url}/\nTitle: Counter\n\n<untrusted-content id=")
    assert "Hello from loopback\nPress\n\nnot yet" in res.output

    shot = await BrowserScreenshotTool().run({}, ctx)
    assert not shot.is_error, shot.output
    path = Path(shot.metadata["path"])
    assert path.parent == ws / ".nyzhi" / "screenshots"
    data = _read(path)
    assert _png_size(data) == (1280, 800)  # the viewport, a real PNG
    (image,) = shot.images
    assert image.media_type == "image/png" and image.data == data
    assert f"saved to .nyzhi/screenshots/{path.name}" in shot.output
    full = await BrowserScreenshotTool().run({"full_page": True}, ctx)
    width, height = _png_size(_read(full.metadata["path"]))
    assert width == 1280 and height > 3000  # the whole page, not the viewport
    assert full.metadata["path"] != shot.metadata["path"]

    res = await BrowserEvaluateTool().run({"script": "document.title + ' ' + (6 * 7)"}, ctx)
    assert '"Counter 42"' in res.output and not res.is_error
    res = await BrowserEvaluateTool().run({"script": "({a: [1, 2], b: null})"}, ctx)
    assert '"a": [\n  1,\n  2\n ]' in res.output
    res = await BrowserEvaluateTool().run({"script": "Promise.resolve(5)"}, ctx)
    assert "\n5\n" in res.output
    res = await BrowserEvaluateTool().run({"script": "throw new Error('boom')"}, ctx)
    assert res.is_error and "the script threw: Error: boom" in res.output

    res = await BrowserClickTool().run({"selector": "#b"}, ctx)
    assert not res.is_error and res.output == f"Clicked #b; the tab is at {site.url}/."
    await BrowserClickTool().run({"selector": "#b"}, ctx)
    res = await BrowserEvaluateTool().run(
        {"script": "document.getElementById('out').textContent"}, ctx)
    assert '"clicked 2"' in res.output  # real clicks, two of them, changed the page

    res = await BrowserTypeTool().run({"selector": "#name", "text": "Ada", "submit": True}, ctx)
    assert not res.is_error, res.output
    res = await BrowserEvaluateTool().run(
        {"script": "document.getElementById('sent').textContent"}, ctx)
    assert '"Ada"' in res.output  # the old value cleared, Enter submitted the form

    monkeypatch.setattr(browser_tools, "WAIT_S", 0.5)  # how long a selector is waited for
    res = await BrowserClickTool().run({"selector": "#nope"}, ctx)
    assert res.is_error and "no element matches #nope after 0.5 s" in res.output


@needs_chromium
async def test_browser_killed_mid_call_then_restarted(pool, site, tmp_path, profiles) -> None:
    ctx = make_ctx(tmp_path, sandbox=False, browser=pool)
    res = await BrowserOpenTool().run({"url": site.url + "/hang"}, ctx)
    assert not res.is_error, res.output
    first = pool.pid
    assert first is not None and _alive(first)
    results = []

    async def call() -> None:
        results.append(await BrowserEvaluateTool().run({"script": "window.hang()"}, ctx))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(call)
        await site.started.wait()  # the script runs inside the page: the call is in flight
        os.killpg(first, signal.SIGKILL)
    (res,) = results
    assert res.is_error and "the next browser call starts a new browser" in res.output
    res = await BrowserOpenTool().run({"url": site.url + "/"}, ctx)
    assert not res.is_error, res.output
    assert "Hello from loopback" in res.output
    assert pool.pid != first and _alive(pool.pid)
    assert not _exists(first)  # the killed one was reaped, not left a zombie
    # the dead browser's profile is gone; only the new one's is left
    assert len(list(profiles.glob("nyz-browser-*"))) == 1


@needs_chromium
async def test_stop_kills_the_browser_and_removes_its_profile(site, tmp_path, profiles):
    async with actors.open_system(name="test") as system:
        pool = BrowserPool(lambda: services_supervisor(system),
                           BrowserSettings(env=dict(os.environ), net=LOOPBACK))
        res = await BrowserOpenTool().run({"url": site.url + "/"},
                                          make_ctx(tmp_path, sandbox=False, browser=pool))
        assert not res.is_error
        pid = pool.pid
        assert list(profiles.glob("nyz-browser-*"))
    assert await _ends(pid)
    assert not list(profiles.glob("nyz-browser-*"))
    assert await settled_running(str(profiles)) == []  # nor any of its group (renderers, zygote)


@needs_chromium
async def test_file_urls_outside_the_workspace_are_refused(pool, tmp_path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "index.html").write_text("<title>Mine</title><p>inside</p>")
    (ws / "escape.html").write_text(
        "<script>location.href = 'file:///etc/hostname';</script><p>stayed</p>")
    (tmp_path / "secret.html").write_text("<p>top secret</p>")
    (ws / "link.html").symlink_to(tmp_path / "secret.html")
    ctx = make_ctx(ws, sandbox=False, browser=pool)
    for url in ("file:///etc/passwd", f"file://{ws}/../secret.html", "link.html",
                str(tmp_path / "secret.html"), "../secret.html", "javascript:alert(1)",
                "chrome://settings", "data:text/html,<p>x</p>", "file://remote.host/etc/passwd"):
        res = await BrowserOpenTool().run({"url": url}, ctx)
        assert res.is_error, url
        assert "top secret" not in res.output and "root:" not in res.output
    assert "outside the workspace are refused" in (
        await BrowserOpenTool().run({"url": "link.html"}, ctx)).output
    res = await BrowserOpenTool().run({"url": "index.html"}, ctx)  # a workspace path
    assert not res.is_error and "inside" in res.output
    # served over loopback HTTP, never as file://
    assert res.metadata["url"].startswith(pool.files.base + "/")
    res = await BrowserOpenTool().run({"url": (ws / "index.html").as_uri()}, ctx)
    assert not res.is_error and "Title: Mine" in res.output
    # a workspace page cannot send the tab to file:// (Chromium refuses it from http)
    res = await BrowserOpenTool().run({"url": "escape.html"}, ctx)
    assert "stayed" in res.output
    res = await BrowserEvaluateTool().run({"script": "location.protocol"}, ctx)
    assert '"http:"' in res.output


@needs_chromium
async def test_a_workspace_page_cannot_draw_other_files(pool, tmp_path) -> None:
    """A file:// page could frame any file into a screenshot; a served page cannot."""
    ws = tmp_path / "ws"
    ws.mkdir()
    secret = tmp_path / "id_ed25519"
    secret.write_text("PRIVATE KEY MATERIAL\n" * 20)
    frame = '<iframe src="{}" width="600" height="300"></iframe>'
    (ws / "framed.html").write_text(frame.format(secret.as_uri()))
    (ws / "blank.html").write_text(frame.format("about:blank"))
    ctx = make_ctx(ws, sandbox=False, browser=pool)
    framed = await BrowserScreenshotTool().run({"url": "framed.html"}, ctx)
    blank = await BrowserScreenshotTool().run({"url": "blank.html"}, ctx)
    assert not framed.is_error and not blank.is_error
    # the frame stays empty: the picture is exactly that of a page framing nothing
    assert framed.images[0].data == blank.images[0].data


async def test_the_workspace_file_server_serves_only_the_workspace(tmp_path) -> None:
    ws = tmp_path / "ws"
    (ws / "site").mkdir(parents=True)
    (ws / "site" / "index.html").write_text("<p>home</p>")
    (ws / "a b.css").write_text("p {}")
    (tmp_path / "outside.txt").write_text("outside")
    (ws / "out").symlink_to(tmp_path / "outside.txt")
    files = WorkspaceFiles()
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(functools.partial(
            trio.serve_tcp, files.serve, 0, host="127.0.0.1"))
        files.base = f"http://127.0.0.1:{listeners[0].socket.getsockname()[1]}"
        site = files.url(ws, ws / "site")
        token_base = site.rsplit("/", 2)[0]
        import httpx

        async with httpx.AsyncClient() as client:
            async def get(url: str) -> tuple[int, str]:
                resp = await client.get(url)
                return resp.status_code, resp.text

            assert await get(site) == (200, "<p>home</p>")  # a directory: its index.html
            got = await client.get(files.url(ws, ws / "a b.css"))
            assert got.status_code == 200 and got.headers["content-type"] == "text/css"
            for bad in (f"{token_base}/out", f"{token_base}/../outside.txt",
                        f"{token_base}/%2e%2e/outside.txt", f"{token_base}//etc/passwd",
                        f"{token_base}/%2Fetc%2Fpasswd", f"{files.base}/wrongtoken/site",
                        f"{files.base}/etc/passwd", f"{token_base}/missing.html"):
                status, text = await get(bad)
                assert status == 404 and "outside" not in text and "root:" not in text, bad
            resp = await client.post(site)
            assert resp.status_code == 405
        nursery.cancel_scope.cancel()


async def test_no_browser_names_the_package(tmp_path) -> None:
    with pytest.raises(BrowserUnavailable) as caught:
        find_browser(None, path=str(tmp_path))
    assert "apt install chromium" in str(caught.value)
    with pytest.raises(BrowserUnavailable) as caught:
        find_browser("/nowhere/chrome")
    assert "[browser] executable: '/nowhere/chrome'" in str(caught.value)
    async with actors.open_system(name="test") as system:
        pool = BrowserPool(lambda: services_supervisor(system),
                           BrowserSettings(env={"PATH": str(tmp_path)}))
        res = await BrowserOpenTool().run({"url": "about:blank"},
                                          make_ctx(tmp_path, sandbox=False, browser=pool))
    assert res.is_error
    assert res.output.startswith("browser_open: no Chromium or Chrome found")
    assert "apt install chromium" in res.output
    res = await BrowserOpenTool().run({"url": "about:blank"}, make_ctx(tmp_path))
    assert res.is_error and "no browser in this context" in res.output
