"""``nyz acp``: the ACP agent's methods, and serving them over stdin/stdout.

``AcpAgent`` answers the client's methods (``initialize``, ``session/new``, ``session/load``,
``session/resume``, ``session/list``, ``session/close``, ``session/prompt``,
``session/set_mode``, and the ``session/cancel`` notification); each
session is an ``AcpSession`` with its own runtime, and several run at once in this process.
``serve_stdio`` makes stdout protocol-only: the real stdout is kept for messages and file
descriptor 1 is pointed at stderr, so nothing else printed (a library's warning, a notice)
can corrupt the stream. When the client closes stdin (or the process gets SIGTERM, SIGHUP or
SIGINT) every session is closed: its runtime shuts down (turns cancelled, tool subprocesses
killed, the session saved) before we exit.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import trio

from nyzhi import __version__
from nyzhi.acp import schema as s
from nyzhi.acp.login import LOGIN, LOGIN_METHOD, login_needed
from nyzhi.acp.session import AcpSession
from nyzhi.core.protocol import Session, describe_error
from nyzhi.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, Connection, JsonLines, RpcError
from nyzhi.signals import stop_on_signal

RESOURCE_NOT_FOUND = -32002  # ACP's codes beside JSON-RPC's own
AUTH_REQUIRED = -32000


def _error_answer(exc: Exception) -> RpcError:
    """A method's failure as its answer: parameters that do not fit name the field (-32602),
    anything else is one line (-32603, ``describe_error``'s), never a traceback."""
    if isinstance(exc, RpcError):
        return exc
    if isinstance(exc, s.ParamsError):
        return RpcError(INVALID_PARAMS, str(exc))
    text = describe_error(exc)
    return RpcError(INTERNAL_ERROR, text.splitlines()[0] if text else type(exc).__name__)


class AcpAgent:
    """The methods of one connection. ``defaults``: the ``RuntimeOptions`` fields every
    session starts from (``nyz -p PROVIDER -m MODEL -y TRUST acp``)."""

    def __init__(self, defaults: dict[str, Any] | None = None) -> None:
        self.defaults = defaults or {}
        self.fs = s.FsCapabilities()
        self.terminal = False  # the client offers terminal/* (bash runs in its terminals)
        self.sessions: dict[str, AcpSession] = {}
        self.conn: Connection | None = None
        self._nursery: trio.Nursery | None = None
        self._reading = trio.CancelScope()

    def methods(self) -> dict[str, Any]:
        return {
            "initialize": self.initialize,
            "authenticate": self.authenticate,
            "session/new": self.new_session,
            "session/load": self.load_session,
            "session/resume": self.resume_session,
            "session/list": self.list_sessions,
            "session/close": self.close_session,
            "session/prompt": self.prompt,
            "session/set_mode": self.set_mode,
        }

    def notifications(self) -> dict[str, Any]:
        return {"session/cancel": self.cancel}

    async def serve(self, send: trio.abc.SendStream, receive: trio.abc.ReceiveStream) -> None:
        """Answer the client on these streams until it closes its end; then close every
        session (shielded: a session is saved and its processes are gone before we return)."""
        self.conn = Connection(send, receive, JsonLines(), methods=self.methods(),
                               notifications=self.notifications(), errors=_error_answer,
                               redact=self._redact, peer="the client", raise_when_gone=False)
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            with self._reading:
                await self.conn.serve()
            for session in list(self.sessions.values()):
                session.close()

    def stop(self) -> None:
        """End as if the client had closed its end (a signal from the editor)."""
        self._reading.cancel()

    async def _keep(self, session: AcpSession, *, task_status: Any) -> None:
        """Run one session. Failing to open raises to ``session/new`` (its error answer); a
        session that fails later ends alone, said in one line on stderr, and the connection
        and the other sessions go on."""
        try:
            await session.run(task_status=task_status)
        except Exception as exc:
            if not session.started:
                raise
            from nyzhi.core.protocol import describe_error

            sys.stderr.write(f"nyz acp: session {session.id} ended: "
                             f"{self._redact(describe_error(exc))}\n")
        finally:
            self.sessions.pop(session.id, None)
            session.ended.set()

    def _redact(self, text: str) -> str:
        for session in self.sessions.values():
            redactor = Session(session.rt).redactor if session.rt is not None else None
            if redactor is not None:
                text = redactor.redact(text)
        return text

    # ---- methods ------------------------------------------------------------------------

    async def initialize(self, params: Any) -> Any:
        request = s.read_params(params, s.InitializeParams, "initialize")
        self.fs = request.client_capabilities.fs
        self.terminal = request.client_capabilities.terminal
        return s.write(s.InitializeResult(
            protocol_version=min(request.protocol_version, s.PROTOCOL_VERSION)
            if request.protocol_version >= 1 else s.PROTOCOL_VERSION,
            agent_capabilities=s.AgentCapabilities(
                load_session=True,
                prompt_capabilities=s.PromptCapabilities(embedded_context=True),
                mcp_capabilities=s.McpCapabilities(http=True),
                session_capabilities=s.SessionCapabilities(
                    list=s.Supported(), resume=s.Supported(), close=s.Supported()),
            ),
            agent_info=s.Implementation("nyz", __version__, "nyzhi"),
            auth_methods=(LOGIN,) if await self._login_needed() else (),
        ))

    async def _login_needed(self) -> bool:
        return await trio.to_thread.run_sync(
            login_needed, Path.cwd(), self.defaults.get("provider"))

    async def authenticate(self, params: Any) -> Any:
        """Logging in happens in a terminal (``nyz login``): this checks it was done."""
        request = s.read_params(params, s.AuthenticateParams, "authenticate")
        if request.method_id != LOGIN_METHOD:
            raise s.ParamsError(f"authenticate params: 'methodId' must be {LOGIN_METHOD!r}, "
                                f"found {request.method_id!r}")
        if await self._login_needed():
            raise RpcError(AUTH_REQUIRED, "no model provider key found yet: run `nyz login` "
                                          "in a terminal, then try again")
        return {}

    async def _open(self, cwd: str, servers: tuple[s.McpServerParams, ...], method: str,
                    session: str | None = None, *, replayed: bool = True) -> AcpSession:
        from nyzhi.core.runtime.runtime import RuntimeOptions

        path = Path(cwd)
        if not path.is_absolute():
            raise s.ParamsError(f"{method} params: 'cwd' must be an absolute path, found {cwd!r}")
        if not await trio.Path(path).is_dir():
            raise s.ParamsError(f"{method} params: 'cwd' {cwd!r} is not a directory")
        replay: list[Any] = []
        if session is not None:
            replay = await trio.to_thread.run_sync(_recorded_events, session)
            if not replayed:  # session/resume: found, but its history is not sent again
                replay = []
        options = RuntimeOptions(cwd=path, interactive=True, session=session, **self.defaults)
        assert self.conn is not None and self._nursery is not None
        acp_session = AcpSession(self.conn, options, self.fs, servers, replay, self.terminal)
        await self._nursery.start(self._keep, acp_session)
        self.sessions[acp_session.id] = acp_session
        await acp_session.send(acp_session.commands())
        return acp_session

    async def new_session(self, params: Any) -> Any:
        request = s.read_params(params, s.NewSessionParams, "session/new")
        session = await self._open(request.cwd, request.mcp_servers, "session/new")
        return s.write(s.NewSessionResult(session.id, session.modes()))

    async def load_session(self, params: Any) -> Any:
        request = s.read_params(params, s.LoadSessionParams, "session/load")
        if request.session_id in self.sessions:
            raise RpcError(-32602, f"session {request.session_id} is already open")
        session = await self._open(request.cwd, request.mcp_servers, "session/load",
                                   request.session_id)
        return s.write(s.LoadSessionResult(session.modes()))

    async def resume_session(self, params: Any) -> Any:
        """``session/resume``: the saved session goes on, without its history sent again
        (unlike ``session/load``)."""
        request = s.read_params(params, s.ResumeSessionParams, "session/resume")
        if request.session_id in self.sessions:
            raise RpcError(-32602, f"session {request.session_id} is already open")
        session = await self._open(request.cwd, request.mcp_servers, "session/resume",
                                   request.session_id, replayed=False)
        return s.write(s.LoadSessionResult(session.modes()))

    async def list_sessions(self, params: Any) -> Any:
        """``session/list``: the saved sessions, newest first, ``LIST_PAGE`` a page (the
        cursor is the next page's offset), only those of ``cwd`` when it is given."""
        request = s.read_params(params, s.ListSessionsParams, "session/list")
        if request.cwd is not None and not Path(request.cwd).is_absolute():
            raise s.ParamsError(f"session/list params: 'cwd' must be an absolute path, "
                                f"found {request.cwd!r}")
        start = 0
        if request.cursor is not None:
            if not request.cursor.isdigit():
                raise s.ParamsError(f"session/list params: 'cursor' {request.cursor!r} is not "
                                    "one this agent gave")
            start = int(request.cursor)
        metas = await trio.to_thread.run_sync(_saved_sessions, request.cwd)
        page = metas[start:start + LIST_PAGE]
        more = start + LIST_PAGE < len(metas)
        return s.write(s.ListSessionsResult(
            tuple(s.SessionInfo(m.id, m.cwd, m.title or None, m.updated or None) for m in page),
            str(start + LIST_PAGE) if more else None))

    async def close_session(self, params: Any) -> Any:
        """``session/close``: its turn cancelled, its runtime shut down (the session saved,
        its processes gone) before the answer."""
        request = s.read_params(params, s.SessionIdParams, "session/close")
        session = self._session(request.session_id)
        await session.cancel()
        session.close()
        await session.ended.wait()
        return {}

    def _session(self, session_id: str) -> AcpSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise RpcError(RESOURCE_NOT_FOUND, f"no open session {session_id!r}")
        return session

    async def prompt(self, params: Any) -> Any:
        request = s.read_params(params, s.PromptParams, "session/prompt")
        reason = await self._session(request.session_id).prompt(request.prompt)
        return s.write(s.PromptResult(reason))

    async def set_mode(self, params: Any) -> Any:
        request = s.read_params(params, s.SetModeParams, "session/set_mode")
        self._session(request.session_id).set_mode(request.mode_id)
        return {}

    async def cancel(self, params: Any) -> None:
        request = s.read_params(params, s.SessionIdParams, "session/cancel")
        session = self.sessions.get(request.session_id)
        if session is not None:
            await session.cancel()


LIST_PAGE = 50


def _saved_sessions(cwd: str | None) -> list[Any]:
    """Saved sessions newest first (those of ``cwd`` when given), each with an absolute cwd."""
    from nyzhi.core.protocol.saved import saved_sessions

    return [m for m in saved_sessions(cwd) if m.cwd and os.path.isabs(m.cwd)]


def _recorded_events(session_id: str) -> list[Any]:
    """A saved session's recorded events (what ``session/load`` replays); one line naming
    the session when it cannot be found or read."""
    from nyzhi.core.protocol.saved import SessionError, recorded_events

    try:
        return recorded_events(session_id)
    except SessionError as exc:
        raise RpcError(RESOURCE_NOT_FOUND, str(exc)) from None


async def serve_stdio(defaults: dict[str, Any] | None = None) -> int:
    """Serve one client on this process's stdin and stdout."""
    protocol_out = os.dup(1)
    os.dup2(2, 1)  # anything else written to stdout goes to stderr
    send = trio.lowlevel.FdStream(protocol_out)
    receive = trio.lowlevel.FdStream(os.dup(0))
    agent = AcpAgent(defaults)
    async with send, receive, trio.open_nursery() as nursery:
        # An editor closing may signal rather than close stdin: the sessions end the same
        # way (turns cancelled, subprocesses killed, sessions saved) before the process exits.
        nursery.start_soon(stop_on_signal, lambda _signum: agent.stop())
        await agent.serve(send, receive)
        nursery.cancel_scope.cancel()
    return 0

