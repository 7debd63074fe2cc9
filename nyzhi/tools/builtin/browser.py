"""The browser tools: open, screenshot, evaluate, click and type in a real headless Chromium.

They drive the runtime's one browser (``ToolContext.browser``, ``nyzhi.core.runtime.browser``) over
the DevTools protocol (``nyzhi.tools.cdp``); each agent has its own tab, kept between calls, so
``browser_open`` then ``browser_click`` then ``browser_evaluate`` act on the same page.

Every call reaches the network or runs code in a page, so each needs approval as ``web_fetch``
does. Files are allowed inside the workspace only (the page an agent builds), and Chromium
never gets a ``file://`` URL: a workspace file is served to it over loopback HTTP
(``nyzhi.tools.workspace_http``), since a ``file://`` page could frame any file on the machine
into a screenshot. Where the tab ends up is checked after every action, so a page that reaches
``file://`` anyway gets nothing read back. What comes back from a page is framed as untrusted
content (``nyzhi.tools.untrusted``).

The browser itself is under guard (``nyzhi.tools.browser_guard``): every request of every
page goes through ``nyzhi.tools.netguard`` (no loopback but the workspace file server, no
private or metadata address), local-scheme targets are closed, downloads denied. Text the
model sends into a page (a URL, typed text, a script) may not carry a known secret, and a
screenshot of a page showing one, or a line of a masked credential file, is refused.
"""

from __future__ import annotations

import base64
import json
import re
import time
import urllib.parse
from pathlib import Path
from typing import Any

from nyzhi.tools.base import Permission, ToolContext, ToolResult
from nyzhi.tools.builtin.common import (
    ArgError,
    BuiltinTool,
    error,
    opt_bool,
    opt_int,
    opt_str,
    req_str,
)
from nyzhi.tools.untrusted import frame_untrusted

DEFAULT_MAX_LENGTH = 20_000
MAX_RESULT_CHARS = 50_000
WAIT_S = 30.0
SCREENSHOT_DIR = ".nyzhi/screenshots"
# Written into SCREENSHOT_DIR: pictures of pages are the user's to share, never committed.
SCREENSHOT_IGNORE = "# nyz: screenshots are never committed\n*\n"


class _Refused(Exception):
    """The page is somewhere the tools may not read (a file:// page)."""


def _file_path(url: str) -> Path:
    parts = urllib.parse.urlsplit(url)
    return Path(urllib.parse.unquote(parts.path))


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
        return True
    except (ValueError, OSError):
        return False


def resolve_url(raw: str, ctx: ToolContext) -> str | Path:
    """What to open: an http(s) URL or about:blank as given; a workspace file (named by a
    path or a file:// URL) as its resolved ``Path``, which the browser then loads from the
    workspace file server, never as file:// (``nyzhi.tools.workspace_http`` says why).
    Anything else, and any file outside the workspace, is an ``ArgError``."""
    url = raw.strip()
    scheme = urllib.parse.urlsplit(url).scheme.lower()
    if scheme in ("http", "https") or url == "about:blank":
        return url
    if scheme == "file":
        parts = urllib.parse.urlsplit(url)
        if parts.netloc not in ("", "localhost"):
            raise ArgError(f"file:// URLs must name a local file, got {url!r}")
        path = _file_path(url)
    elif scheme and len(scheme) > 1:  # not a Windows drive letter
        raise ArgError(f"url must be http://, https://, about:blank, or a file in the "
                       f"workspace, got {url!r}")
    else:
        path = Path(url) if Path(url).is_absolute() else ctx.cwd / url
    if not _inside(path, ctx.workspace_root):
        raise ArgError(f"file:// URLs outside the workspace are refused: {path} is not under "
                       f"{ctx.workspace_root}")
    from nyzhi.tools.credentials import credential_kind

    kind = credential_kind(path.resolve(), getattr(ctx.sandbox, "hide", ()) or ())
    if kind is not None:
        raise ArgError(f"{path} is masked ({kind}); the browser never opens it")
    return path.resolve()


def _check_location(href: str, ctx: ToolContext) -> None:
    from nyzhi.tools.browser_guard import LOCAL_SCHEMES

    scheme = urllib.parse.urlsplit(href).scheme.lower()
    if scheme in LOCAL_SCHEMES:
        raise _Refused(f"the page went to {href}; {scheme}: pages are never read back (the tab "
                       "was reset to about:blank)")


