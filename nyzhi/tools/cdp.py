"""The Chrome DevTools Protocol over ``trio-websocket``: finding, starting and talking to Chromium.

No Node and no Playwright: a headless Chromium started with ``--remote-debugging-port=0`` prints
the address of its browser-wide WebSocket on stderr, and everything the browser tools need is a
handful of JSON commands on it (``Target.createTarget`` for a page, ``Page.navigate``,
``Runtime.evaluate``, ``Input.dispatchMouseEvent``, ``Page.captureScreenshot``).

``CdpConnection`` multiplexes one WebSocket: each command waits for the reply with its id, each
``expect`` for one event of one page. When the connection ends (the browser exited or was
killed) every waiting command fails at once with ``BrowserGone``: a call never hangs on a dead
browser. Nothing here imports ``trio_websocket`` until a browser is actually started.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import trio

from nyzhi import records

#: The names looked for on PATH when ``[browser] executable`` is not set, in order.
BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
INSTALL_HINT = (
    "install Chromium (Debian/Ubuntu: `apt install chromium`; Fedora: `dnf install chromium`; "
    "macOS: `brew install --cask chromium`) or set [browser] executable to a Chromium or Chrome"
)
CALL_TIMEOUT = 30.0
START_TIMEOUT = 60.0
MAX_MESSAGE = 64 * 1024 * 1024  # a full-page screenshot arrives as one base64 message


class BrowserError(Exception):
    """A browser call failed; the message is for the model."""


class BrowserUnavailable(BrowserError):
    """No browser to start, or it would not start."""


class BrowserGone(BrowserError):
    """The browser's connection ended (the process exited or was killed)."""


class CdpError(BrowserError):
    """The browser answered a command with an error."""


def find_browser(configured: str | None, path: str | None = None) -> str:
    """The browser executable: ``configured`` (a path or a name on PATH), else the first of
    ``BROWSER_NAMES`` on PATH. ``BrowserUnavailable`` naming what to install otherwise."""
    if configured:
        found = shutil.which(os.path.expanduser(configured), path=path)
        if found is None:
            raise BrowserUnavailable(
                f"[browser] executable: {configured!r} is not an executable file; "
                f"{INSTALL_HINT}")
        return found
    for name in BROWSER_NAMES:
        found = shutil.which(name, path=path)
        if found:
            return found
    raise BrowserUnavailable(
        f"no Chromium or Chrome found (looked for {', '.join(BROWSER_NAMES)} on PATH): "
        f"{INSTALL_HINT}")


def chromium_args(exe: str, profile: Path, *, headless: bool = True,
                  width: int = 1280, height: int = 800) -> list[str]:
    """The command line: a fresh profile, a DevTools port the kernel picks, nothing that
    phones home or waits for a person."""
    args = [exe, "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1",
            f"--user-data-dir={profile}", f"--window-size={width},{height}", "--disable-gpu",
            "--no-first-run", "--no-default-browser-check", "--disable-extensions",
            "--disable-background-networking", "--disable-sync", "--mute-audio",
            "--hide-scrollbars", "--password-store=basic", "about:blank"]
    if headless:
        args.insert(1, "--headless=new")
    if os.geteuid() == 0:
        args.insert(1, "--no-sandbox")  # Chromium refuses to run as root with its sandbox
    return args


@records.define(eq=False)
class Launched:
    """A started browser: its process (leading its own process group), the DevTools
    address, and the tail of what it printed (for error messages)."""

    process: Any
    url: str
    stderr_tail: bytearray


