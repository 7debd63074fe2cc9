"""One ACP session: one nyz runtime (its own agent tree and saved session) driven by the client.

The session's task holds the runtime open (``run``) and pumps its events through
``UpdateRenderer`` to the client as ``session/update`` notifications, in order. A prompt is
submitted to the main agent and answered with its turn's stop reason once every update of the
turn has been sent. Approvals from any agent of the tree become ``session/request_permission``
(allow once, allow always, reject) and ``ask_user`` questions a permission request whose
options are the answers; both are asked in their own tasks, so the events keep flowing.
``session/cancel`` cancels the main agent's turn and its whole subtree (subprocesses
included). Slash commands come from the one command table (``nyzhi.core.runtime.commands``); their
output is an agent message. Modes are plan mode and the trust modes.

With the client's ``fs`` capability, files a prompt links to are read through the client (its
unsaved buffers are what the agent sees), and every file an agent's tool changed is written
through the client afterwards, so the edit lands in the open buffer. Our own tools still do
the work, behind the same gates and sandbox. With its ``terminal`` capability, sandboxed bash
commands run in the client's terminals (``nyzhi.acp.terminal``), embedded in their calls, and
background shells stay ours but are shown in client terminals (``nyzhi.acp.background``).
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import trio

from nyzhi.acp import schema as s
from nyzhi.acp.updates import UpdateRenderer, proposed_diffs
from nyzhi.core.protocol import ApprovalAnswer, ScreenlessHost, Session
from nyzhi.core.protocol import events as ev
from nyzhi.core.protocol.ops import TrustMode
from nyzhi.jsonrpc import Connection, RpcError

STOP_REASONS = {"end_turn": "end_turn", "cancelled": "cancelled", "max_steps": "max_turn_requests",
                "max_tokens": "max_tokens", "refusal": "refusal"}
PLAN_MODE = "plan"
MODE_NAMES = {
    TrustMode.OFF: ("Ask", "ask before every change"),
    TrustMode.LIMITED: ("Limited", "run the configured allow_tools without asking"),
    TrustMode.AUTOEDIT: ("Auto-edit", "edit files without asking; ask for the rest"),
    TrustMode.FULL: ("Full trust", "run everything without asking"),
    PLAN_MODE: ("Plan", "read-only tools: research and write a plan"),
}
PERMISSION_OPTIONS = (
    s.PermissionOption(ApprovalAnswer.APPROVE, "Allow once", "allow_once"),
    s.PermissionOption(ApprovalAnswer.ALWAYS, "Allow always (this session)", "allow_always"),
    s.PermissionOption(ApprovalAnswer.DENY, "Reject", "reject_once"),
)


class AcpSession:
    """One ``session/new`` or ``session/load``: its runtime, its event pump, its prompts."""

    def __init__(self, conn: Connection, options: Any, fs: s.FsCapabilities,
                 mcp_servers: tuple[s.McpServerParams, ...], replay: list[ev.AnyEvent],
                 terminal: bool = False) -> None:
        self.conn = conn
        self.options = options
        self.fs = fs
        self.terminal = terminal  # the client runs bash in its terminals (``terminal.py``)
        # (agent, the model's call id) -> the client terminal its command runs in, until the
        # call's first output has been rendered and the terminal can be embedded in it
        self.terminals: dict[tuple[str, str], str] = {}
        self.views: Any = None  # background shells shown in client terminals (``background.py``)
        self.mcp_servers = mcp_servers
        self.replay = replay
        self.cwd = Path(options.cwd)
        self.rt: Any = None
        self.renderer = UpdateRenderer(self.cwd)
        self.id = ""
        self.closed = trio.Event()
        self.ended = trio.Event()  # the runtime is shut down (the session saved), set by its keeper
        self.started = False  # the runtime is open and the client may use the session
        self.turn_done: trio.Event | None = None
        self.stop_reason = "end_turn"
        self.turn_error: str | None = None
        self.prompt_lock = trio.Lock()
        self.busy = False
        self._nursery: trio.Nursery | None = None

    # ---- lifetime -----------------------------------------------------------------------

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Open the runtime, replay a loaded session, then pump events until ``close``."""
        from nyzhi.core.runtime.runtime import open_runtime

        async with open_runtime(self.options) as rt:
            self.rt = rt
            self.id = rt.session_id
            for notice in rt.notices:  # stdout is the protocol's: notices go to the log
                sys.stderr.write(f"nyz acp: {notice}\n")
            await self._add_mcp_servers()
            s.prepare_updates()  # the first prompt's first chunk then costs no code generation
            if self.terminal:
                from nyzhi.acp.terminal import install

                install(self, self.conn, self._announce_terminal)
                self.views = _views(self)
            try:
                async with rt.subscribe() as events, trio.open_nursery() as nursery:
                    self._nursery = nursery
                    await self._replay()
                    self.started = True
                    task_status.started(self)
                    nursery.start_soon(self._pump, events)
                    await self.closed.wait()
                    nursery.cancel_scope.cancel()
            finally:
                if self.views is not None:  # the processes end with the runtime; their views now
                    await self.views.close_all()

    def close(self) -> None:
        self.closed.set()

    async def _add_mcp_servers(self) -> None:
        session = Session(self.rt)
        for server in self.mcp_servers:
            if server.type == "http" and server.url:
                await session.add_mcp_server(
                    server.name, url=server.url, headers={h.name: h.value for h in server.headers})
            elif server.command:
                await session.add_mcp_server(server.name, command=server.command,
                                             args=server.args,
                                             env={e.name: e.value for e in server.env})
            else:
                raise s.ParamsError(f"session params: 'mcpServers' entry {server.name!r} has "
                                    "neither a command nor a url")
        if self.mcp_servers:  # the spec connects them before the session is answered
            await self.rt.mcp.wait_started()

    async def _replay(self) -> None:
        """A loaded session's history, as updates, before ``session/load`` returns."""
        if not self.replay:
            return
        renderer = UpdateRenderer(self.cwd, replaying=True)
        for event in self.replay:
            renderer.render(event)
        for update in renderer.take():
            await self.send(update)

    async def send(self, update: s.Update) -> None:
        await self.conn.notify("session/update", s.write(s.SessionNotification(self.id, update)))

    async def _pump(self, events: trio.MemoryReceiveChannel[ev.Event]) -> None:
        assert self._nursery is not None
        async for event in events:
            if isinstance(event, ev.ToolDone) and self.terminals:  # its output never came
                terminal = self.terminals.pop((event.agent, event.call_id), None)
                if terminal is not None:
                    self.renderer.terminals[
                        self.renderer.tool_call_id(event.agent, event.call_id)] = terminal
            if isinstance(event, ev.ToolDone) and self.views is not None:
                self._view_background(event)
            elif isinstance(event, ev.ProcessExit) and self.views is not None:
                self._nursery.start_soon(self.views.close, event.shell_id)
            self.renderer.render(event)
            for update in self.renderer.take():
                await self.send(update)
            if isinstance(event, ev.ToolOutputDelta) and self.terminals:
                await self._embed_terminal(event)
            for ask in self.renderer.asks:
                self._nursery.start_soon(self._ask_client, ask)
            self.renderer.asks.clear()
            if isinstance(event, ev.Error) and event.agent == ev.MAIN_AGENT:
                self.turn_error = event.message
            if isinstance(event, ev.ToolDone) and not event.is_error and self.fs.write_text_file:
                await self._write_through(event)
            if (isinstance(event, ev.TurnComplete) and event.agent == ev.MAIN_AGENT
                    and self.turn_done is not None):
                self.stop_reason = event.stop_reason
                self.turn_done.set()

    def _view_background(self, event: ev.ToolDone) -> None:
        """A call that started a background shell: a client terminal showing its output
        (``nyzhi.acp.background``), embedded in the call's content beside its result once
        the editor opened it (in its own task: an editor slow to answer holds no update).
        Only a shell still running now: were it gone, its exit would be ahead in this queue,
        and its exit, later in it, closes the view (after the opening, however long)."""
        shell_id = event.metadata.get("shell_id") if event.name == "bash" else None
        if not isinstance(shell_id, str) or self.views.known(shell_id):
            return
        table = self.rt.tooling.context.shells
        shell = table.shells.get(shell_id) if table is not None else None
        if (shell is None or shell.owner != event.agent or shell.state != "running"
                or shell.log_path is None or not shell.pid or self._nursery is None):
            return
        call_id = self.renderer.tool_call_id(event.agent, event.call_id)
        self.views.reserve(shell.id)
        self._nursery.start_soon(self._embed_view, shell.id, str(shell.log_path), shell.pid,
                                 call_id, event.output)

    async def _embed_view(self, shell_id: str, log_path: str, pid: int, call_id: str,
                          output: str) -> None:
        from nyzhi.acp.updates import _text

        terminal = await self.views.open(shell_id, log_path, pid)
        if terminal is not None and self.views.views.get(shell_id) == terminal:  # not closed
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                await self.send(s.ToolCallUpdate(tool_call_id=call_id, content=(
                    s.ToolCallContent(type="terminal", terminal_id=terminal), *_text(output))))

    def _announce_terminal(self, call: tuple[str, str] | None, terminal: str) -> None:
        if call is not None:
            self.terminals[call] = terminal

    async def _embed_terminal(self, event: ev.ToolOutputDelta) -> None:
        """The client terminal a call's command runs in, shown in that call (live)."""
        terminal = self.terminals.pop((event.agent, event.call_id), None)
        if terminal is None:
            return
        call_id = self.renderer.tool_call_id(event.agent, event.call_id)
        self.renderer.terminals[call_id] = terminal
        await self.send(s.ToolCallUpdate(tool_call_id=call_id, status="in_progress", content=(
            s.ToolCallContent(type="terminal", terminal_id=terminal),)))

    # ---- the client's side: permissions, files ------------------------------------------

    async def _ask_client(self, ask: ev.ApprovalRequest | ev.UserQuestion) -> None:
        if isinstance(ask, ev.UserQuestion):
            await self._ask_question(ask)
            return
        call_id = self.renderer.tool_call_id(ask.agent, ask.call_id)
        shown = self.renderer.titles.get(call_id) or self.renderer.fields(
            call_id, ask.tool, "", ask.agent)
        title = shown.title or ask.tool
        if ask.agent != ev.MAIN_AGENT and not title.startswith("["):
            title = f"[{ask.agent.rsplit('/', 1)[-1]}] {title}"  # which subagent asks
        name, args = self.renderer.inputs.get(call_id, (ask.tool, {}))
        content = await trio.to_thread.run_sync(
            proposed_diffs, name, args, self.cwd, Session(self.rt).redact)
        if not content:
            detail = ask.preview or ask.summary
            content = (s.ToolCallContent(content=s.TextContent(detail)),) if detail else ()
        params = s.RequestPermissionParams(
            self.id, s.ToolCallFields(tool_call_id=call_id, title=title, kind=shown.kind,
                                      status="pending", content=content or None,
                                      locations=shown.locations or None),
            PERMISSION_OPTIONS)
        answer = ApprovalAnswer.DENY
        try:
            reply = s.read_params(
                await self.conn.request("session/request_permission", s.write(params)),
                s.RequestPermissionResult, "session/request_permission result")
            if reply.outcome.outcome == "selected":
                answer = ApprovalAnswer.parse(reply.outcome.option_id)
        except (RpcError, s.ParamsError, ValueError):
            pass  # no answer, a cancelled one or one we cannot read: the call is declined
        with contextlib.suppress(KeyError):  # the turn was cancelled meanwhile
            await self.rt.answer_approval(ask.request_id, answer)

    async def _ask_question(self, ask: ev.UserQuestion) -> None:
        options = tuple(
            s.PermissionOption(o.get("value") or o.get("label", ""), o.get("label")
                               or o.get("value", ""), "allow_once")
            for o in ask.options) or (s.PermissionOption("yes", "Yes", "allow_once"),
                                      s.PermissionOption("no", "No", "reject_once"))
        params = s.RequestPermissionParams(
            self.id, s.ToolCallFields(tool_call_id=self.renderer.question_call(ask),
                                      title=ask.question, kind="other", status="pending"),
            options)
        answer = "__cancelled__"
        try:
            reply = s.read_params(
                await self.conn.request("session/request_permission", s.write(params)),
                s.RequestPermissionResult, "session/request_permission result")
            if reply.outcome.outcome == "selected" and reply.outcome.option_id:
                answer = reply.outcome.option_id
        except (RpcError, s.ParamsError):
            pass
        with contextlib.suppress(KeyError):
            await self.rt.answer_question(ask.request_id, answer)

    async def _write_through(self, event: ev.ToolDone) -> None:
        """Files the call changed, written through the client (its buffers show the edit).

        Read like a prompt file (``Session.read_file``): a path swapped for a symlink out
        of the workspace (``/proc/self/environ``) after the write is not sent."""
        session = Session(self.rt)
        for raw in event.metadata.get("paths") or ():
            path = Path(raw) if Path(raw).is_absolute() else self.cwd / raw
            try:
                text = await trio.to_thread.run_sync(lambda path=path: session.read_file(path))
            except (OSError, UnicodeDecodeError):
                continue  # deleted, refused, or not text: nothing for a buffer
            with contextlib.suppress(RpcError):
                await self.conn.request("fs/write_text_file", s.write(
                    s.WriteTextFileParams(self.id, str(path), text)))

    async def _read_linked(self, uri: str) -> str | None:
        """A linked file's text: through the client when it reads files (unsaved buffers)."""
        parsed = urlparse(uri)
        if parsed.scheme not in ("file", ""):
            return None
        path = Path(unquote(parsed.path))
        if not path.is_absolute():
            path = self.cwd / path
        if self.fs.read_text_file:
            reply = await self.conn.request("fs/read_text_file", s.write(
                s.ReadTextFileParams(self.id, str(path))))
            return s.read_params(reply, s.ReadTextFileResult, "fs/read_text_file result").content
        return None  # the agent reads it with its own tools

    # ---- prompts ------------------------------------------------------------------------

    async def prompt_text(self, blocks: tuple[s.ContentBlock, ...]) -> str:
        parts: list[str] = []
        for block in blocks:
            if block.type == "text":
                parts.append(block.text or "")
            elif block.type == "resource_link" and block.uri:
                text = await self._read_linked(block.uri)
                parts.append(_attached(block.uri, text) if text is not None else f"@{block.uri}")
            elif block.type == "resource" and block.resource is not None:
                res = block.resource
                parts.append(_attached(res.uri, res.text) if res.text is not None
                             else f"@{res.uri}")
            else:
                raise s.ParamsError(
                    f"session/prompt params: content of type {block.type!r} is not supported "
                    "(text, resource_link and resource are)")
        return "\n".join(p for p in parts if p)

    async def prompt(self, blocks: tuple[s.ContentBlock, ...]) -> str:
        """Run one turn; its stop reason once every update of it was sent."""
        text = await self.prompt_text(blocks)
        async with self.prompt_lock:
            if text.startswith("/"):  # the command registry's one rule (dispatch)
                return await self._command(text)
            return await self._turn(self.rt.knowledge.expand(text))

    async def _turn(self, text: str) -> str:
        self.turn_done = trio.Event()
        self.turn_error = None
        self.busy = True
        try:
            await self.rt.submit(text)
            await self.turn_done.wait()
        finally:
            self.busy = False
        reason = self.stop_reason
        if reason == "error":
            raise RpcError(-32603, self.turn_error or "the turn failed")
        return STOP_REASONS.get(reason, "end_turn")

    async def _command(self, line: str) -> str:
        from nyzhi.core.protocol.commands import dispatch

        host = _CommandHost(self)
        mode = self.current_mode()
        await dispatch(host, line)
        if self.current_mode() != mode:  # /plan, /trust: the editor's mode picker follows
            await self.send(s.CurrentModeUpdate(self.current_mode()))
        if host.output:
            text = Session(self.rt).redact("\n".join(host.output) + "\n")
            await self.send(s.AgentMessageChunk(s.TextContent(text)))
        if host.prompt is not None:
            return await self._turn(host.prompt)
        return "end_turn"

    async def cancel(self) -> None:
        if self.rt is not None:
            await self.rt.cancel()

    # ---- modes and commands -------------------------------------------------------------

    def modes(self) -> s.SessionModeState:
        return s.SessionModeState(self.current_mode(), tuple(
            s.SessionMode(mode_id, name, description)
            for mode_id, (name, description) in MODE_NAMES.items()))

    def current_mode(self) -> str:
        status = Session(self.rt).status()
        return PLAN_MODE if status.plan_mode else status.trust

    def set_mode(self, mode_id: str) -> None:
        """``session/set_mode`` as the session protocol's ops, like ``/plan`` and ``/trust``:
        the same ``config_change`` hooks fire, and leaving plan mode with a plan written
        runs the message that executes it as the next turn (its updates stream as usual)."""
        from nyzhi.core.protocol import ops

        if mode_id not in MODE_NAMES:
            raise s.ParamsError(f"session/set_mode params: 'modeId' must be one of "
                                f"{', '.join(MODE_NAMES)}, found {mode_id!r}")
        session = Session(self.rt)
        if mode_id == PLAN_MODE:
            session.apply(ops.SetPlanMode(True))
            return
        follow_up = None
        if self.rt.knowledge.plan_mode:
            follow_up = session.apply(ops.SetPlanMode(False)).follow_up
        session.apply(ops.SetTrust(str(mode_id)))
        if follow_up and self._nursery is not None:
            self._nursery.start_soon(self._follow_up, follow_up)

    async def _follow_up(self, text: str) -> None:
        """A turn the session starts itself (the plan to execute), after any running one."""
        async with self.prompt_lock:
            with contextlib.suppress(RpcError):  # its failure shows as an error update
                await self._turn(text)

    def commands(self) -> s.AvailableCommandsUpdate:
        from nyzhi.core.protocol.commands import available

        listed = [s.AvailableCommand(name, cmd.summary)
                  for name, cmd in available(_CommandHost.features).items()]
        for name, custom in sorted(self.rt.knowledge.commands.items()):
            summary = getattr(custom, "description", "") or "custom command"
            listed.append(s.AvailableCommand(name, summary, s.CommandInput("arguments")))
        return s.AvailableCommandsUpdate(tuple(listed))


