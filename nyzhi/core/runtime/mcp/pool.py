"""One pool of MCP connections per runtime, shared by every agent in its tree.

``McpPool`` owns ``/mcp`` (see ``actor.py``), one ``ServerLink`` per server (its status and,
while connected, its SDK client) and the ``mcp__SERVER__TOOL`` tools it registers into the
runtime's tool registry. Subagents get fenced views of the same registry, so five agents
using one server share one connection and one server process.

Statuses: ``starting`` (connecting, or restarting after a crash), ``connected``, ``failed``
(with the reason: past its restart intensity, or a command that cannot run), ``untrusted``
(a ``.mcp.json`` server nobody approved), ``needs login`` (an OAuth server with no usable
login: ``nyz mcp login NAME``).
"""

from __future__ import annotations

import contextlib
import fnmatch
import re
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import trio

import actors
from nyzhi import records
from nyzhi.config import paths
from nyzhi.config.mcp_sources import ServerEntry
from nyzhi.core.runtime.mcp.actor import Dropped, server_spec
from nyzhi.core.runtime.mcp.trust import TrustStore
from nyzhi.core.runtime.server_supervision import Intensity, PoolSupervisor, StatusLink, gave_up
from nyzhi.tools.base import Permission, Tool, ToolContext, ToolResult

STATUSES = ("starting", "connected", "failed", "untrusted", "needs login")
DEFAULT_STARTUP_TIMEOUT = 30.0
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_.-]")

# (entry) -> approved? Asked once for a .mcp.json server that has no recorded approval.
TrustAsker = Callable[[ServerEntry], Awaitable[bool]]
Publish = Callable[[Any], Awaitable[None]]


def tool_name(server: str, tool: str) -> str:
    """``mcp__SERVER__TOOL`` with characters a provider rejects replaced by ``_``."""
    return _NAME_CHARS.sub("_", f"mcp__{server}__{tool}")[:128]


def allow_listed(server: str, name: str, globs: Sequence[str]) -> str | None:
    """Why the server's ``allow_tools`` approves tool ``name`` without asking, or None. A
    glob only ever covers this server's tools: a bare one (``"git_*"``) is read as
    ``mcp__SERVER__git_*``, and one naming another server's tools matches nothing."""
    prefix = f"mcp__{server}__"
    for glob in globs:
        full = glob if glob.startswith("mcp__") else prefix + glob
        if full.startswith(prefix) and fnmatch.fnmatchcase(name.lower(), full.lower()):
            return f"[mcp.servers.{server}] allow_tools pattern {glob!r}"
    return None


class McpUnavailable(Exception):
    """A call or listing for a server that is not connected; the message says why."""


@records.frozen
class McpResource:
    server: str
    uri: str
    name: str
    description: str = ""
    mime_type: str | None = None


@records.frozen
class McpPrompt:
    server: str
    name: str
    description: str = ""
    arguments: tuple[str, ...] = ()


@records.frozen
class ServerStatus:
    name: str
    status: str
    reason: str
    tools: int
    source: str
    target: str  # the command line or the URL