def _no_secret(text: str, what: str, ctx: ToolContext) -> None:
    """``_Refused`` when ``text`` (sent into a page) carries a known secret."""
    if ctx.redactor:
        spans = ctx.redactor.spans(text)
        if spans:
            raise _Refused(f"the {what} carries {spans[0][2]}; a secret is never sent to a page")


async def _guard(page: Any, ctx: ToolContext) -> str:
    """The page's URL, after checking it may be read; a refused page is blanked."""
    href = await page.evaluate("location.href")
    try:
        _check_location(str(href), ctx)
    except _Refused:
        await page.call("Page.navigate", url="about:blank")
        raise
    return str(href)


def _wait_script(selector: str, timeout_s: float) -> str:
    """A promise resolving when ``selector`` matches (checked on every DOM change), rejecting
    with a message after ``timeout_s``."""
    sel = json.dumps(selector)
    return f"""new Promise((resolve, reject) => {{
        const found = () => document.querySelector({sel});
        if (found()) return resolve(true);
        const obs = new MutationObserver(() => {{ if (found()) {{ obs.disconnect(); resolve(true); }} }});
        obs.observe(document, {{subtree: true, childList: true, attributes: true}});
        setTimeout(() => {{ obs.disconnect(); reject(new Error('no element matches ' + {sel} +
            ' after {timeout_s:g} s')); }}, {int(timeout_s * 1000)});
    }})"""


async def _wait_for(page: Any, selector: str) -> None:
    await page.evaluate(_wait_script(selector, WAIT_S), wait_s=WAIT_S + 5)


async def _page_text(page: Any, max_length: int) -> tuple[str, str]:
    """(title, visible text cut at ``max_length``)."""
    info = await page.evaluate(
        "({title: document.title, text: document.body ? document.body.innerText : ''})")
    title, text = str(info.get("title") or ""), str(info.get("text") or "")
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    if len(text) > max_length:
        text = (text[:max_length] + f"\n... (truncated: {len(text) - max_length} more "
                "characters; raise max_length to see more)")
    return title, text


