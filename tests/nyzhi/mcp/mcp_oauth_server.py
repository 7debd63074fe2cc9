"""A loopback OAuth authorization server and the MCP resource it protects, for the tests.

    python mcp_oauth_server.py --port P [--hostile] [--open]

Serves, on 127.0.0.1:P: ``/mcp`` (an MCP server with one tool, ``whoami``, that answers
401 + ``WWW-Authenticate: Bearer resource_metadata=...`` without a valid bearer token),
the protected-resource metadata, RFC 8414 authorization server metadata, dynamic client
registration, ``/authorize`` (approves at once: redirects to the client's loopback
redirect with a code), ``/token`` (authorization code with PKCE S256 checked, and refresh)
and ``/admin/revoke``, ``/admin/expire-access`` and ``/admin/stats`` for the tests. ``--hostile``: the metadata names an
authorization server on another host over plain HTTP; ``--open``: ``/mcp`` needs no token
(the plain server of ``benchmarks/mcp_bench.py``); ``--confidential basic|post``: no dynamic
registration, one pre-registered confidential client (``CLIENT_ID``/``CLIENT_SECRET``) that
must authenticate at ``/token`` that way (the metadata offers only it); ``--legacy same|cross``:
the 2025-03-26 layout, no protected-resource metadata, the authorization server metadata at
the root with an issuer at ``/oauth`` of this origin, or on another origin. Prints "ready"
once bound.
"""

from __future__ import annotations

import argparse
import base64
import functools
import hashlib
import secrets

import trio
from mcp.server.mcpserver import MCPServer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

CLIENT_ID = "pre-registered-client"
CLIENT_SECRET = "conf-secret-Zq81xPw3"
STATE: dict = {"client_auth": [], "codes": {}, "access": set(), "refresh": set(), "clients": {}, "grants": [],
               "resources": []}