class ServerLink(StatusLink):
    """One server's shared state: written by its connection actor, read by callers."""

    def __init__(self, entry: ServerEntry, log_dir: Path) -> None:
        super().__init__(log_dir / f"{_NAME_CHARS.sub('_', entry.name)}.log")
        self.entry = entry
        self.name = entry.name
        self.tools: list[Any] = []  # the server's allowed mcp Tool objects
        self.instructions = ""

    # -- written by the connection actor -------------------------------------------------
    def mark_starting(self, restarts: int) -> None:
        if self.status not in ("failed", "untrusted", "needs login"):
            self._set("starting", f"restart {restarts}" if restarts else "")

    def mark_connected(self, client: Any, tools: list[Any]) -> None:
        self.client, self.tools = client, tools
        self._set("connected")

    def mark_dropped(self) -> None:
        self.client = None
        self._set("starting", "the connection dropped; restarting")

    def mark_down(self) -> None:
        """The connection actor's incarnation ended: it is restarted unless its supervisor
        gives up (then ``mark_failed``) or the runtime is closing."""
        self.client = None
        if self.status == "connected":
            self._set("starting", "reconnecting")

    def mark_failed(self, reason: str) -> None:
        self.client = None
        self._set("failed", reason)

    def mark_needs_login(self, reason: str) -> None:
        self.client = None
        self._set("needs login", reason)

    def mark_untrusted(self, reason: str) -> None:
        self._set("untrusted", reason)

    @contextlib.contextmanager
    def open_errlog(self) -> Iterator[IO[str]]:
        """The server's stderr goes to a log file, not over the user's terminal."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "a", encoding="utf-8", errors="replace") as fh:
            yield fh

    # -- read by callers ----------------------------------------------------------------
    async def wait_settled(self) -> None:
        """Until the server is no longer starting."""
        while self.status == "starting":
            await self._changed.wait()

    async def connected_client(self, wait: float) -> Any:
        with trio.move_on_after(wait):
            await self.wait_settled()
        if self.status == "connected" and self.client is not None:
            return self.client
        if self.status == "starting":
            raise McpUnavailable(f"MCP server {self.name!r} is still starting "
                                 f"(waited {wait:g} s); try again shortly")
        why = f": {self.reason}" if self.reason else ""
        raise McpUnavailable(f"MCP server {self.name!r} is {self.status}{why}")


class McpTool(Tool):
    """One server tool as a nyz tool: gated like any tool that needs approval, unless the
    server's ``allow_tools`` lists it (sandbox and deny rules still apply)."""

    permission = Permission.NEEDS_APPROVAL

    def __init__(self, pool: McpPool, link: ServerLink, remote: Any) -> None:
        self.pool = pool
        self.link = link
        self.remote_name = remote.name
        self.name = tool_name(link.name, remote.name)  # type: ignore[misc]
        self.allow_listed_by = allow_listed(link.name, self.name, link.entry.server.allow_tools)
        desc = remote.description or remote.title or remote.name
        self.description = f"{desc.strip()}\n(MCP tool `{remote.name}` of server {link.name})"  # type: ignore[misc]
        schema = dict(remote.input_schema or {})
        schema.setdefault("type", "object")
        self.parameters = schema  # type: ignore[misc]

    def target_paths(self, args: dict[str, Any]) -> list[str]:
        return []  # the server resolves its own paths, against its own cwd

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await self.pool.call_tool(self.link.name, self.remote_name, args, output=ctx.output)


