"""A headless Chromium driven over the DevTools protocol (CDP) on ``trio-websocket``: how the
web console's browser tests load the real page, type, click and take screenshots.

Playwright cannot download its browsers here, and CDP over the WebSocket we already ship is
all a test needs: ``Target.createTarget`` for a page, ``Runtime.evaluate`` to act and to wait
(a promise inside the page that resolves when a condition holds, so the test waits on the
page, never on a clock), ``Page.captureScreenshot`` for pictures.
"""

from __future__ import annotations

import base64
import functools
import itertools
import json
import os
import shutil
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

WAIT_MS = 30_000


def chromium() -> str | None:
    """The Chromium executable (Debian's ``chromium`` package), or None."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


class CdpError(Exception):
    pass


class Browser:
    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.ids = itertools.count(1)
        self.waiting: dict[int, tuple[trio.Event, list[Any]]] = {}

    async def read(self) -> None:
        from trio_websocket import ConnectionClosed

        try:
            while True:
                message = json.loads(await self.ws.get_message())
                slot = self.waiting.pop(message.get("id", -1), None)
                if slot is not None:
                    slot[1].append(message)
                    slot[0].set()
        except ConnectionClosed:
            return

    async def call(self, method: str, session: str | None = None, **params: Any) -> dict:
        ident = next(self.ids)
        done, box = trio.Event(), []
        self.waiting[ident] = (done, box)
        message: dict[str, Any] = {"id": ident, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        await self.ws.send_message(json.dumps(message))
        with trio.fail_after(60):
            await done.wait()
        if "error" in box[0]:
            raise CdpError(f"{method}: {box[0]['error']}")
        return box[0].get("result", {})

    async def new_page(self, width: int = 1280, height: int = 800) -> Page:
        target = await self.call("Target.createTarget", url="about:blank")
        attached = await self.call("Target.attachToTarget", targetId=target["targetId"],
                                   flatten=True)
        page = Page(self, attached["sessionId"])
        await page.call("Page.enable")
        await page.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                        deviceScaleFactor=1, mobile=False)
        return page


class Page:
    def __init__(self, browser: Browser, session: str) -> None:
        self.browser = browser
        self.session = session

    async def call(self, method: str, **params: Any) -> dict:
        return await self.browser.call(method, self.session, **params)

    async def goto(self, url: str) -> None:
        """Load ``url`` afresh (by way of about:blank: a change of fragment alone would not
        reload the page)."""
        await self.call("Page.navigate", url="about:blank")
        await self.wait("location.href === 'about:blank' && document.readyState === 'complete'")
        await self.call("Page.navigate", url=url)
        await self.wait("document.readyState === 'complete' && location.href !== 'about:blank'")

    async def reload(self) -> None:
        await self.evaluate("window.__before_reload = 1")
        await self.call("Page.reload", ignoreCache=True)
        await self.wait("!window.__before_reload && document.readyState === 'complete'")

    async def evaluate(self, expression: str) -> Any:
        result = await self.call("Runtime.evaluate", expression=expression, awaitPromise=True,
                                 returnByValue=True)
        if "exceptionDetails" in result:
            raise CdpError(f"{expression[:80]}: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def wait(self, condition: str) -> Any:
        """Until the JavaScript ``condition`` is truthy in the page (checked on every
        animation frame and DOM change); its value. Fails after 30 s with the page's text."""
        script = f"""new Promise((resolve, reject) => {{
            const check = () => {{ try {{ return ({condition}); }} catch (e) {{ return false; }} }};
            const first = check(); if (first) return resolve(first);
            const obs = new MutationObserver(() => {{ const v = check(); if (v) {{ obs.disconnect(); resolve(v); }} }});
            obs.observe(document, {{subtree: true, childList: true, attributes: true, characterData: true}});
            const tick = () => {{ const v = check(); if (v) {{ obs.disconnect(); resolve(v); }} else requestAnimationFrame(tick); }};
            requestAnimationFrame(tick);
            setTimeout(() => reject(new Error('timed out: ' + document.body.innerText.slice(-2000))), {WAIT_MS});
        }})"""
        return await self.evaluate(script)

    async def type_and_send(self, text: str) -> None:
        await self.evaluate(f"""(() => {{ const i = document.getElementById('prompt');
            i.value = {json.dumps(text)}; i.dispatchEvent(new Event('input'));
            document.getElementById('input').requestSubmit(); }})()""")

    async def click(self, selector: str) -> None:
        await self.wait(f"document.querySelector({json.dumps(selector)})")
        await self.evaluate(f"document.querySelector({json.dumps(selector)}).click()")

    async def screenshot(self, path: Path) -> Path:
        shot = await self.call("Page.captureScreenshot", format="png")
        await trio.Path(path).write_bytes(base64.b64decode(shot["data"]))
        return path


@asynccontextmanager
async def open_browser(profile: Path) -> AsyncIterator[Browser]:
    """A headless Chromium with a fresh profile under ``profile``, killed on leaving."""
    from trio_websocket import open_websocket_url

    exe = chromium()
    assert exe is not None, "chromium is not installed"
    args = [exe, "--headless=new", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
            "--remote-debugging-port=0", f"--user-data-dir={profile}", "--window-size=1280,800",
            "--disable-extensions", "--disable-background-networking", "about:blank"]
    if os.geteuid() == 0:
        args.insert(1, "--no-sandbox")  # Chromium refuses to run as root with its sandbox
    async with trio.open_nursery() as nursery:
        proc = await nursery.start(functools.partial(
            trio.run_process, args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
            check=False))
        seen = b""
        url = ""
        with trio.fail_after(60):
            while not url:
                chunk = await proc.stderr.receive_some(4096)
                if not chunk:
                    raise AssertionError(f"chromium did not start: {seen.decode()[-2000:]}")
                seen += chunk
                for line in seen.decode(errors="replace").splitlines():
                    if "DevTools listening on " in line:
                        url = line.split("DevTools listening on ", 1)[1].strip()

        async def drain() -> None:
            async for _ in proc.stderr:
                pass

        nursery.start_soon(drain)
        try:
            async with open_websocket_url(url, max_message_size=64 * 1024 * 1024) as ws:
                browser = Browser(ws)
                nursery.start_soon(browser.read)
                yield browser
        finally:
            proc.kill()