async def launch(args: list[str], env: Mapping[str, str]) -> Launched:
    """Start the browser and wait for its DevTools address. The caller owns the process (and
    must drain ``process.stderr``, ``drain``). ``BrowserUnavailable`` if it exits or says
    nothing usable within ``START_TIMEOUT``."""
    from nyzhi.spawn import open_bound_process

    try:
        # Dies with nyz, SIGKILL included: setpriv sets the parent-death signal and execs the
        # browser, and open_bound_process keeps the forking thread alive as long as the
        # browser (the kernel ties the signal to that thread: nyzhi.spawn). Its renderers and
        # helpers end when the browser's IPC does.
        setpriv = shutil.which("setpriv", path=env.get("PATH"))
        argv = [setpriv, "--pdeathsig", "KILL", "--", *args] if setpriv else list(args)
        proc = await open_bound_process(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            env=dict(env), start_new_session=True)
    except OSError as exc:
        raise BrowserUnavailable(f"cannot start {args[0]}: {exc}; {INSTALL_HINT}") from exc
    seen = bytearray()
    with trio.move_on_after(START_TIMEOUT):
        while True:
            chunk = await proc.stderr.receive_some(4096)
            if not chunk:
                break
            seen.extend(chunk)
            marker = seen.find(b"DevTools listening on ")
            end = seen.find(b"\n", marker)
            if marker >= 0 and end > marker:
                url = seen[marker + len(b"DevTools listening on "):end].decode().strip()
                return Launched(proc, url, seen[-4096:])
    kill_group(proc)
    with trio.move_on_after(5):
        await proc.wait()
    status = f" (exit status {proc.returncode})" if proc.returncode is not None else ""
    text = seen.decode(errors="replace").strip()[-800:]
    raise BrowserUnavailable(f"{args[0]} did not start{status}: {text or 'no output'}")


async def drain(launched: Launched) -> None:
    """Read the browser's stderr until it closes, keeping the last 4 KB (a full pipe would
    stop the browser)."""
    stream = launched.process.stderr
    while True:
        chunk = await stream.receive_some(65536)
        if not chunk:
            return
        launched.stderr_tail.extend(chunk)
        del launched.stderr_tail[:-4096]


def kill_group(proc: Any) -> None:
    """SIGKILL the browser and every process it started (its renderers, zygote, GPU helper)."""
    from nyzhi.config.procgroup import signal_group

    if proc.returncode is None:
        signal_group(proc.pid)