def build(port: int, hostile: bool, open_: bool = False, confidential: str | None = None,
          legacy: str | None = None):
    base = f"http://127.0.0.1:{port}"
    issuer = base
    if legacy == "same":
        issuer = f"{base}/oauth"
    elif legacy == "cross":
        issuer = f"http://localhost:{port}/oauth"
    mcp = MCPServer("oauth-helper")

    @mcp.tool()
    def whoami() -> str:
        """Who the token belongs to."""
        return "alice"

    inner = mcp.streamable_http_app()

    async def prm(request: Request) -> Response:
        server = "http://192.0.2.7:8080" if hostile else base
        return JSONResponse({"resource": f"{base}/mcp", "authorization_servers": [server]})

    async def asm(request: Request) -> Response:
        meta = {
            "issuer": issuer, "authorization_endpoint": f"{base}/authorize",
            "token_endpoint": f"{base}/token", "registration_endpoint": f"{base}/register",
            "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": ["none"],
        }
        if confidential:
            del meta["registration_endpoint"]
            meta["token_endpoint_auth_methods_supported"] = [f"client_secret_{confidential}"]
        return JSONResponse(meta)

    def client_auth(request: Request, form) -> str | None:
        """How the pre-registered client authenticated ("basic", "post"), or None."""
        header = request.headers.get("authorization", "")
        if header.startswith("Basic "):
            pair = base64.b64decode(header[6:]).decode()
            if pair == f"{CLIENT_ID}:{CLIENT_SECRET}" and "client_secret" not in form:
                return "basic"
        elif form.get("client_id") == CLIENT_ID and form.get("client_secret") == CLIENT_SECRET:
            return "post"
        return None

    async def register(request: Request) -> Response:
        body = await request.json()
        client_id = "client-" + secrets.token_hex(4)
        STATE["clients"][client_id] = body
        return JSONResponse({**body, "client_id": client_id}, status_code=201)

    async def authorize(request: Request) -> Response:
        q = request.query_params
        assert q["code_challenge_method"] == "S256"
        code = secrets.token_urlsafe(16)
        STATE["codes"][code] = (q["code_challenge"], q["redirect_uri"], q.get("resource"))
        return RedirectResponse(f"{q['redirect_uri']}?code={code}&state={q['state']}", 302)

    def issue() -> Response:
        access, refresh = "at-" + secrets.token_urlsafe(24), "rt-" + secrets.token_urlsafe(24)
        STATE["access"].add(access)
        STATE["refresh"].add(refresh)
        return JSONResponse({"access_token": access, "token_type": "Bearer", "expires_in": 3600,
                             "refresh_token": refresh})

    async def token(request: Request) -> Response:
        form = await request.form()
        STATE["grants"].append(form["grant_type"])
        STATE["resources"].append(form.get("resource"))
        if confidential:
            way = client_auth(request, form)
            STATE["client_auth"].append(way)
            if way != confidential:
                return JSONResponse({"error": "invalid_client"}, status_code=401)
        if form["grant_type"] == "authorization_code":
            challenge, redirect, _ = STATE["codes"].pop(form["code"], (None, None, None))
            digest = hashlib.sha256(form["code_verifier"].encode()).digest()
            if challenge != base64.urlsafe_b64encode(digest).rstrip(b"=").decode():
                return JSONResponse({"error": "invalid_grant"}, status_code=400)
            return issue()
        if form["grant_type"] == "refresh_token" and form["refresh_token"] in STATE["refresh"]:
            STATE["refresh"].discard(form["refresh_token"])
            return issue()
        return JSONResponse({"error": "invalid_grant"}, status_code=400)

    async def revoke(request: Request) -> Response:
        STATE["access"].clear()
        STATE["refresh"].clear()
        return JSONResponse({})

    async def expire_access(request: Request) -> Response:
        STATE["access"].clear()  # refresh tokens stay good
        return JSONResponse({})

    async def stats(request: Request) -> Response:
        return JSONResponse({"grants": STATE["grants"], "resources": STATE["resources"],
                             "clients": len(STATE["clients"]),
                             "client_auth": STATE["client_auth"]})

    async def protected(scope, receive, send):
        headers = dict(scope.get("headers", []))
        auth = headers.get(b"authorization", b"").decode()
        if not open_ and auth.removeprefix("Bearer ") not in STATE["access"]:
            meta = f"{base}/.well-known/oauth-protected-resource/mcp"
            challenge = "Bearer" if legacy else f'Bearer resource_metadata="{meta}"'
            await send({"type": "http.response.start", "status": 401, "headers": [
                (b"www-authenticate", challenge.encode()),
                (b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": b'{"error":"invalid_token"}'})
            return
        await inner(scope, receive, send)

    routes = [] if legacy else [Route("/.well-known/oauth-protected-resource/mcp", prm)]
    app = Starlette(routes=[
        *routes,
        Route("/.well-known/oauth-authorization-server", asm),
        *([] if confidential else [Route("/register", register, methods=["POST"])]),
        Route("/authorize", authorize),
        Route("/token", token, methods=["POST"]),
        Route("/admin/revoke", revoke, methods=["POST"]),
        Route("/admin/stats", stats),
        Route("/admin/expire-access", expire_access, methods=["POST"]),
    ])

    async def dispatch(scope, receive, send):
        if scope["type"] == "lifespan" or scope.get("path", "").startswith("/mcp"):
            target = inner if scope["type"] == "lifespan" else protected
            await target(scope, receive, send)
        else:
            await app(scope, receive, send)

    return dispatch


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--hostile", action="store_true")
    parser.add_argument("--open", action="store_true", help="no login needed (benchmarks)")
    parser.add_argument("--confidential", choices=["basic", "post"])
    parser.add_argument("--legacy", choices=["same", "cross"])
    args = parser.parse_args()
    from hypercorn.config import Config
    from hypercorn.trio import serve

    config = Config()
    config.bind = [f"127.0.0.1:{args.port}"]
    config.accesslog = None
    config.errorlog = None
    async with trio.open_nursery() as nursery:
        await nursery.start(functools.partial(serve, build(args.port, args.hostile, args.open,
                                                                args.confidential, args.legacy), config))
        print("ready", flush=True)


if __name__ == "__main__":
    trio.run(main)
