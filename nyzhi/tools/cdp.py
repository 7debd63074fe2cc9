"""The Chrome DevTools Protocol over a pair of pipes: finding, starting and talking to Chromium.

No Node and no Playwright, and no TCP port: Chromium is started with
``--remote-debugging-pipe`` and reads commands from its fd 3 and writes replies and events to
its fd 4, one JSON message each, ended by a NUL byte. A DevTools *port* would be reachable by
anything on the machine, a page of the browser itself included
(``http://127.0.0.1:PORT/json/new?file:///…`` opened a tab on any file and handed out the
WebSocket that drives the browser); a pipe is held only by nyz and the browser process.
Everything the browser tools need is a handful of JSON commands on it (``Target.createTarget``
for a page, ``Page.navigate``, ``Runtime.evaluate``, ``Input.dispatchMouseEvent``,
``Page.captureScreenshot``).

``CdpConnection`` multiplexes the pipe: each command waits for the reply with its id, each
``expect`` for one event of one page, and ``listener`` (the guard,
``nyzhi.tools.browser_guard``) sees every event. When the connection ends (the browser exited
or was killed) every waiting command fails at once with ``BrowserGone``: a call never hangs on
a dead browser.
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
# The browser's ends of the pipes land on fds 3 and 4, where --remote-debugging-pipe expects
# them: a tiny trampoline (this interpreter) moves them there and execs the browser, since
# Popen can only pass a descriptor under its own number.
_FDS_TRAMPOLINE = ("import os,sys; a=sys.argv; r,w=int(a[1]),int(a[2]); os.dup2(r,3); "
                   "os.dup2(w,4); [os.close(f) for f in {r,w} if f>4]; os.execv(a[3], a[3:])")


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
                  width: int = 1280, height: int = 800, proxy: str | None = None) -> list[str]:
    """The command line: a fresh profile, DevTools over the pipes (no port), nothing that
    phones home or waits for a person, no UDP around the page's checks (WebRTC)."""
    args = [exe, "--remote-debugging-pipe", f"--user-data-dir={profile}",
            "--force-webrtc-ip-handling-policy=disable_non_proxied_udp", f"--window-size={width},{height}", "--disable-gpu",
            "--no-first-run", "--no-default-browser-check", "--disable-extensions",
            "--disable-background-networking", "--disable-sync", "--mute-audio",
            "--hide-scrollbars", "--password-store=basic", "about:blank"]
    if proxy:  # every connection, loopback included, through the guard (browser_proxy)
        args[1:1] = [f"--proxy-server={proxy}", "--proxy-bypass-list=<-loopback>"]
    if headless:
        args.insert(1, "--headless=new")
    if os.geteuid() == 0:
        args.insert(1, "--no-sandbox")  # Chromium refuses to run as root with its sandbox
    return args


@records.define(eq=False)
class Launched:
    """A started browser: its process (leading its own process group), our ends of its
    DevTools pipes, and the tail of what it printed (for error messages)."""

    process: Any
    pipe: PipeTransport
    stderr_tail: bytearray


class TransportClosed(Exception):
    """The DevTools pipe ended (the browser exited or closed it)."""


class PipeTransport:
    """DevTools messages over the two pipes: NUL-terminated JSON, each at most
    ``MAX_MESSAGE`` bytes (a longer one ends the connection: nothing grows unbounded)."""

    def __init__(self, to_browser: int, from_browser: int) -> None:
        self._send = trio.lowlevel.FdStream(to_browser)
        self._recv = trio.lowlevel.FdStream(from_browser)
        self._buffer = bytearray()
        self._scanned = 0
        self._sending = trio.Lock()

    async def get_message(self) -> str:
        while True:
            end = self._buffer.find(b"\0", self._scanned)
            if end >= 0:
                message = bytes(self._buffer[:end])
                del self._buffer[:end + 1]
                self._scanned = 0
                return message.decode("utf-8", "replace")
            self._scanned = len(self._buffer)
            if len(self._buffer) > MAX_MESSAGE:
                raise TransportClosed(f"a DevTools message over {MAX_MESSAGE} bytes")
            try:
                chunk = await self._recv.receive_some(1 << 20)
            except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                raise TransportClosed(str(exc)) from exc
            if not chunk:
                raise TransportClosed("the browser closed its DevTools pipe")
            self._buffer.extend(chunk)

    async def send_message(self, text: str) -> None:
        try:
            async with self._sending:
                await self._send.send_all(text.encode("utf-8") + b"\0")
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise TransportClosed(str(exc)) from exc

    async def aclose(self) -> None:
        for stream in (self._send, self._recv):
            with trio.CancelScope(shield=True):
                await stream.aclose()


