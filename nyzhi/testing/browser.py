"""A headless Chromium driven over the DevTools protocol (CDP) on its pipe: how the web
console's browser tests load the real page, type, click and take screenshots.

Playwright cannot download its browsers here, and CDP over the browser tools' pipe
(``nyzhi.tools.cdp``) is all a test needs: ``Target.createTarget`` for a page, ``Runtime.evaluate`` to act and to wait
(a promise inside the page that resolves when a condition holds, so the test waits on the
page, never on a clock), ``Page.captureScreenshot`` for pictures.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

from nyzhi.tools import cdp
from nyzhi.tools.cdp import CdpError as CdpError

WAIT_MS = 30_000


def chromium() -> str | None:
    """The Chromium executable (Debian's ``chromium`` package), or None: the browser tools'
    own search (``nyzhi.tools.cdp.find_browser``)."""
    try:
        return cdp.find_browser(None)
    except cdp.BrowserUnavailable:
        return None


class Browser:
    """The browser tools' DevTools connection, with the test helpers' pages."""

    def __init__(self, conn: cdp.CdpConnection) -> None:
        self.conn = conn

    async def call(self, method: str, session: str | None = None, **params: Any) -> dict:
        return await self.conn.call(method, session, wait_s=60, **params)

    async def new_page(self, width: int = 1280, height: int = 800) -> Page:
        tab = await self.conn.new_page(width, height)
        return Page(self, tab.session)


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
    """A headless Chromium with a fresh profile under ``profile``, killed on leaving (started
    as the browser tools start theirs: ``nyzhi.tools.cdp``)."""
    exe = chromium()
    assert exe is not None, "chromium is not installed"
    launched = await cdp.launch(cdp.chromium_args(exe, profile), os.environ)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(cdp.drain, launched)
            conn = cdp.CdpConnection(launched.pipe)
            nursery.start_soon(conn.read)
            yield Browser(conn)
            nursery.cancel_scope.cancel()
    finally:
        cdp.kill_group(launched.process)
        await launched.pipe.aclose()
