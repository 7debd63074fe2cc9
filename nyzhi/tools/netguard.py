"""The one check every model-directed request passes: no SSRF, no secret in the URL.

A URL the model chose (``web_fetch``, a page the browser opens or a page's own requests) must
not reach this machine or its network: a loopback service (an admin port, the DevTools
endpoint of a browser), a private address, the cloud metadata endpoint. The check is made on
the *addresses*, after resolution, so a DNS name that resolves to ``127.0.0.1`` is refused as
``127.0.0.1`` is, and so are the other spellings of an address (``2130706433``,
``0x7f000001``, ``0177.0.0.1``, ``127.1``, ``[::1]``, ``[::ffff:127.0.0.1]``, 6to4 and NAT64
forms that embed a private IPv4 address).

``check_url`` returns the checked addresses; the caller connects to one of those (it *pins*
them) and never resolves the name again, so a name that answers a public address to the check
and ``127.0.0.1`` to the connection (DNS rebinding) gets nowhere. A redirect is a new URL and is
checked again (``web_fetch`` follows redirects itself, a bounded number).

The user's own config may allow hosts (``[network] allow_hosts``: a name, ``*.suffix``, an
address or a network, each optionally with ``:port``); a project layer cannot
(``nyzhi.config.loader`` ignores the key there). A URL that carries a known secret, as written,
URL-encoded or in an encoding the redactor recognises (base64, hex), is refused before any
resolution: a query string is a way out.
"""

from __future__ import annotations

import ipaddress
import socket
import urllib.parse
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import attrs

from nyzhi import records

IP = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[str]]]
MAX_ADDRESSES = 32  # of one name: more is no use, and every one is checked
METADATA = {
    ipaddress.ip_address("169.254.169.254"): "the cloud metadata endpoint",
    ipaddress.ip_address("169.254.170.2"): "the cloud metadata endpoint",
    ipaddress.ip_address("100.100.100.200"): "the cloud metadata endpoint",
    ipaddress.ip_address("192.0.0.192"): "the cloud metadata endpoint",
    ipaddress.ip_address("fd00:ec2::254"): "the cloud metadata endpoint",
}
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class Refused(Exception):
    """The request may not go out; the message (one line) says why."""


class SecretInUrl(Refused):
    """The URL carries a known secret: the URL itself must not be shown either."""


async def system_resolver(host: str, port: int) -> list[str]:
    """The addresses ``host`` resolves to, by the system's resolver (in a thread)."""
    import trio

    try:
        infos = await trio.socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise Refused(f"cannot resolve {host}: {exc}") from exc
    return [str(info[4][0]) for info in infos]


@records.frozen
class Allowed:
    """One ``allow_hosts`` entry: a host name (``*.`` for its subdomains), or a network."""

    name: str | None = None
    network: Any = None  # ipaddress.IPv4Network | IPv6Network
    port: int | None = None

    def matches_name(self, host: str, port: int) -> bool:
        if self.name is None or (self.port is not None and self.port != port):
            return False
        if self.name.startswith("*."):
            return host.endswith(self.name[1:]) or host == self.name[2:]
        return host == self.name

    def matches_address(self, ip: IP, port: int) -> bool:
        return (self.network is not None and (self.port is None or self.port == port)
                and ip.version == self.network.version and ip in self.network)


def parse_allowed(entry: str) -> Allowed:
    """``host``, ``*.host``, ``10.0.0.0/8``, ``[::1]``, each optionally ``:PORT``; ValueError
    naming the entry otherwise."""
    text = entry.strip().lower()
    port: int | None = None
    raw_port = None
    if text.startswith("["):
        text, _, rest = text[1:].partition("]")
        if rest and not rest.startswith(":"):
            raise ValueError(f"[network] allow_hosts: {entry!r} is not HOST[:PORT]")
        raw_port = rest[1:] if rest else None
    elif text.count(":") == 1:
        text, _, raw_port = text.partition(":")
    if raw_port is not None:
        if not raw_port.isdigit():
            raise ValueError(f"[network] allow_hosts: {entry!r} is not HOST[:PORT]")
        port = int(raw_port)
    if port is not None and not 0 < port < 65536:
        raise ValueError(f"[network] allow_hosts: {entry!r}: the port is out of range")
    if not text:
        raise ValueError(f"[network] allow_hosts: {entry!r} names no host")
    try:
        return Allowed(network=ipaddress.ip_network(text, strict=False), port=port)
    except ValueError:
        pass
    literal = literal_ip(text)
    if literal is not None:
        return Allowed(network=ipaddress.ip_network(literal), port=port)
    return Allowed(name=text.rstrip("."), port=port)