async def launch(args: list[str], env: Mapping[str, str]) -> Launched:
    """Start the browser with its DevTools pipes and wait until it answers on them. The
    caller owns the process (and must drain ``process.stderr``, ``drain``).
    ``BrowserUnavailable`` if it exits or does not answer within ``START_TIMEOUT``."""
    import sys

    from nyzhi.spawn import open_bound_process

    child_in, ours_out = os.pipe()  # commands: we write, the browser reads (its fd 3)
    ours_in, child_out = os.pipe()  # replies and events: the browser writes (its fd 4)
    for fd in (ours_out, ours_in):
        os.set_inheritable(fd, False)
    try:
        # Dies with nyz, SIGKILL included: setpriv sets the parent-death signal and execs the
        # browser, and open_bound_process keeps the forking thread alive as long as the
        # browser (the kernel ties the signal to that thread: nyzhi.spawn). Its renderers and
        # helpers end when the browser's IPC does.
        setpriv = shutil.which("setpriv", path=env.get("PATH"))
        exe = shutil.which(args[0], path=env.get("PATH")) or args[0]
        moved = [sys.executable, "-I", "-S", "-c", _FDS_TRAMPOLINE, str(child_in),
                 str(child_out), exe, *args[1:]]
        argv = [setpriv, "--pdeathsig", "KILL", "--", *moved] if setpriv else moved
        proc = await open_bound_process(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            env=dict(env), start_new_session=True, pass_fds=(child_in, child_out))
    except OSError as exc:
        for fd in (ours_out, ours_in):
            os.close(fd)
        raise BrowserUnavailable(f"cannot start {args[0]}: {exc}; {INSTALL_HINT}") from exc
    finally:
        os.close(child_in)
        os.close(child_out)
    pipe = PipeTransport(ours_out, ours_in)
    seen = bytearray()
    launched = Launched(proc, pipe, seen)
    ready = False
    async with trio.open_nursery() as nursery:
        nursery.start_soon(drain, launched)
        with trio.move_on_after(START_TIMEOUT):
            try:  # the first message on the pipe: the browser is up
                await pipe.send_message(json.dumps({"id": 0, "method": "Browser.getVersion"}))
                await pipe.get_message()
                ready = True
            except TransportClosed:
                pass
        nursery.cancel_scope.cancel()
    if ready:
        return launched
    kill_group(proc)
    with trio.move_on_after(5):
        await proc.wait()
    await pipe.aclose()
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
    """The browser-wide DevTools connection (its pipe), shared by every page and caller."""

    def __init__(self, transport: Any) -> None:
        self.ws = transport  # PipeTransport (get_message / send_message)
        self.listener: Any = None  # called with every event (the guard), never awaited
        self._ids = itertools.count(1)
        self._waiting: dict[int, list[Any]] = {}
        self._events: dict[tuple[str | None, str], list[list[Any]]] = {}
        self.closed = trio.Event()
        self.reason = "the browser closed its connection"

    async def read(self) -> None:
        """Deliver replies and events until the connection ends, then fail every waiter."""
        try:
            while True:
                message = json.loads(await self.ws.get_message())
                if "id" in message:
                    slot = self._waiting.pop(message["id"], None)
                    if slot is not None:
                        slot.append(message)
                        slot[0].set()
                    continue
                if self.listener is not None:
                    self.listener(message)
                key = (message.get("sessionId"), message.get("method", ""))
                for slot in self._events.pop(key, []):
                    slot.append(message.get("params", {}))
                    slot[0].set()
        except (TransportClosed, ValueError):
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
        except TransportClosed:
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
