"""The client the official MCP conformance suite runs: nyz's own MCP client, nothing else.

``conformance client --command "python -m nyzhi.testing.mcp_conformance_client"`` starts this
with the URL of the suite's server as the last argument and the scenario's name in
``MCP_CONFORMANCE_SCENARIO``. Every scenario goes through the code ``nyz`` uses:

* ``nyzhi.core.runtime.mcp.client.connect`` (the transport, the client info, the elicitation
  callback of ``nyzhi.core.runtime.mcp.elicit`` with the headless ``[mcp] elicitation = "defaults"``
  policy);
* for ``auth/*``: ``nyz mcp login``'s flow (``nyzhi.core.runtime.mcp.login.login``: discovery,
  registration, PKCE, the loopback redirect), with a "browser" that simply follows the
  authorization server's redirects, as a person clicking "allow" would; then a second
  connection that, like any later ``nyz`` session, only uses the stored tokens
  (``nyzhi.core.runtime.mcp.oauth``) to list the tools and call each; when it says a login is
  needed (a tool wanting a wider scope), the login again, as the user would.

Tokens go to ``$XDG_DATA_HOME/nyzhi/mcp-auth.json`` of a temporary directory, never the
user's. Exit 0 when every step worked; otherwise one line on stderr and exit 1.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from typing import Any

import trio

NAME = "conformance"
SECRET_ENV = "NYZ_CONFORMANCE_CLIENT_SECRET"


def follow_redirects(url: str) -> bool:
    """Open ``url`` the way a browser whose user clicks "allow" would: follow the redirects
    (to the loopback callback that ``login`` listens on)."""
    import httpx

    with httpx.Client(follow_redirects=True, timeout=30) as http:
        http.get(url)
    return True


async def _tools(client: Any) -> list[Any]:
    from nyzhi.core.runtime.mcp.client import list_all

    return await list_all(client.list_tools, "tools")


async def _session(entry: Any, work: Any) -> None:
    """Connect as a later nyz session would, then ``work(client)``."""
    from nyzhi.core.runtime.mcp.client import connect
    from nyzhi.core.runtime.mcp.elicit import DEFAULTS, callback_for

    async with contextlib.AsyncExitStack() as stack:
        client = await connect(stack, entry, sys.stderr, trio.Event(),
                               elicit=callback_for(entry.name, None, DEFAULTS))
        await work(client)


async def _call_each(client: Any) -> None:
    """List the tools and call each one (with the arguments the suite's tools take)."""
    for tool in await _tools(client):
        props = (tool.input_schema or {}).get("properties") or {}
        args = {k: 1 for k, v in props.items() if isinstance(v, dict) and v.get("type") == "number"}
        await client.call_tool(tool.name, args)


async def run(url: str, scenario: str) -> None:
    from nyzhi.config.mcp_sources import ServerEntry
    from nyzhi.config.schema import McpHttpServer

    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    secret_env = None
    if context.get("client_secret"):
        # a pre-registered confidential client: the secret reaches nyz as a user's would,
        # through the variable ``client_secret_env`` names
        secret_env = SECRET_ENV
        os.environ[SECRET_ENV] = context["client_secret"]
    entry = ServerEntry(NAME, McpHttpServer(url=url, client_id=context.get("client_id"),
                                            client_secret_env=secret_env))
    if not scenario.startswith("auth/"):
        return await _session(entry, _call_each)
    from nyzhi.core.runtime.mcp.login import login
    from nyzhi.core.runtime.mcp.oauth import NeedsLogin
    from nyzhi.core.runtime.server_supervision import leaf_error

    async def log_in() -> None:
        await login(entry, say=lambda line: print(line, file=sys.stderr), open_url=follow_redirects)

    await log_in()
    try:
        await _session(entry, _call_each)
    except Exception as exc:
        # what a user does when a session says "needs a login" (a tool wanting a wider
        # scope): run `nyz mcp login` again, then start over
        if not isinstance(leaf_error(exc), NeedsLogin):
            raise
        await log_in()
        await _session(entry, _call_each)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        print("usage: mcp_conformance_client URL (scenario in MCP_CONFORMANCE_SCENARIO)",
              file=sys.stderr)
        return 2
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    with tempfile.TemporaryDirectory(prefix="nyz-conformance-") as home:
        os.environ["XDG_DATA_HOME"] = home
        try:
            trio.run(run, argv[-1], scenario)
        except Exception as exc:
            from nyzhi.core.runtime.server_supervision import leaf_error

            error = leaf_error(exc)
            print(f"{scenario}: {type(error).__name__}: {error}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