def literal_ip(host: str) -> IP | None:
    """The address ``host`` spells, in any form a resolver or a browser would read as one
    (dotted, decimal, hex, octal, shortened ``127.1``, IPv6 with a zone), else None."""
    text = host.strip("[]").split("%", 1)[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        pass
    if text and all(c in "0123456789abcdefxABCDEFX." for c in text) and text[0].isdigit():
        try:  # inet_aton reads the legacy forms: 2130706433, 0x7f000001, 0177.0.0.1, 127.1
            return ipaddress.IPv4Address(socket.inet_aton(text))
        except OSError:
            return None
    return None


def _embedded(ip: IP) -> ipaddress.IPv4Address | None:
    """The IPv4 address inside an IPv6 one (v4-mapped, v4-compatible, 6to4, NAT64, Teredo)."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return None
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if ip in _NAT64 or (int(ip) >> 32 == 0 and int(ip) > 1):  # ::a.b.c.d (deprecated form)
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def forbidden(ip: IP) -> str | None:
    """Why ``ip`` may not be reached (a few words), or None for a public address."""
    inner = _embedded(ip)
    if inner is not None:
        why = forbidden(inner)
        return f"{why} (as {ip})" if why else None
    if ip in METADATA:
        return METADATA[ip]
    for test, why in (("is_unspecified", "an unspecified address"), ("is_loopback", "loopback"),
                      ("is_link_local", "link-local"), ("is_multicast", "multicast")):
        if getattr(ip, test):
            return why
    if isinstance(ip, ipaddress.IPv4Address) and ip in _CGNAT:
        return "carrier-grade NAT (100.64.0.0/10)"
    if ip.is_reserved:
        return "a reserved address"
    if ip.is_private:
        return "a private address"
    if not ip.is_global:
        return "a reserved address"
    return None


@records.frozen
class Target:
    """A checked URL: its host and port, and the addresses to connect to (pinned)."""

    url: str
    scheme: str
    host: str
    port: int
    addresses: tuple[str, ...]
    allowed: bool = False  # by the user's allow_hosts (the addresses were not checked)


@records.frozen
class NetPolicy:
    """What model-directed requests may reach: everything public, plus the user's
    ``allow_hosts``; ``resolver`` is the system's unless a test gives its own."""

    allow: tuple[Allowed, ...] = ()
    resolver: Resolver = attrs.field(default=system_resolver, eq=False)
    redactor: Any = attrs.field(default=None, eq=False)  # nyzhi.config.secrets.Redactor

    @classmethod
    def from_hosts(cls, hosts: Iterable[str], **kw: Any) -> NetPolicy:
        return cls(allow=tuple(parse_allowed(h) for h in hosts), **kw)

    def check_secret(self, url: str) -> None:
        """``Refused`` when ``url`` carries a known secret, raw, URL-encoded (once or twice,
        ``+`` as space too) or in a form the redactor knows (base64, hex, reversed)."""
        if not self.redactor:
            return
        once = urllib.parse.unquote(url)
        for form in (url, once, urllib.parse.unquote_plus(url), urllib.parse.unquote(once)):
            spans = self.redactor.spans(form)
            if spans:
                raise SecretInUrl(f"the URL carries {spans[0][2]}: a secret never leaves in a "
                                  "URL")

    def allowed_address(self, ip: IP, port: int) -> bool:
        return any(a.matches_address(ip, port) for a in self.allow)

    async def check_url(self, url: str) -> Target:
        """The checked ``url`` (http or https); ``Refused`` with the reason otherwise."""
        self.check_secret(url)
        try:
            parts = urllib.parse.urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise Refused(f"not a valid URL: {exc}") from exc
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https"):
            raise Refused(f"only http:// and https:// URLs go out, not {scheme or 'none'}:")
        host = (parts.hostname or "").rstrip(".").lower()
        if not host:
            raise Refused("the URL names no host")
        port = port or (443 if scheme == "https" else 80)
        by_name = literal_ip(host) is None and any(a.matches_name(host, port) for a in self.allow)
        literal = literal_ip(host)
        if literal is not None:
            found = [str(literal)]
        elif host == "localhost" or host.endswith(".localhost"):
            found = ["127.0.0.1", "::1"]  # what browsers make of it, whatever DNS says
        else:
            found = (await self.resolver(host, port))[:MAX_ADDRESSES]
        if not found:
            raise Refused(f"{host} resolves to no address")
        if not by_name:
            for raw in found:
                ip = ipaddress.ip_address(raw.split("%", 1)[0])
                why = forbidden(ip)
                if why and not self.allowed_address(ip, port):
                    shown = host if str(ip) == host else f"{host} ({ip})"
                    raise Refused(
                        f"{shown} is {why}: requests from the model may not reach this machine "
                        "or its network (allow a host in your own config: [network] allow_hosts)")
        return Target(url, scheme, host, port, tuple(found), allowed=by_name)


def pinned_url(target: Target, address: str) -> str:
    """``target.url`` with its host replaced by ``address`` (the connection goes there; the
    Host header and TLS name stay the host's)."""
    parts = urllib.parse.urlsplit(target.url)
    shown = f"[{address}]" if ":" in address else address
    default = 443 if target.scheme == "https" else 80
    netloc = shown if target.port == default else f"{shown}:{target.port}"
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))


def host_header(target: Target) -> str:
    default = 443 if target.scheme == "https" else 80
    name = f"[{target.host}]" if ":" in target.host else target.host
    return name if target.port == default else f"{name}:{target.port}"
