"""Pages served over HTTP on loopback, for the tests and benchmarks of the tools that fetch or
browse (``web_fetch``, the browser tools): a real socket a real client connects to, in a
trio nursery, with no web framework.

    url = await serve_pages(nursery, {"/": ("text/html", b"<h1>Hi</h1>")})
    # GET {url}/ answers the page; any other path 404 "not found"

``pages`` may instead be a function of the request path (to record hits, or to notice that a
page's script fetched something): a page, or None for a 404.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping

import trio

Page = tuple[str, bytes]  # (content type, body)
Pages = Mapping[str, Page] | Callable[[str], Page | None]

NOT_FOUND: Page = ("text/plain", b"not found")


async def read_head(stream: trio.abc.ReceiveStream) -> bytes | None:
    """A request's bytes up to the blank line that ends its head (and whatever of the body
    came with them); None when the client closed first."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = await stream.receive_some(65536)
        if not chunk:
            return None
        data += chunk
    return data


async def _answer(pages: Pages, stream: trio.SocketStream) -> None:
    data = await read_head(stream)
    if data is None:
        return
    path = data.split(b" ")[1].decode()
    page = pages.get(path) if isinstance(pages, Mapping) else pages(path)
    status = b"200 OK" if page is not None else b"404 Not Found"
    ctype, body = page if page is not None else NOT_FOUND
    head = (b"HTTP/1.1 " + status + f"\r\nContent-Type: {ctype}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode())
    try:
        await stream.send_all(head + body)
        await stream.aclose()
    except trio.BrokenResourceError:
        pass  # the client went away first (a browser that was killed, a capped read)


async def serve_pages(nursery: trio.Nursery, pages: Pages) -> str:
    """Serve ``pages`` on 127.0.0.1 at a free port until ``nursery`` is cancelled; the base
    URL, ``http://127.0.0.1:PORT`` (no trailing slash)."""
    listeners = await nursery.start(functools.partial(
        trio.serve_tcp, functools.partial(_answer, pages), 0, host="127.0.0.1"))
    return f"http://127.0.0.1:{listeners[0].socket.getsockname()[1]}"
