"""``/web`` in the console: the console's own runtime served to a browser, in process.

The same server as ``nyz serve`` (``nyzhi.web.server``: the token, the Host and Origin checks,
the security headers, the bounded viewers) on 127.0.0.1 and a free port, with one session:
a ``WebSession`` on the runtime the console already runs, which the console feeds with its
events (what it had kept from before ``/web``, then each live one, from its one event pump;
``record``). Everything runs in the nursery the caller gives (the console's, per runtime):
when that closes, the listener and every page's connection close with it; a page that goes
away ends only its own connection.

``nyz`` (``nyzhi.cli``) hands this function to the console: front ends import none of each
other, so the console gets "serve this runtime on the web" as a callable from above.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio

from nyzhi import records
from nyzhi.core.protocol import events as ev
from nyzhi.web import protocol as p
from nyzhi.web.server import Hub, ServeOptions, Server
from nyzhi.web.session import WebSession


@records.define
class ServedRuntime:
    """A runtime being served: the URL to open (its token in the fragment, as ``nyz serve``
    prints it) and ``record``, which takes each event of the runtime to show."""

    url: str
    session: WebSession
    server: Server

    def record(self, event: ev.Event) -> None:
        self.session.record(event)


class _OneSession(Hub):
    """A hub of the one session given: a page cannot open another runtime here."""

    async def open(self, *, first: bool = False) -> WebSession:
        raise p.ProtocolError("this server shows the console's session only; `nyz serve` "
                              "runs new ones")


class _Reporting(Server):
    """The server, its reports (refused tokens) said through ``say`` instead of stderr: the
    console owns the terminal."""

    def __init__(self, options: ServeOptions, hub: Hub, say: Callable[[str], None]) -> None:
        super().__init__(options, hub)
        self.say = say

    def report(self, line: str) -> None:
        self.say(f"web: {line}")


async def serve_runtime(rt: Any, nursery: trio.Nursery,
                        say: Callable[[str], None]) -> ServedRuntime:
    """Serve ``rt`` on loopback until ``nursery`` closes; the URL and the session to feed.

    The session has no events until the caller records them: the caller's backlog first,
    then its live events, with no checkpoint between (so none is missed or doubled)."""
    options = ServeOptions(port=0)  # 127.0.0.1, a new random token
    options.check()
    session = WebSession(rt, nursery)
    session.say = lambda line: say("web: dropped a page that stopped reading")
    hub = _OneSession(nursery, None, options)
    hub.sessions[session.session_id] = session
    hub.first = session
    listeners = await trio.open_tcp_listeners(0, host=options.host)
    server = _Reporting(options, hub, say)
    server.port = listeners[0].socket.getsockname()[1]
    nursery.start_soon(trio.serve_listeners, server.handle, listeners)
    url = f"http://{options.host}:{server.port}/#token={options.token}"
    return ServedRuntime(url, session, server)