def _views(session: AcpSession) -> Any:
    from nyzhi.acp.background import BackgroundViews

    table = session.rt.tooling.context.shells
    limit = table.buffer_bytes if table is not None else 1 << 20
    return BackgroundViews(session.conn, lambda: session.id, limit)


def _attached(uri: str, text: str) -> str:
    return f'<file uri="{uri}">\n{text}\n</file>'


class _CommandHost(ScreenlessHost):
    """The session as the slash commands' ``CommandHost``: output collected into one agent
    message, a prompt a command sends run as this prompt's turn. No screen, agent tree,
    themes or in-place restart, so the commands needing them are not offered."""

    features: frozenset[str] = frozenset()
    cancel_hint = "the editor's stop button"
    keys_help = "Permissions are asked in the editor."

    def __init__(self, session: AcpSession) -> None:
        self.session = session
        self.rt = session.rt
        self.cwd = session.cwd
        self.busy = session.busy
        self.output: list[str] = []
        self.prompt: str | None = None

    def show(self, kind: str, text: str) -> None:
        self.output.append(text)

    def show_lines(self, lines: list[tuple[str, str]]) -> None:
        self.output.extend(text for _kind, text in lines)

    def send_main(self, text: str) -> None:
        self.prompt = text

    def cancel_turn(self) -> None:
        pass  # a command runs between turns here: there is none to cancel

    def quit(self) -> None:
        self.output.append("the editor ends the session")

