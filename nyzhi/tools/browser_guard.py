"""The browser's own boundary: every request, every target, every download, every screenshot.

The browser tools check the URL the model gives, but a page goes on by itself: a script
fetches ``http://127.0.0.1:PORT/``, a link opens a popup on ``file:///``, a redirect lands on
the metadata address, a response is a download. So the check is made on the browser, for all
of its targets, not on the agent's tab:

* **Requests.** ``Fetch.enable`` on the browser's own session pauses every request of every
  page, frame, popup and worker; each goes on only if ``nyzhi.tools.netguard`` allows its URL
  (public addresses, the user's ``[network] allow_hosts``), or it is for the workspace file
  server (``nyzhi.tools.workspace_http``), the one loopback port a page may reach. Anything
  else fails as ``BlockedByClient``, and the reason is kept for the tool's answer.
* **Targets.** ``Target.setDiscoverTargets`` reports every target created or navigated; one
  whose URL is ``file://`` (or another local scheme: ``chrome://``, ``devtools://``,
  ``view-source:``) is closed at once.
* **Downloads** are denied in every browser context (``Browser.setDownloadBehavior``), the
  default one and each new one as it appears.
* **Screenshots** carry pixels: ``refuse_screenshot`` reads the text of the page (its DOM,
  input values included) and refuses when it holds a known secret (the run's redactor) or a
  line of a masked credential file (``nyzhi.tools.credentials``).
"""

from __future__ import annotations

import functools
import os
import urllib.parse
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import trio

from nyzhi.tools.netguard import NetPolicy, Refused

#: Schemes a target may never show: the machine's files and the browser's own pages.
LOCAL_SCHEMES = ("file", "chrome", "devtools", "view-source", "chrome-extension", "filesystem")
#: Internal targets of the browser itself (its UI), which are not pages.
_OWN_TYPES = ("browser_ui", "browser", "tab")
MAX_REFUSALS = 20
MIN_LINE = 20  # a masked file's line shorter than this is too common to count as its content
MAX_MASKED_FILES = 200
MAX_MASKED_BYTES = 64 * 1024


class BrowserGuard:
    """Holds the browser to ``policy``; ``files_port`` is the workspace file server's."""

    def __init__(self, conn: Any, policy: NetPolicy, files_port: int | None) -> None:
        self.conn = conn
        self.policy = policy
        self.files_port = files_port
        self.refusals: list[str] = []  # the latest reasons, newest last (for the tools)
        self.closed_targets: list[str] = []
        self._contexts: set[str] = set()
        self._nursery: trio.Nursery | None = None

    async def start(self, nursery: trio.Nursery) -> None:
        """Hook into the connection's events and put the browser under guard; returns once
        every rule is in force (before any page is opened)."""
        self._nursery = nursery
        self.conn.listener = self._event
        await self.conn.call("Browser.setDownloadBehavior", behavior="deny",
                            eventsEnabled=True)
        await self.conn.call("Fetch.enable", patterns=[{"urlPattern": "*"}])
        await self.conn.call("Target.setDiscoverTargets", discover=True)

    def _event(self, message: dict[str, Any]) -> None:
        """From the connection's reader: never blocks, the work runs in the guard's nursery."""
        if message.get("sessionId") or self._nursery is None:
            return  # a page's own events: its browser-wide counterparts arrive here too
        method = message.get("method")
        params = message.get("params") or {}
        if method == "Fetch.requestPaused":
            self._nursery.start_soon(self._request, params)
        elif method in ("Target.targetCreated", "Target.targetInfoChanged"):
            self._nursery.start_soon(self._target, params.get("targetInfo") or {})

    def _note(self, reason: str) -> None:
        self.refusals.append(reason)
        del self.refusals[:-MAX_REFUSALS]

    async def allowed(self, url: str) -> str | None:
        """Why a page may not load ``url`` (one line), or None."""
        parts = urllib.parse.urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme in ("data", "blob", "about"):
            return None
        if scheme in ("ws", "wss"):
            url = urllib.parse.urlunsplit(("http" if scheme == "ws" else "https", *parts[1:]))
        elif scheme not in ("http", "https"):
            return f"{scheme}: URLs are not loaded"
        try:
            if self._is_workspace_server(parts):
                self.policy.check_secret(url)
                return None
            await self.policy.check_url(url)
        except Refused as exc:
            return str(exc)
        except ValueError as exc:
            return f"not a valid URL: {exc}"
        return None

    def _is_workspace_server(self, parts: urllib.parse.SplitResult) -> bool:
        try:
            port = parts.port
        except ValueError:
            return False
        return (self.files_port is not None and port == self.files_port
                and (parts.hostname or "") == "127.0.0.1")

    async def _request(self, params: dict[str, Any]) -> None:
        from nyzhi.tools.cdp import BrowserError

        request_id = params.get("requestId")
        url = str((params.get("request") or {}).get("url", ""))
        why = await self.allowed(url)
        try:
            if why is None:
                await self.conn.call("Fetch.continueRequest", requestId=request_id)
            else:
                self._note(f"{_short(url)}: {why}")
                await self.conn.call("Fetch.failRequest", requestId=request_id,
                                     errorReason="BlockedByClient")
        except BrowserError:
            pass  # the request or the browser went away meanwhile

    async def _target(self, info: dict[str, Any]) -> None:
        from nyzhi.tools.cdp import BrowserError

        context = info.get("browserContextId")
        try:
            if context and context not in self._contexts:
                self._contexts.add(context)
                await self.conn.call("Browser.setDownloadBehavior", behavior="deny",
                                     browserContextId=context, eventsEnabled=True)
            url = str(info.get("url", ""))
            scheme = urllib.parse.urlsplit(url).scheme.lower()
            if info.get("type") in _OWN_TYPES:
                return
            if scheme in LOCAL_SCHEMES:
                why = (f"a {info.get('type', 'target')} on {scheme}: was closed (pages never "
                       "show local files or the browser's own pages)")
            elif info.get("openerId") and scheme in ("http", "https"):
                why = await self.allowed(url)  # a popup on a forbidden URL: closed, not shown
                if why:
                    why = f"a popup was closed: {why}"
            else:
                return
            if why:
                self._note(f"{_short(url)}: {why}")
                self.closed_targets.append(url)
                await self.conn.call("Target.closeTarget", targetId=info.get("targetId"))
        except BrowserError:
            pass

    def explain(self, since: int) -> str:
        """What was refused after ``since`` refusals, for a tool's answer ('' if nothing)."""
        fresh = self.refusals[since:] if since < len(self.refusals) else []
        if not fresh:
            return ""
        return "; refused by nyz: " + "; ".join(fresh[-3:])


