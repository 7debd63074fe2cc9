"""``nyzhi.loopback``: one ``is_loopback`` and one header set, sent by every loopback HTTP
responder (the web console, ``nyz mcp serve --http``, the workspace file server, the OAuth
callback page of ``nyz mcp login``)."""

from __future__ import annotations

import functools

import pytest
import trio

from nyzhi.loopback import is_loopback, is_loopback_url, security_headers

SHARED = {"cache-control": "no-store", "x-content-type-options": "nosniff",
          "referrer-policy": "no-referrer"}


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.1", "127.255.255.254", "::1", "[::1]",
                                  "localhost", "LocalHost", "::ffff:127.0.0.1",
                                  "[::ffff:127.0.0.2]", "::ffff:7f00:1", " 127.0.0.1 "])
def test_these_hosts_are_this_machine(host):
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["127.0.0.1.evil.com", "localhost.evil.com", "evil-localhost",
                                  "127.0.0.1:80", "0.0.0.0", "::", "10.0.0.1", "192.168.1.1",
                                  "::ffff:10.0.0.1", "128.0.0.1", "", "[::1", "2130706433",
                                  "example.com", "localhost\x00.evil.com", "fe80::1"])
def test_these_hosts_are_not(host):
    assert not is_loopback(host)


def test_a_url_is_loopback_by_its_host_alone():
    assert is_loopback_url("http://localhost:11434") and is_loopback_url("http://[::1]:8080/v1")
    assert is_loopback_url("http://127.0.0.1:8080/v1")
    assert not is_loopback_url("http://127.0.0.1.evil.com/v1")
    assert not is_loopback_url("https://api.example.com/v1?h=127.0.0.1")
    assert not is_loopback_url("http://evil.com#@127.0.0.1") and not is_loopback_url("http://[::1")


def _check(headers: dict[str, str], *, csp: bool = True, frames: str = "DENY") -> None:
    headers = {k.lower(): v for k, v in headers.items()}
    for name, value in SHARED.items():
        assert headers.get(name) == value, name
    assert headers.get("x-frame-options") == frames
    if csp:
        assert "default-src 'none'" in headers["content-security-policy"]
        assert "frame-ancestors 'none'" in headers["content-security-policy"]
    else:
        assert "content-security-policy" not in headers


def _head(raw: bytes) -> tuple[str, dict[str, str]]:
    head = raw.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    return head[0], {k.strip(): v.strip() for k, _s, v in (line.partition(":") for line in head[1:])}


def test_the_header_set_is_one_list():
    assert dict(security_headers()) == {
        "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY",
        "Content-Security-Policy": security_headers()[-1][1]}
    assert ("Content-Security-Policy", "x") in security_headers(csp="x")


async def test_the_workspace_file_server_sends_the_headers_but_no_csp(tmp_path):
    import httpx

    from nyzhi.tools.workspace_http import WorkspaceFiles

    (tmp_path / "index.html").write_text("<script>1</script>")
    files = WorkspaceFiles()
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(functools.partial(
            trio.serve_tcp, files.serve, 0, host="127.0.0.1"))
        files.base = f"http://127.0.0.1:{listeners[0].socket.getsockname()[1]}"
        async with httpx.AsyncClient() as client:
            found = await client.get(files.url(tmp_path, tmp_path / "index.html"))
            missing = await client.get(f"{files.base}/nope/x")
        nursery.cancel_scope.cancel()
    assert found.status_code == 200 and missing.status_code == 404
    for resp in (found, missing):  # the user's pages run their scripts; framed only by theirs
        _check(dict(resp.headers), csp=False, frames="SAMEORIGIN")


async def test_the_oauth_callback_page_and_its_404_send_the_headers():
    from nyzhi.core.runtime.mcp.login import _one_callback

    listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    port = listener.socket.getsockname()[1]

    async def get(path: str) -> bytes:
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        async with stream:
            await stream.send_all(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
            data = b""
            while chunk := await stream.receive_some(65536):
                data += chunk
        return data

    got: list[dict[str, str]] = []
    async with trio.open_nursery() as nursery:
        async def wait() -> None:
            got.append(await _one_callback(listener))

        nursery.start_soon(wait)
        missing = await get("/favicon.ico")
        page = await get("/callback?code=abc&state=s")
    await listener.aclose()
    assert got == [{"code": "abc", "state": "s"}]
    for raw, status in ((missing, "404"), (page, "200")):
        line, headers = _head(raw)
        assert line.split()[1] == status
        _check(headers)
    assert b"login finished" in page


async def test_mcp_serve_http_answers_with_the_headers_refused_or_not():
    from nyzhi.core.runtime.mcp.serve import loopback_guard

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream"),
                                (b"cache-control", b"no-cache")]})
        await send({"type": "http.response.body", "body": b"ok"})

    guarded = loopback_guard(app, "127.0.0.1", [8765])

    async def call(host: bytes) -> dict[str, str]:
        sent: list[dict] = []

        async def send(message):
            sent.append(message)

        scope = {"type": "http", "headers": [(b"host", host)]}
        await guarded(scope, None, send)
        start = sent[0]
        assert [k for k, _v in start["headers"]].count(b"cache-control") == 1
        return {k.decode(): v.decode() for k, v in start["headers"]} | {
            ":status": str(start["status"])}

    served = await call(b"127.0.0.1:8765")
    refused = await call(b"evil.example:8765")  # DNS rebinding: refused by the guard
    assert served[":status"] == "200" and served["content-type"] == "text/event-stream"
    assert refused[":status"] == "421"  # misdirected: not this host
    _check(served)
    _check(refused)