class BrowserTool(BuiltinTool):
    """Shared by the browser tools: the agent's tab, approvals, errors as results."""

    permission = Permission.NEEDS_APPROVAL
    deferred = True  # five schemas most turns never use: tool_search loads them

    def target_paths(self, args: dict[str, Any]) -> list[str]:
        return []

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        from nyzhi.tools.cdp import BrowserError

        if ctx.browser is None:
            return error(f"{self.name}: no browser in this context (the browser tools run "
                         "inside an agent runtime)")
        try:
            page = await ctx.browser.page(ctx.agent_path)
            async with page.lock:
                return await self.act(page, args, ctx)
        except _Refused as exc:
            return error(f"{self.name}: {exc}")
        except BrowserError as exc:
            return error(f"{self.name}: {exc}")

    async def act(self, page: Any, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        raise NotImplementedError

    async def open(self, page: Any, url: str | Path, ctx: ToolContext, wait_for: str | None
                   ) -> str:
        """Navigate the tab, wait for load (and ``wait_for``), return where it ended up."""
        from nyzhi.tools.cdp import BrowserError

        if isinstance(url, Path):
            url = ctx.browser.files.url(ctx.workspace_root, url)
        guard = ctx.browser.guard
        if guard is not None and url != "about:blank":
            _no_secret(url, "URL", ctx)
            why = await guard.allowed(url)
            if why:
                raise _Refused(f"{url} is refused: {why}")
        before = len(guard.refusals) if guard is not None else 0
        try:
            await page.navigate(url, wait_s=WAIT_S)
        except BrowserError as exc:
            raise BrowserError(f"{exc}{guard.explain(before) if guard else ''}") from None
        href = await _guard(page, ctx)
        if wait_for:
            await _wait_for(page, wait_for)
        return href


class BrowserOpenTool(BrowserTool):
    name = "browser_open"
    description = (
        "Open a URL in a headless browser (JavaScript runs) and return the page's visible "
        "text. Use it to check a page you built or one that needs scripts; web_fetch is "
        "lighter for static pages. url: http(s), or a file in the workspace (a path or "
        "file:// URL). wait_for: a CSS selector to wait for after load. The tab is kept for "
        "browser_click, browser_type, browser_evaluate and browser_screenshot."
    )
    parameters = {
        "type": "object",
        "properties": {
            "url": {"type": "string", "description": "http(s) URL, or a workspace file."},
            "wait_for": {"type": "string",
                         "description": "CSS selector to wait for (up to 30 s) after load."},
            "max_length": {"type": "integer",
                           "description": "Maximum characters of text (default 20000)."},
        },
        "required": ["url"],
    }

    async def act(self, page: Any, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        url = resolve_url(req_str(args, "url"), ctx)
        max_length = opt_int(args, "max_length", DEFAULT_MAX_LENGTH, minimum=1)
        href = await self.open(page, url, ctx, opt_str(args, "wait_for"))
        title, text = await _page_text(page, max_length)
        text = _masked_out(text, ctx)
        head = f"URL: {href}" + (f"\nTitle: {title}" if title else "")
        return ToolResult(f"{head}\n\n{frame_untrusted(href, text)}",
                          metadata={"url": href, "title": title})


class BrowserScreenshotTool(BrowserTool):
    name = "browser_screenshot"
    description = (
        "Take a PNG screenshot of the current browser tab, or of url after opening it; saved "
        "under .nyzhi/screenshots/ and attached so you can see it. full_page captures the "
        "whole page instead of the 1280x800 viewport."
    )
    parameters = {
        "type": "object",
        "properties": {
            "url": {"type": "string", "description": "Open this first (else the current tab)."},
            "full_page": {"type": "boolean", "description": "The whole page (default false)."},
            "wait_for": {"type": "string", "description": "CSS selector to wait for first."},
        },
    }

    async def act(self, page: Any, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        from nyzhi.config.fsutil import atomic_write
        from nyzhi.provider.types import ImagePart

        url = opt_str(args, "url")
        full = opt_bool(args, "full_page", False)
        wait_for = opt_str(args, "wait_for")
        if url:
            href = await self.open(page, resolve_url(url, ctx), ctx, wait_for)
        else:
            href = await _guard(page, ctx)
            if wait_for:
                await _wait_for(page, wait_for)
        why = await _screenshot_refusal(page, ctx)
        if why:
            return error(f"browser_screenshot: refused: {why}; nothing was captured")
        params: dict[str, Any] = {"format": "png"}
        if full:
            metrics = await page.call("Page.getLayoutMetrics")
            size = metrics.get("cssContentSize") or metrics["contentSize"]
            params.update(captureBeyondViewport=True, clip={
                "x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1})
        shot = await page.call("Page.captureScreenshot", wait_s=WAIT_S * 2, **params)
        data = base64.b64decode(shot["data"])
        width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
        folder = ctx.workspace_root / SCREENSHOT_DIR
        stamp = time.strftime("%Y%m%d-%H%M%S")
        agent = re.sub(r"[^A-Za-z0-9_-]", "_", ctx.agent_name or "agent")
        path = folder / f"{stamp}-{agent}.png"
        n = 1
        while path.exists():
            n += 1
            path = folder / f"{stamp}-{agent}-{n}.png"
        folder.mkdir(parents=True, exist_ok=True)
        ignore = folder / ".gitignore"
        if not ignore.exists():
            atomic_write(ignore, SCREENSHOT_IGNORE.encode(), what="the screenshots' .gitignore")
        atomic_write(path, data, what="the screenshot")
        shown = path.relative_to(ctx.workspace_root)
        return ToolResult(
            f"Screenshot of {href} ({width}x{height}) saved to {shown}, attached.",
            metadata={"path": str(path), "url": href, "width": width, "height": height},
            images=(ImagePart("image/png", data),),
        )


def _masked_out(text: str, ctx: ToolContext) -> str:
    """``text`` from a page with the lines of masked credential files redacted."""
    from nyzhi.tools.browser_guard import masked_lines, redact_masked

    return redact_masked(text, masked_lines(tuple(getattr(ctx.sandbox, "hide", ()) or ())))


def _masked_value(value: Any, ctx: ToolContext) -> Any:
    """A script's value with ``_masked_out`` applied to every string inside it."""
    if isinstance(value, str):
        return _masked_out(value, ctx)
    if isinstance(value, list):
        return [_masked_value(v, ctx) for v in value]
    if isinstance(value, dict):
        return {k: _masked_value(v, ctx) for k, v in value.items()}
    return value


async def _screenshot_refusal(page: Any, ctx: ToolContext) -> str | None:
    """Why the tab may not be captured now (it shows a secret), or None."""
    from nyzhi.tools.browser_guard import masked_lines, page_strings, refuse_screenshot

    hide = tuple(getattr(ctx.sandbox, "hide", ()) or ())
    return refuse_screenshot(await page_strings(page), ctx.redactor, masked_lines(hide))


class BrowserEvaluateTool(BrowserTool):
    name = "browser_evaluate"
    description = (
        "Run a JavaScript expression in the current browser tab and return its value as "
        "JSON (a promise is awaited). Use it to read the page's state after browser_click "
        "or browser_type, e.g. document.querySelector('#out').textContent."
    )
    parameters = {
        "type": "object",
        "properties": {
            "script": {"type": "string", "description": "A JavaScript expression."},
        },
        "required": ["script"],
    }

    async def act(self, page: Any, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        from nyzhi.tools.cdp import CdpError

        script = req_str(args, "script")
        _no_secret(script, "script", ctx)
        href = await _guard(page, ctx)
        try:
            value = await page.evaluate(script, wait_s=WAIT_S)
        except CdpError as exc:
            return error(f"browser_evaluate: {exc}")
        await _guard(page, ctx)  # the script may have sent the tab elsewhere
        try:
            text = json.dumps(_masked_value(value, ctx), ensure_ascii=False, indent=1)
        except RecursionError:
            return error("browser_evaluate: the value is nested too deeply to return")
        if len(text) > MAX_RESULT_CHARS:
            text = text[:MAX_RESULT_CHARS] + f"\n... (truncated: {len(text)} characters)"
        return ToolResult(frame_untrusted(href, text), metadata={"url": href})


class BrowserClickTool(BrowserTool):
    name = "browser_click"
    description = (
        "Click the element matching a CSS selector in the current browser tab (waiting up to "
        "30 s for it), with real mouse events at its centre. Read the result with "
        "browser_evaluate or browser_open's text."
    )
    parameters = {
        "type": "object",
        "properties": {
            "selector": {"type": "string", "description": "CSS selector of the element."},
        },
        "required": ["selector"],
    }

    async def act(self, page: Any, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        selector = req_str(args, "selector")
        await _guard(page, ctx)
        await _wait_for(page, selector)
        box = await page.evaluate(f"""(() => {{
            const el = document.querySelector({json.dumps(selector)});
            el.scrollIntoView({{block: 'center', inline: 'center'}});
            const r = el.getBoundingClientRect();
            return {{x: r.left + r.width / 2, y: r.top + r.height / 2, w: r.width, h: r.height}};
        }})()""")
        if not box or box["w"] <= 0 or box["h"] <= 0:
            return error(f"browser_click: {selector} matches an element with no size "
                         "(hidden?); nothing clicked")
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            await page.call("Input.dispatchMouseEvent", type=kind, x=box["x"], y=box["y"],
                            button="left", clickCount=1 if kind != "mouseMoved" else 0)
        href = await _guard(page, ctx)
        return ToolResult(f"Clicked {selector}; the tab is at {href}.", metadata={"url": href})


class BrowserTypeTool(BrowserTool):
    name = "browser_type"
    description = (
        "Type text into the element matching a CSS selector in the current browser tab (it is "
        "focused first; clear replaces its value). submit presses Enter afterwards."
    )
    parameters = {
        "type": "object",
        "properties": {
            "selector": {"type": "string", "description": "CSS selector of an input."},
            "text": {"type": "string", "description": "The text to type."},
            "clear": {"type": "boolean", "description": "Empty the field first (default true)."},
            "submit": {"type": "boolean", "description": "Press Enter after (default false)."},
        },
        "required": ["selector", "text"],
    }

    async def act(self, page: Any, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        selector = req_str(args, "selector")
        text = req_str(args, "text", allow_empty=True)
        clear = opt_bool(args, "clear", True)
        submit = opt_bool(args, "submit", False)
        _no_secret(text, "text", ctx)
        await _guard(page, ctx)
        await _wait_for(page, selector)
        await page.evaluate(f"""(() => {{
            const el = document.querySelector({json.dumps(selector)});
            el.focus();
            if ({json.dumps(clear)} && 'value' in el) el.value = '';
        }})()""")
        await page.call("Input.insertText", text=text)
        if submit:
            for kind in ("keyDown", "keyUp"):
                await page.call("Input.dispatchKeyEvent", type=kind, key="Enter", code="Enter",
                                windowsVirtualKeyCode=13, text="\r" if kind == "keyDown" else "")
        href = await _guard(page, ctx)
        return ToolResult(f"Typed {len(text)} characters into {selector}"
                          + (" and pressed Enter" if submit else "") + f"; the tab is at {href}.",
                          metadata={"url": href})


TOOLS = (BrowserOpenTool, BrowserScreenshotTool, BrowserEvaluateTool, BrowserClickTool,
         BrowserTypeTool)