def _short(url: str, limit: int = 120) -> str:
    return url if len(url) <= limit else url[:limit] + "…"


# ---- screenshots -------------------------------------------------------------------------


MAX_FRAMES = 20  # out-of-process frames read for one screenshot


async def page_strings(page: Any) -> str:
    """Every string of the page's documents (text, attribute and input values), joined: what
    a screenshot could show. A cross-site frame runs in a process of its own and is not in
    the page's snapshot, so each such frame of the browser is read too (attached for the
    moment: every one, not only this page's, which can only refuse more)."""
    from nyzhi.tools.cdp import BrowserError

    parts = [await _snapshot(page.conn, page.session)]
    targets = (await page.conn.call("Target.getTargets")).get("targetInfos") or []
    for info in [t for t in targets if t.get("type") == "iframe"][:MAX_FRAMES]:
        try:
            attached = await page.conn.call("Target.attachToTarget",
                                            targetId=info["targetId"], flatten=True)
        except BrowserError:
            continue  # gone meanwhile
        session = attached["sessionId"]
        try:
            parts.append(await _snapshot(page.conn, session))
        except BrowserError:
            pass
        finally:
            try:
                await page.conn.call("Target.detachFromTarget", sessionId=session)
            except BrowserError:
                pass
    return "\n".join(parts)


async def _snapshot(conn: Any, session: str) -> str:
    snap = await conn.call("DOMSnapshot.captureSnapshot", session, computedStyles=[],
                           includeDOMRects=False)
    strings = snap.get("strings") or []
    return "\n".join(s for s in strings if isinstance(s, str))


@functools.lru_cache(maxsize=8)
def _masked_lines(key: tuple) -> frozenset[str]:
    """Lines of the masked credential files (public keys and known_hosts aside): a page that
    renders one is rendering the file."""
    from nyzhi.tools.credentials import hidden_paths

    extra, home = key
    env = {**os.environ, "HOME": home} if home else None
    lines: set[str] = set()
    files = 0
    for hidden in hidden_paths(extra, env):
        for path in _files_of(hidden.path, hidden.is_dir):
            if files >= MAX_MASKED_FILES:
                return frozenset(lines)
            files += 1
            try:
                if path.stat().st_size > MAX_MASKED_BYTES or not path.is_file():
                    continue
                text = path.read_text("utf-8", errors="replace")
            except OSError:
                continue
            for line in text.splitlines():
                line = " ".join(line.split())
                if len(line) >= MIN_LINE:
                    lines.add(line)
    return frozenset(lines)


def _files_of(path: Path, is_dir: bool) -> Iterable[Path]:
    if not is_dir:
        yield path
        return
    if path.name == "nyzhi" or "nyzhi" in path.parts[-2:]:
        return  # nyz's own state and data: their secrets are the redactor's already
    for found in sorted(path.rglob("*"))[:MAX_MASKED_FILES]:
        if found.name.endswith(".pub") or found.name.startswith("known_hosts"):
            continue
        if found.is_file() and not found.is_symlink():
            yield found


def masked_lines(extra: Iterable[str] = ()) -> frozenset[str]:
    return _masked_lines((tuple(extra), os.environ.get("HOME", "")))


MASKED_LINE = "[redacted: a line of a masked credential file]"


def redact_masked(text: str, masked: frozenset[str]) -> str:
    """``text`` with each line that is a masked file's line replaced (what the browser tools
    return: known secrets are the run's redactor's)."""
    if not masked:
        return text
    lines = text.split("\n")
    out = [MASKED_LINE if len(" ".join(ln.split())) >= MIN_LINE
           and " ".join(ln.split()) in masked else ln for ln in lines]
    return "\n".join(out)


def refuse_screenshot(text: str, redactor: Any, masked: frozenset[str]) -> str | None:
    """Why a page showing ``text`` may not be captured (one line), or None."""
    if redactor:
        spans = redactor.spans(text)
        if spans:
            return f"the page shows {spans[0][2]} (a known secret)"
    if masked:
        for line in text.splitlines():
            line = " ".join(line.split())
            if len(line) >= MIN_LINE and line in masked:
                return "the page shows the content of a masked credential file"
    return None
