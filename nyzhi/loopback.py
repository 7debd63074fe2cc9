"""What every loopback responder of nyz shares: which hosts are this machine, which requests
are refused for naming another (DNS rebinding), and the headers each HTTP answer carries.

Several parts of nyz answer HTTP on 127.0.0.1: the web console (``nyz serve``), ``nyz mcp
serve --http``, the browser tools' workspace file server and the OAuth callback page of ``nyz
mcp login``. A page anywhere on the web can make the user's browser send them requests, so
each one answers with the same headers: nothing cached (a token or a transcript stays out of
the disk cache), no content sniffing (a file is only what its type says), no ``Referer`` (a
URL holding a token never leaks to a site a page links to), no framing by another site (no
clickjacking), and a Content-Security-Policy that allows nothing unless the responder says
what its page needs.

``is_loopback`` is the one answer to "is this host this machine": the binds that need
``--allow-remote`` otherwise, the model limits that trust a local server's own numbers. A
root module under every layer (as ``records``), so the front ends use it too.
"""

from __future__ import annotations

import ipaddress
from typing import Any

LOOPBACK_NAMES = ("localhost",)
# A page with no scripts, styles or frames of its own: nothing may load, nobody may frame it.
NOTHING_CSP = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, ``[::1]`` bracketed or not) is this machine:
    ``localhost``, 127.0.0.0/8, ``::1`` and an IPv4-mapped ``::ffff:127.x.y.z``. A name that
    only starts like one (``127.0.0.1.evil.com``, ``localhost.evil.com``) is not."""
    host = host.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if host in LOOPBACK_NAMES:
        return True
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0] if ":" in host else host)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


def is_loopback_url(url: str) -> bool:
    """Whether ``url``'s host is this machine (a local model server's ``base_url``)."""
    from urllib.parse import urlsplit

    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return False
    return is_loopback(host)


def security_headers(*, csp: str | None = NOTHING_CSP,
                     frames: str = "DENY") -> list[tuple[str, str]]:
    """The headers every loopback HTTP answer carries. ``csp``: the page's own policy (the
    web console's, with its script nonce); None only for the workspace file server, whose pages
    are the user's own app, scripts and all. ``frames``: ``SAMEORIGIN`` for that server too
    (a workspace page may frame another workspace file, never a foreign site)."""
    headers = [("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff"),
               ("Referrer-Policy", "no-referrer"), ("X-Frame-Options", frames)]
    if csp is not None:
        headers.append(("Content-Security-Policy", csp))
    return headers


def header_lines(headers: list[tuple[str, str]]) -> str:
    """``Name: value\\r\\n`` for each header: for a responder that writes its HTTP head."""
    return "".join(f"{name}: {value}\r\n" for name, value in headers)


def _host_names(host: str) -> frozenset[str]:
    """How a client may name the loopback address ``host`` in ``Host`` (without the port)."""
    literal = f"[{host}]" if ":" in host else host
    names = {literal.lower(), "localhost"}
    if host == "localhost":  # bound to whatever localhost resolves to
        names |= {"127.0.0.1", "[::1]"}
    return frozenset(names)


def split_host(value: str) -> tuple[str, int | None]:
    """``name[:port]`` (``[v6]:port`` for IPv6) -> (lower-case name, port or None when none
    is given); a malformed one gives port -1, which matches nothing."""
    value = value.strip().lower()
    if value.startswith("["):
        name, sep, rest = value.partition("]")
        name += sep
        if not rest:
            return name, None
        if not rest.startswith(":"):
            return value, -1
        port = rest[1:]
    else:
        if value.count(":") > 1:  # an IPv6 address without brackets is not a Host
            return value, -1
        name, sep, port = value.partition(":")
        if not sep:
            return name, None
    return name, int(port) if port.isdigit() else -1


def loopback_refusal(host: str, port: int, headers: Any) -> tuple[int, str] | None:
    """Why a request to a server bound on the loopback address ``host`` and ``port`` is
    refused, as (HTTP status, message), or None to serve it: 421 unless exactly one ``Host``
    names ``host`` (or localhost) with that port, 403 when an ``Origin`` is sent that is not
    ``http://`` the same. ``headers``: (name, value) byte pairs, as ASGI and h11 give them.
    The one check for every loopback server of nyz (``nyz mcp serve --http`` and ``nyz serve``)."""
    names = _host_names(host)

    def allowed(value: str) -> bool:
        name, given = split_host(value)
        return name in names and (given if given is not None else 80) == port

    found: dict[bytes, list[bytes]] = {}
    for key, value in headers or []:
        found.setdefault(bytes(key).lower(), []).append(bytes(value))
    hosts = found.get(b"host", [])
    if len(hosts) != 1 or not allowed(hosts[0].decode("latin-1")):
        return 421, "the Host header does not name this server"
    origins = found.get(b"origin", [])
    if origins:
        origin = origins[0].decode("latin-1").strip().lower()
        scheme, sep, rest = origin.partition("://")
        if len(origins) != 1 or scheme != "http" or not sep or not allowed(rest):
            return 403, "requests from this Origin are not allowed"
    return None
