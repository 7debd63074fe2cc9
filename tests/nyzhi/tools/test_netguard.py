"""No SSRF from web_fetch (nyzhi.tools.netguard): every spelling of a loopback, private,
link-local or metadata address refused before any connection, DNS names checked after
resolution (a test resolver stands in for DNS: no lookup leaves the machine), the resolved
address pinned (no second resolution), each redirect checked again, secrets refused in URLs;
and the controls: an allowed host is fetched, a redirect inside it followed.

Real loopback HTTP servers count their hits, so "refused" means nothing reached them."""

from __future__ import annotations

import base64
import functools
import ipaddress
import urllib.parse

import attrs
import pytest
import trio
from _toolctx import make_ctx

from nyzhi.config.secrets import Redactor
from nyzhi.tools.builtin.web import WebFetchTool
from nyzhi.tools.netguard import NetPolicy, Refused, forbidden, literal_ip, parse_allowed

SECRET = "sk-test-Zq81mVbX0pLr55wq"


@attrs.define
class Server:
    """One loopback HTTP server at ``host``: its hits, and an answer per path."""

    host: str = "127.0.0.1"
    port: int = 0
    hits: list[str] = attrs.Factory(list)
    routes: dict[str, tuple[int, dict[str, str], bytes]] = attrs.Factory(dict)

    @property
    def base(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def answer(self, stream: trio.SocketStream) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = await stream.receive_some(65536)
            if not chunk:
                return
            data += chunk
        head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
        path = head[0].split(" ")[1]
        self.hits.append("\n".join(head))
        status, headers, body = self.routes.get(path, (200, {}, f"page {path}".encode()))
        extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        reason = {200: "OK", 302: "Found", 307: "Temporary Redirect"}.get(status, "X")
        try:
            await stream.send_all(
                f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\n{extra}"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
            await stream.aclose()
        except trio.BrokenResourceError:
            pass


async def _serve(nursery: trio.Nursery, host: str = "127.0.0.1") -> Server:
    server = Server(host)
    listeners = await nursery.start(functools.partial(trio.serve_tcp, server.answer, 0,
                                                      host=host))
    server.port = listeners[0].socket.getsockname()[1]
    return server


class Resolver:
    """DNS for the tests: fixed answers per name, each lookup recorded."""

    def __init__(self, answers: dict[str, list[list[str]]]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        queue = self.answers.get(host)
        if not queue:
            raise Refused(f"cannot resolve {host}: unknown name")
        return queue.pop(0) if len(queue) > 1 else queue[0]


async def _fetch(url: str, policy: NetPolicy, tmp_path) -> str:
    res = await WebFetchTool().run({"url": url}, make_ctx(tmp_path, net=policy))
    return res.output if res.is_error else "OK " + res.output


async def test_every_spelling_of_this_machine_and_its_network_is_refused(tmp_path, nursery):
    inside = await _serve(nursery)
    port = inside.port
    resolver = Resolver({"evil.test": [["127.0.0.1"]], "mixed.test": [["8.8.8.8", "127.0.0.1"]],
                         "meta.test": [["169.254.169.254"]], "six.test": [["::1"]],
                         "internal.test": [["10.1.2.3"]]})
    policy = NetPolicy(resolver=resolver)
    vectors = {
        f"http://127.0.0.1:{port}/": "loopback",
        f"http://localhost:{port}/": "loopback",
        f"http://LocalHost.:{port}/": "loopback",
        f"http://app.localhost:{port}/": "loopback",
        f"http://[::1]:{port}/": "loopback",
        f"http://0x7f000001:{port}/": "loopback",
        f"http://2130706433:{port}/": "loopback",
        f"http://0177.0.0.1:{port}/": "loopback",
        f"http://127.1:{port}/": "loopback",
        f"http://127.0.0.2:{port}/": "loopback",
        f"http://[::ffff:127.0.0.1]:{port}/": "loopback (as ::ffff:7f00:1)",
        f"http://[::ffff:7f00:1]:{port}/": "loopback",
        f"http://[2002:7f00:1::1]:{port}/": "loopback",  # 6to4 around 127.0.0.1
        f"http://[64:ff9b::7f00:1]:{port}/": "loopback",  # NAT64 around it
        f"http://0.0.0.0:{port}/": "an unspecified address",
        f"http://[::]:{port}/": "an unspecified address",
        "http://169.254.169.254/latest/meta-data/": "the cloud metadata endpoint",
        "http://[fd00:ec2::254]/": "the cloud metadata endpoint",
        "http://[::ffff:169.254.169.254]/": "the cloud metadata endpoint",
        "http://169.254.1.1/": "link-local",
        "http://[fe80::1]/": "link-local",
        "http://10.0.0.1/": "a private address",
        "http://172.16.5.4/": "a private address",
        "http://192.168.1.1/": "a private address",
        "http://[fc00::1]/": "a private address",
        "http://100.64.0.1/": "carrier-grade NAT",
        "http://224.0.0.1/": "multicast",
        f"http://evil.test:{port}/": "evil.test (127.0.0.1) is loopback",
        f"http://mixed.test:{port}/": "mixed.test (127.0.0.1) is loopback",
        "http://meta.test/": "meta.test (169.254.169.254) is the cloud metadata endpoint",
        f"http://six.test:{port}/": "six.test (::1) is loopback",
        "http://internal.test/": "a private address",
    }
    for url, why in vectors.items():
        out = await _fetch(url, policy, tmp_path)
        assert out.startswith(f"web_fetch {url} refused: "), out
        assert why in out and "[network] allow_hosts" in out, (url, out)
    assert inside.hits == []  # nothing reached the machine


def test_addresses_are_classified_after_unwrapping() -> None:
    assert literal_ip("2130706433") == ipaddress.ip_address("127.0.0.1")
    assert literal_ip("0x7f.1") == ipaddress.ip_address("127.0.0.1")
    assert literal_ip("[::1]") == ipaddress.ip_address("::1")
    assert literal_ip("example.com") is None and literal_ip("1e100.net") is None
    assert forbidden(ipaddress.ip_address("8.8.8.8")) is None
    assert forbidden(ipaddress.ip_address("2606:4700::1111")) is None
    assert forbidden(ipaddress.ip_address("::ffff:10.0.0.1")) == (
        "a private address (as ::ffff:a00:1)")
    assert forbidden(ipaddress.ip_address("192.0.2.1")) is not None  # TEST-NET
    assert forbidden(ipaddress.ip_address("240.0.0.1")) == "a reserved address"
    for bad, why in (("host:notaport", "is not HOST[:PORT]"), ("h:0", "out of range"),
                     (":80", "names no host"), ("[::1]x", "is not HOST[:PORT]")):
        with pytest.raises(ValueError, match=r"\[network\] allow_hosts: .*" + why.replace(
                "[", r"\[").replace("]", r"\]")):
            parse_allowed(bad)
    assert parse_allowed("[::1]:8080").port == 8080
    assert parse_allowed("Example.COM.").name == "example.com"


async def test_a_name_is_resolved_once_and_the_address_pinned(tmp_path, nursery):
    """DNS rebinding: the name answers an allowed address to the check and another one
    after; the connection goes to the checked one, and the name is not asked again."""
    good = await _serve(nursery, "127.0.0.1")
    other = await _serve(nursery, "127.0.0.2")
    resolver = Resolver({"rebind.test": [["127.0.0.1"], ["127.0.0.2"]]})
    policy = NetPolicy.from_hosts([f"127.0.0.1:{good.port}"], resolver=resolver)
    out = await _fetch(f"http://rebind.test:{good.port}/x", policy, tmp_path)
    assert out.startswith("OK URL: http://rebind.test:") and "page /x" in out, out
    assert resolver.asked == ["rebind.test"]
    assert f"Host: rebind.test:{good.port}" in good.hits[0]  # the name, not the address
    assert other.hits == []


async def test_each_redirect_is_checked_again(tmp_path, nursery):
    allowed = await _serve(nursery)  # stands for a public server: allowed by the user
    inner = await _serve(nursery, "127.0.0.3")
    resolver = Resolver({"evil.test": [["127.0.0.3"]]})
    allowed.routes = {
        "/to-loopback": (302, {"Location": f"http://127.0.0.3:{inner.port}/admin"}, b""),
        "/to-name": (307, {"Location": f"http://evil.test:{inner.port}/admin"}, b""),
        "/to-meta": (302, {"Location": "http://169.254.169.254/latest/"}, b""),
        "/to-file": (302, {"Location": "file:///etc/passwd"}, b""),
        "/inside": (302, {"Location": "/final"}, b""),
        "/loop": (302, {"Location": "/loop"}, b""),
    }
    policy = NetPolicy.from_hosts([f"127.0.0.1:{allowed.port}"], resolver=resolver)
    base = allowed.base
    for path, why in (("/to-loopback", "127.0.0.3 is loopback"),
                      ("/to-name", "evil.test (127.0.0.3) is loopback"),
                      ("/to-meta", "the cloud metadata endpoint"),
                      ("/to-file", "only http:// and https:// URLs go out, not file:")):
        out = await _fetch(base + path, policy, tmp_path)
        assert "refused" in out and why in out, out
    assert inner.hits == []
    # the controls: the allowed host is fetched, a redirect within it followed
    out = await _fetch(base + "/inside", policy, tmp_path)
    assert out.startswith(f"OK URL: {base}/final\nStatus: 200") and "page /final" in out
    out = await _fetch(base + "/loop", policy, tmp_path)
    assert "refused: more than 10 redirects" in out
    # the same port on another loopback address, or another port, is still refused
    assert "refused" in await _fetch(f"http://127.0.0.1:{inner.port}/", policy, tmp_path)


async def test_allowed_names_and_networks(tmp_path, nursery):
    server = await _serve(nursery)
    resolver = Resolver({"intranet.corp": [["127.0.0.1"]], "docs.intranet.corp": [["127.0.0.1"]]})
    by_name = NetPolicy.from_hosts(["*.intranet.corp"], resolver=resolver)
    assert "OK " in await _fetch(f"http://docs.intranet.corp:{server.port}/", by_name, tmp_path)
    assert "OK " in await _fetch(f"http://intranet.corp:{server.port}/", by_name, tmp_path)
    assert "refused" in await _fetch(f"http://127.0.0.1:{server.port}/", by_name, tmp_path)
    by_net = NetPolicy.from_hosts(["127.0.0.0/8"], resolver=resolver)
    assert "OK " in await _fetch(f"http://intranet.corp:{server.port}/", by_net, tmp_path)
    assert "OK " in await _fetch(f"http://2130706433:{server.port}/", by_net, tmp_path)
    assert len(server.hits) == 4


async def test_a_url_carrying_a_secret_never_leaves(tmp_path, nursery):
    server = await _serve(nursery)
    redactor = Redactor()
    redactor.add("provider.openai.api_key", SECRET)
    policy = NetPolicy.from_hosts(["127.0.0.1"], redactor=redactor)
    b64 = base64.b64encode(f"key={SECRET}".encode()).decode()
    for url in (f"{server.base}/?k={SECRET}",
                f"{server.base}/?k={urllib.parse.quote(SECRET, safe='')}",
                f"{server.base}/?k=" + "".join(f"%{b:02x}" for b in SECRET.encode()),
                f"{server.base}/?k={urllib.parse.quote(urllib.parse.quote(SECRET, safe=''))}",
                f"{server.base}/?d={b64}",
                f"{server.base}/?d={urllib.parse.quote(b64, safe='')}",
                f"{server.base}/{SECRET.encode().hex()}",
                f"http://{SECRET}.example.com/"):
        out = await _fetch(url, policy, tmp_path)
        assert out.startswith("web_fetch refused: the URL carries provider.openai.api_key")
        assert out.endswith(": a secret never leaves in a URL"), (url, out)
    assert server.hits == []
    # the run's redactor is used when the policy has none of its own
    ctx = make_ctx(tmp_path, net=NetPolicy.from_hosts(["127.0.0.1"]), redactor=redactor)
    res = await WebFetchTool().run({"url": f"{server.base}/?k={SECRET}"}, ctx)
    assert res.is_error and "carries" in res.output and server.hits == []
    assert "OK " in await _fetch(f"{server.base}/?k=harmless", policy, tmp_path)


async def test_without_a_policy_the_default_is_strict(tmp_path, nursery):
    server = await _serve(nursery)
    res = await WebFetchTool().run({"url": server.base + "/"}, make_ctx(tmp_path))
    assert res.is_error and "127.0.0.1 is loopback" in res.output
    assert server.hits == []