class McpPool:
    """The runtime's MCP connections. Create with ``McpPool.open`` inside an actor system."""

    def __init__(
        self,
        system: actors.ActorSystem,
        registry: Any,
        *,
        root: Path,
        defer_threshold: int = 15,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        intensity: Intensity | None = None,
        ask_trust: TrustAsker | None = None,
        trust_all: bool = False,
        publish: Publish | None = None,
        env: Any = None,
        ask_user: Any = None,
        elicitation: str = "decline",
        redactor: Any = None,
    ) -> None:
        self.system = system
        self.registry = registry
        self.defer_threshold = defer_threshold
        self.startup_timeout = startup_timeout
        self.intensity = intensity or Intensity()
        self.ask_trust = ask_trust
        self.trust_all = trust_all
        self.publish = publish
        self.ask_user = ask_user  # the main agent's ask-user router; None when headless
        self.elicitation = elicitation  # ``[mcp] elicitation``: what headless answers
        self.env = env
        self.redactor = redactor  # told every OAuth token the connections load or refresh
        self.trust = TrustStore(root, env)
        self.log_dir = paths.state_dir(env) / "mcp"
        self.links: dict[str, ServerLink] = {}
        self._registered: dict[str, list[str]] = {}  # server -> exposed tool names
        self._sup: actors.ActorRef | None = None

    @classmethod
    async def open(cls, system: actors.ActorSystem, registry: Any,
                   entries: Sequence[ServerEntry], **kw: Any) -> McpPool:
        """Start ``/mcp`` and every server in ``entries``; returns before any connects."""
        pool = cls(system, registry, **kw)
        pool._sup = system.spawn(PoolSupervisor, pool, "MCP server", name="mcp",
                                 restart=actors.Restart.PERMANENT)
        for entry in entries:
            await pool.add(entry)
        return pool

    # -- servers ----------------------------------------------------------------------------
    async def add(self, entry: ServerEntry) -> ServerLink:
        """Connect a server (also in a running session: hot connect). Returns at once."""
        assert self._sup is not None
        if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", entry.name):
            raise ValueError(f"invalid MCP server name {entry.name!r}: use letters, digits, "
                             "'_', '-' or '.' (at most 64)")
        old = self.links.get(entry.name)
        if old is not None and old.status not in ("failed", "untrusted", "needs login"):
            raise ValueError(f"an MCP server named {entry.name!r} is already running")
        if old is not None:
            await self._sup.ask(actors.StopChild(entry.name))
        link = self.links[entry.name] = ServerLink(entry, self.log_dir)
        await self._sup.ask(actors.StartChild(server_spec(link, self, self.intensity)))
        return link

    def elicitation_for(self, server: str) -> Any:
        """The SDK elicitation callback for ``server`` (``nyzhi.core.runtime.mcp.elicit``)."""
        from nyzhi.core.runtime.mcp.elicit import callback_for

        return callback_for(server, self.ask_user, self.elicitation)

    def auth_for(self, link: ServerLink) -> Any:
        """An http server's OAuth provider (stored logins only), or None: stdio servers and
        servers with a configured Authorization header use none."""
        from nyzhi.config.schema import McpStdioServer

        server = link.entry.server
        if isinstance(server, McpStdioServer) or any(
                k.lower() == "authorization" for k in server.headers):
            return None
        from nyzhi.core.runtime.mcp.oauth import client_secret_of, provider_for

        on_secret = self.redactor.add if self.redactor is not None else None
        return provider_for(link.name, server.url, env=self.env, on_secret=on_secret,
                            client_id=server.client_id,
                            client_secret=client_secret_of(server, self.env))

    def statuses(self) -> list[ServerStatus]:
        return [
            ServerStatus(link.name, link.status, link.reason, len(link.tools), link.entry.source,
                         link.entry.describe())
            for link in self.links.values()
        ]

    async def wait_started(self, within: float | None = None) -> None:
        """Until no server is starting, or ``within`` seconds (default: the startup timeout)."""
        with trio.move_on_after(self.startup_timeout if within is None else within):
            for link in list(self.links.values()):
                await link.wait_settled()

    def summaries(self) -> list[str]:
        """One line per connected server, for the system prompt."""
        out = []
        for link in self.links.values():
            if link.status != "connected":
                continue
            names = [t.name for t in link.tools]
            shown = ", ".join(names[:8]) + (", …" if len(names) > 8 else "")
            line = f"{link.name}: {len(names)} tools as mcp__{link.name}__* ({shown})"
            if link.instructions:
                line += f". {link.instructions.strip().splitlines()[0][:200]}"
            out.append(line)
        return out

    # -- called by the actors ------------------------------------------------------------
    async def check_trust(self, link: ServerLink) -> bool:
        entry = link.entry
        if not entry.needs_trust or self.trust_all or self.trust.is_trusted(entry):
            return True
        approved = False
        if self.ask_trust is not None:
            approved = await self.ask_trust(entry)
        if approved:
            self.trust.record(entry)
            return True
        link.mark_untrusted(
            f"{entry.file or '.mcp.json'} declares it; approve it once in the console or with "
            "`nyz mcp list` in a terminal, or run with --approve-project-config"
        )
        return False

    def server_connected(self, link: ServerLink, client: Any, tools: list[Any]) -> None:
        link.instructions = getattr(client, "instructions", None) or ""
        link.mark_connected(client, tools)
        for name in self._registered.pop(link.name, []):
            self.registry.unregister(name)
        self._registered[link.name] = [tool_name(link.name, t.name) for t in tools]
        self._register_all()

    async def server_failed(self, link: ServerLink) -> None:
        """Take a failed server's tools away and report it (an ``error`` event)."""
        for name in self._registered.pop(link.name, []):
            self.registry.unregister(name)
        self._register_all()
        if self.publish is not None:
            from nyzhi.core import events as ev

            message = (link.reason if link.status == "needs login"
                       else f"MCP server {link.name!r} failed: {link.reason}")
            await self.publish(ev.Error(agent="/mcp", message=message, kind="mcp"))

    async def server_ended(self, name: str, outcome: actors.Outcome) -> None:
        link = self.links.get(name)
        reason = gave_up(outcome, self.intensity)
        if link is None or reason is None:
            return
        link.mark_failed(reason)
        await self.server_failed(link)

    def _register_all(self) -> None:
        total = sum(len(v) for v in self._registered.values())
        deferred = total > self.defer_threshold
        for name, link in self.links.items():
            for remote in link.tools if name in self._registered else ():
                self.registry.register_external(McpTool(self, link, remote), deferred=deferred)

    # -- calls ------------------------------------------------------------------------------
    def _link(self, server: str) -> ServerLink:
        try:
            return self.links[server]
        except KeyError:
            known = ", ".join(self.links) or "none"
            raise McpUnavailable(f"no MCP server named {server!r} (configured: {known})") from None

    async def call_tool(self, server: str, tool: str, args: dict[str, Any],
                        output: Callable[[str], Awaitable[None]] | None = None) -> ToolResult:
        """Call ``tool`` on ``server``; errors come back as error results naming the server."""
        from nyzhi.core.runtime.mcp.client import content_text, is_connection_error

        try:
            client = await self._link(server).connected_client(self.startup_timeout)
        except McpUnavailable as exc:
            return ToolResult(str(exc), is_error=True, metadata={"mcp_server": server})

        async def progress(done: float, total: float | None, message: str | None) -> None:
            if output is not None:
                of = f"/{total:g}" if total else ""
                await output(f"[{server}] progress {done:g}{of}" + (f": {message}" if message else "") + "\n")

        try:
            result = await client.call_tool(tool, args, progress_callback=progress)
        except Exception as exc:
            if is_connection_error(exc):
                conn = self.system.lookup(f"/mcp/{server}/conn")
                if conn is not None:
                    with contextlib.suppress(actors.ActorError):
                        conn.tell_nowait(Dropped(client))
                return ToolResult(
                    f"MCP server {server!r} went away during the call to `{tool}` ({exc}); "
                    "it is being restarted, so the call can be retried",
                    is_error=True, metadata={"mcp_server": server},
                )
            return ToolResult(f"MCP server {server!r} failed the call to `{tool}`: "
                              f"{type(exc).__name__}: {exc}", is_error=True,
                              metadata={"mcp_server": server})
        text = content_text(result.content, result.structured_content)
        return ToolResult(text, is_error=bool(result.is_error), metadata={"mcp_server": server})

    async def _connected(self) -> list[ServerLink]:
        return [link for link in self.links.values() if link.status == "connected"]

    async def resources(self) -> list[McpResource]:
        """Every resource of every connected server (servers without resources add none)."""
        from nyzhi.core.runtime.mcp.client import list_all

        out: list[McpResource] = []
        for link in await self._connected():
            caps = getattr(link.client, "server_capabilities", None)
            if caps is not None and getattr(caps, "resources", None) is None:
                continue
            for r in await list_all(link.client.list_resources, "resources"):
                out.append(McpResource(link.name, str(r.uri), r.name, r.description or "",
                                       r.mime_type))
        return out

    async def read_resource(self, server: str, uri: str) -> str:
        from nyzhi.core.runtime.mcp.client import content_text

        client = await self._link(server).connected_client(self.startup_timeout)
        result = await client.read_resource(uri)
        parts = []
        for item in result.contents:
            text = getattr(item, "text", None)
            parts.append(text if text is not None else f"[binary resource {item.uri} ({item.mime_type})]")
        return "\n".join(parts) if parts else content_text([])

    async def prompts(self) -> list[McpPrompt]:
        from nyzhi.core.runtime.mcp.client import list_all

        out: list[McpPrompt] = []
        for link in await self._connected():
            caps = getattr(link.client, "server_capabilities", None)
            if caps is not None and getattr(caps, "prompts", None) is None:
                continue
            for p in await list_all(link.client.list_prompts, "prompts"):
                out.append(McpPrompt(link.name, p.name, p.description or "",
                                     tuple(a.name for a in p.arguments or ())))
        return out

    async def prompt_text(self, server: str, name: str,
                          arguments: dict[str, str] | None = None) -> str:
        """A server prompt rendered as text, to send as a user message."""
        from nyzhi.core.runtime.mcp.client import content_text

        client = await self._link(server).connected_client(self.startup_timeout)
        result = await client.get_prompt(name, arguments or {})
        return "\n\n".join(content_text([m.content]) for m in result.messages)

