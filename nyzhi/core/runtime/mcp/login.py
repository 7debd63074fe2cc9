"""``nyz mcp login NAME``: authorization code + PKCE through a loopback redirect.

A one-shot HTTP listener on 127.0.0.1 (a free port) receives the browser's redirect with
the code; the authorization URL is opened in the user's browser (``webbrowser``) when there
is one, and printed either way so a headless user can open it elsewhere. The SDK provider
(``nyzhi.core.runtime.mcp.oauth``) does discovery, registration, PKCE and the token exchange; the
tokens land in mcp-auth.json. Imports the SDK: imported only by the login command.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from urllib.parse import parse_qs, urlsplit

import trio

from nyzhi.config.mcp_sources import ServerEntry
from nyzhi.loopback import header_lines, security_headers
from nyzhi.tools.workspace_http import read_request_line

LOGIN_TIMEOUT = 300.0  # seconds a person has to finish in the browser
_MAX_REQUEST = 16384
# The one loopback header set (nyzhi.loopback): the callback URL holds the authorization
# code, so no cache keeps it and no Referer carries it on.
_HEADERS = header_lines(security_headers()).encode()
_BODY = b"<html><body><p>nyz: login finished; you can close this window.</p></body></html>"
_PAGE = (b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n" + _HEADERS
         + b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(_BODY) + _BODY)
_MISSING = b"HTTP/1.1 404 Not Found\r\n" + _HEADERS + b"Content-Length: 0\r\nConnection: close\r\n\r\n"


class LoginError(Exception):
    """The login did not complete; the message says why."""


async def _one_callback(listener: trio.SocketListener) -> dict[str, str]:
    """The query of the first ``GET /callback`` the listener receives (others get 404)."""
    while True:
        stream = await listener.accept()
        async with stream:
            parts = await read_request_line(stream, limit=_MAX_REQUEST) or []
            target = urlsplit(parts[1]) if len(parts) >= 2 and parts[0] == "GET" else None
            if target is None or target.path != "/callback":
                with contextlib.suppress(trio.BrokenResourceError):
                    await stream.send_all(_MISSING)
                continue
            with contextlib.suppress(trio.BrokenResourceError):
                await stream.send_all(_PAGE)
            return {k: v[0] for k, v in parse_qs(target.query).items()}


def open_in_browser(url: str) -> bool:
    """Whether a browser was started for ``url``."""
    import webbrowser

    try:
        return webbrowser.open(url)
    except webbrowser.Error:
        return False


async def login(entry: ServerEntry, *, say: Callable[[str], None],
                env: Mapping[str, str] | None = None,
                open_url: Callable[[str], bool] = open_in_browser) -> int:
    """Log in to ``entry`` (an http server) and return how many tools it lists."""
    from mcp.shared.auth import AuthorizationCodeResult

    from nyzhi.auth.mcp_tokens import McpTokenStorage
    from nyzhi.core.runtime.mcp.client import connect, list_all
    from nyzhi.core.runtime.mcp.oauth import client_secret_of, provider_for

    url = entry.server.url
    secret_env = entry.server.client_secret_env
    secret = client_secret_of(entry.server, env)
    if secret_env and secret is None:
        raise LoginError(f"[mcp.servers.{entry.name}] client_secret_env: the variable "
                         f"{secret_env} is not set")
    [listener] = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listener.socket.getsockname()[1]
    query: dict[str, str] = {}
    got = trio.Event()

    async def serve_callback() -> None:
        query.update(await _one_callback(listener))
        got.set()

    async def redirect(auth_url: str) -> None:
        say(f"Open this URL to log in to {entry.name!r}:\n  {auth_url}")
        if await trio.to_thread.run_sync(open_url, auth_url):
            say("(opened in your browser)")

    async def callback() -> AuthorizationCodeResult:
        await got.wait()
        if "error" in query:
            raise LoginError(f"the authorization server refused: {query['error']}"
                             + (f" ({query['error_description']})" if "error_description" in query else ""))
        return AuthorizationCodeResult(code=query.get("code", ""), state=query.get("state"),
                                       iss=query.get("iss"))

    # A registered client is tied to the last login's redirect port: register anew.
    McpTokenStorage(entry.name, url, env).clear_client()
    auth = provider_for(entry.name, url, env=env, redirect_uri=f"http://127.0.0.1:{port}/callback",
                        redirect_handler=redirect, callback_handler=callback,
                        client_id=entry.server.client_id, client_secret=secret)
    async with listener, trio.open_nursery() as nursery:
        nursery.start_soon(serve_callback)
        with trio.move_on_after(LOGIN_TIMEOUT) as scope:
            async with contextlib.AsyncExitStack() as stack:
                client = await connect(stack, entry, _Null(), trio.Event(), auth=auth)
                tools = await list_all(client.list_tools, "tools")
        nursery.cancel_scope.cancel()
    if scope.cancelled_caught:
        raise LoginError(f"no login within {LOGIN_TIMEOUT:g} s")
    return len(tools)


class _Null:
    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


def http_entry(name: str) -> tuple[ServerEntry | None, str]:
    """The configured http server ``name`` (config, or an approved ``.mcp.json``), or why not."""
    import os

    from nyzhi.config.mcp_sources import declared_servers
    from nyzhi.config.project_trust import load_trusted
    from nyzhi.config.schema import McpStdioServer

    loaded, _ = load_trusted(None, approve=False)
    entries = {e.name: e for e in declared_servers(loaded.config, loaded.workspace.root, os.environ)}
    entry = entries.get(name)
    if entry is None:
        return None, f"no MCP server named {name!r} (configured: {', '.join(entries) or 'none'})"
    if isinstance(entry.server, McpStdioServer):
        return None, f"MCP server {name!r} is a stdio server: OAuth applies to url servers only"
    return entry, ""


async def login_command(name: str, say: Callable[[str], None]) -> tuple[bool, str]:
    """``nyz mcp login NAME``: (succeeded, the line to print)."""
    from nyzhi.core.runtime.server_supervision import leaf_error

    entry, why = http_entry(name)
    if entry is None:
        return False, why
    try:
        tools = await login(entry, say=say)
    except LoginError as exc:
        return False, f"login to {name!r} failed: {exc}"
    except Exception as exc:  # the SDK's flow errors, an unreachable server, refused metadata
        error = leaf_error(exc)
        return False, f"login to {name!r} failed: {type(error).__name__}: {error}"
    return True, f"logged in to {name!r} ({tools} tools)"


def logout(name: str, env: Mapping[str, str] | None = None) -> bool:
    """``nyz mcp logout NAME``: forget the stored login; whether there was one."""
    from nyzhi.auth.mcp_tokens import forget

    return forget(name, env)
