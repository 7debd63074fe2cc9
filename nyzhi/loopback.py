"""What every loopback responder of nyz shares: which hosts are this machine, and the headers
each HTTP answer carries.

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
