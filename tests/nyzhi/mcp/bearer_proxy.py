"""A loopback reverse proxy that adds ``nyz mcp serve --http``'s bearer token to each request.

The conformance suite's server scenarios connect with no credentials, and ``nyz mcp serve
--http`` always wants its token (``--token``). This proxy is the smallest thing between them:
it forwards each request as is (method, path, body, headers, Origin), adds
``Authorization: Bearer <token>``, and streams the answer back (SSE included). A ``Host``
or ``Origin`` naming the proxy (127.0.0.1 or localhost, its port) is rewritten to nyz's port,
as any reverse proxy does; any other (the suite's DNS-rebinding scenario sends foreign ones)
goes through untouched, so nyz's loopback guard is what is tested.

Usage: ``python bearer_proxy.py UPSTREAM_URL TOKEN``; prints ``listening on URL`` once bound.
"""

from __future__ import annotations

import functools
import sys
from urllib.parse import urlsplit

import httpx
import trio

_HOP = {b"connection", b"keep-alive", b"transfer-encoding", b"content-length", b"host",
        b"authorization", b"origin"}


def _to_upstream(value: str, port: int, upstream_port: int) -> str:
    """``value`` (a Host, or an Origin) naming this proxy, as naming nyz; anything else as is."""
    for name in ("127.0.0.1", "localhost"):
        for prefix in ("", "http://"):
            if value == f"{prefix}{name}:{port}":
                return f"{prefix}{name}:{upstream_port}"
    return value


def proxy_app(upstream: str, token: str, own_port: list[int]):
    target = urlsplit(upstream)
    client = httpx.AsyncClient(timeout=httpx.Timeout(600.0))

    async def app(scope: dict, receive, send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in _HOP]
        given = dict(scope["headers"])
        for name in (b"host", b"origin"):
            if name in given:
                value = _to_upstream(given[name].decode("latin-1"), own_port[0], target.port)
                headers.append((name, value.encode("latin-1")))
        headers.append((b"authorization", f"Bearer {token}".encode()))
        url = f"{target.scheme}://{target.netloc}{scope['path']}"
        if scope.get("query_string"):
            url += "?" + scope["query_string"].decode("latin-1")
        request = client.build_request(scope["method"], url, headers=headers, content=body)
        response = await client.send(request, stream=True)
        try:
            await send({"type": "http.response.start", "status": response.status_code,
                        "headers": [(k, v) for k, v in response.headers.raw
                                    if k.lower() not in _HOP]})
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        finally:
            await response.aclose()

    return app


async def main(upstream: str, token: str) -> None:
    from hypercorn.config import Config
    from hypercorn.trio import serve

    own_port: list[int] = [0]
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = config.errorlog = None
    async with trio.open_nursery() as nursery:
        bound = await nursery.start(functools.partial(
            serve, proxy_app(upstream, token, own_port), config))
        url = bound[0]
        own_port[0] = urlsplit(url).port or 0
        print(f"listening on {url}", flush=True)


if __name__ == "__main__":
    trio.run(main, sys.argv[1], sys.argv[2])