class CdpConnection:
    """One browser-wide DevTools WebSocket, shared by every page and caller."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self._ids = itertools.count(1)
        self._waiting: dict[int, list[Any]] = {}
        self._events: dict[tuple[str | None, str], list[list[Any]]] = {}
        self.closed = trio.Event()
        self.reason = "the browser closed its connection"

    async def read(self) -> None:
        """Deliver replies and events until the connection ends, then fail every waiter."""
        from trio_websocket import ConnectionClosed

        try:
            while True:
                message = json.loads(await self.ws.get_message())
                if "id" in message:
                    slot = self._waiting.pop(message["id"], None)
                    if slot is not None:
                        slot.append(message)
                        slot[0].set()
                    continue
                key = (message.get("sessionId"), message.get("method", ""))
                for slot in self._events.pop(key, []):
                    slot.append(message.get("params", {}))
                    slot[0].set()
        except ConnectionClosed:
            pass
        finally:
            self.close("the browser exited or closed its connection")

    def close(self, reason: str) -> None:
        """Mark the connection dead and wake every waiter (they raise ``BrowserGone``)."""
        if self.closed.is_set():
            return
        self.reason = reason
        self.closed.set()
        for slot in list(self._waiting.values()):
            slot[0].set()
        self._waiting.clear()
        for slots in list(self._events.values()):
            for slot in slots:
                slot[0].set()
        self._events.clear()

    def _gone(self) -> BrowserGone:
        return BrowserGone(f"{self.reason}; the next browser call starts a new browser")

    async def call(self, method: str, session: str | None = None, *,
                   wait_s: float = CALL_TIMEOUT, **params: Any) -> dict[str, Any]:
        """Send one command and return its result; ``CdpError`` for an error reply,
        ``BrowserGone`` if the browser goes away meanwhile, ``BrowserError`` on timeout."""
        from trio_websocket import ConnectionClosed

        if self.closed.is_set():
            raise self._gone()
        ident = next(self._ids)
        slot: list[Any] = [trio.Event()]
        self._waiting[ident] = slot
        message: dict[str, Any] = {"id": ident, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        try:
            await self.ws.send_message(json.dumps(message))
            with trio.move_on_after(wait_s):
                await slot[0].wait()
        except ConnectionClosed:
            self.close("the browser exited or closed its connection")
        finally:
            self._waiting.pop(ident, None)
        if len(slot) < 2:
            if self.closed.is_set():
                raise self._gone()
            raise BrowserError(f"{method}: no answer from the browser within {wait_s:g} s")
        reply = slot[1]
        if "error" in reply:
            err = reply["error"]
            raise CdpError(f"{method}: {err.get('message', err)}"
                           + (f" ({err['data']})" if err.get("data") else ""))
        return reply.get("result", {})

    def expect(self, session: str | None, method: str) -> list[Any]:
        """A slot filled by the next ``method`` event of ``session``: register it before the
        command that causes the event, then ``await wait_event(slot)``."""
        slot: list[Any] = [trio.Event()]
        self._events.setdefault((session, method), []).append(slot)
        return slot

    async def wait_event(self, slot: list[Any], what: str, wait_s: float = CALL_TIMEOUT
                         ) -> dict[str, Any]:
        with trio.move_on_after(wait_s):
            await slot[0].wait()
        if len(slot) < 2:
            for slots in self._events.values():
                if slot in slots:
                    slots.remove(slot)
            if self.closed.is_set():
                raise self._gone()
            raise BrowserError(f"{what}: not done within {wait_s:g} s")
        return slot[1]

    async def new_page(self, width: int = 1280, height: int = 800) -> CdpPage:
        """A fresh tab with its own session, at ``width`` x ``height`` CSS pixels."""
        target = await self.call("Target.createTarget", url="about:blank")
        attached = await self.call("Target.attachToTarget", targetId=target["targetId"],
                                   flatten=True)
        page = CdpPage(self, attached["sessionId"], target["targetId"])
        await page.call("Page.enable")
        await page.call("Runtime.enable")
        await page.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                        deviceScaleFactor=1, mobile=False)
        return page


class CdpPage:
    """One tab: commands go to its session; ``lock`` keeps one agent's calls in order."""

    def __init__(self, conn: CdpConnection, session: str, target: str) -> None:
        self.conn = conn
        self.session = session
        self.target = target
        self.lock = trio.Lock()

    async def call(self, method: str, *, wait_s: float = CALL_TIMEOUT, **params: Any
                   ) -> dict[str, Any]:
        return await self.conn.call(method, self.session, wait_s=wait_s, **params)

    async def evaluate(self, expression: str, *, wait_s: float = CALL_TIMEOUT) -> Any:
        """The value of ``expression`` (awaited when a promise) as JSON; ``CdpError`` with the
        page's message when it throws."""
        result = await self.call("Runtime.evaluate", expression=expression, awaitPromise=True,
                                 returnByValue=True, userGesture=True, wait_s=wait_s)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            exc = details.get("exception", {})
            text = exc.get("description") or details.get("text") or "an exception"
            raise CdpError(f"the script threw: {text.splitlines()[0] if text else text}")
        value = result.get("result", {})
        if value.get("type") == "undefined":
            return None
        if "value" not in value and value.get("unserializableValue"):
            return value["unserializableValue"]
        return value.get("value")

    async def navigate(self, url: str, *, wait_s: float = CALL_TIMEOUT) -> None:
        """Load ``url`` and wait for its load event; ``BrowserError`` naming a network error."""
        loaded = self.conn.expect(self.session, "Page.loadEventFired")
        result = await self.call("Page.navigate", url=url, wait_s=wait_s)
        if result.get("errorText"):
            raise BrowserError(f"could not open {url}: {result['errorText']}")
        if result.get("loaderId"):  # a new document (a change of #fragment has none)
            await self.conn.wait_event(loaded, f"loading {url}", wait_s)
