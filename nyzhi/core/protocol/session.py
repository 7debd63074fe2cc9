"""The one handle a front end holds on a live session: ops in, events out, a status snapshot.

``Session(rt, host)`` wraps an open runtime (``open_runtime``) and the front end's command
host (``nyzhi.core.runtime.commands.registry.CommandHost``: where a slash command's output goes).
``submit(op)`` is the one place an op is applied, so ``/trust`` typed in the console, ACP's
``session/set_mode`` and the web page's ``set_trust`` change the same gates, fire the same
``config_change`` hook and say the same thing; leaving plan mode returns the same
execute-plan message wherever it was asked. ``events()`` is every event from now on, in
order; ``status()`` is a ``SessionStatus``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from nyzhi import records
from nyzhi.core.protocol import ops as o
from nyzhi.core.protocol.status import AgentLine, SessionStatus, status_card, status_line


def answer_mismatch(schema: dict[str, Any] | None, outcome: Any) -> str | None:
    """Why a turn's finished answer (``outcome``: its ``TurnOutcome``) does not match the JSON
    ``schema`` it was asked for (``--output-schema``); None: it does, or no schema, or the
    turn failed anyway. The request was constrained where the provider can; this checks."""
    if schema is None or outcome is None or outcome.is_error:
        return None
    from nyzhi.provider.output_schema import OutputSchemaError, check_answer

    try:
        check_answer(outcome.text, schema)
    except OutputSchemaError as exc:
        return f"--output-schema: {exc}"
    return None


@records.frozen
class Applied:
    """What applying an op did: ``notice`` to show (may be ""), ``follow_up`` a message the
    front end sends to the main agent as its next turn (the plan to execute), ``handle`` a
    turn that started (``UserTurn`` on the main agent), ``value`` any other answer."""

    notice: str = ""
    follow_up: str | None = None
    handle: Any = None
    value: Any = None


class ScreenlessHost:
    """What a command host without a screen of its own (the line chat, a live viewer, an ACP
    editor) answers the same way: lines shown one by one, no status line to redraw, the
    status from the one snapshot and formatter, and the configuration the workspace trusts
    (unapproved project keys left out), read once. A subclass sets ``rt`` and ``cwd`` and says
    how it ``show``s a line."""

    rt: Any
    cwd: Path
    _loaded: Any = None

    def show(self, kind: str, text: str) -> None:
        raise NotImplementedError

    def show_lines(self, lines: list[tuple[str, str]]) -> None:
        for kind, text in lines:
            self.show(kind, text)

    def refresh_status(self) -> None:
        pass

    def status_text(self, *, long: bool = False) -> str:
        status = Session(self.rt).status()
        return status_card(status) if long else status_line(status)

    def loaded_config(self) -> Any:
        if self._loaded is None:
            from nyzhi.core.protocol.start import trusted_loaded

            self._loaded = trusted_loaded(self.cwd)
        return self._loaded


class Session:
    """A front end's handle on one runtime (see the module docstring)."""

    def __init__(self, rt: Any, host: Any = None, *, source: str = "command") -> None:
        self.rt = rt
        self.host = host
        self.source = source  # the config_change hook's ``source``

    @property
    def id(self) -> str:
        return str(self.rt.session_id)

    # ---- what a front end reads of the session (never the runtime's insides) ------------

    @property
    def main_path(self) -> str:
        return str(self.rt.main_agent.spec.path)

    @property
    def workspace_root(self) -> Path:
        return Path(self.rt.tooling.context.workspace_root)

    @property
    def cwd(self) -> Path:
        return Path(self.rt.session_start.cwd or self.rt.tooling.context.cwd)

    def redact(self, text: str) -> str:
        """``text`` with the session's secrets masked, for what a front end shows that did
        not come through the events (which are redacted already)."""
        redactor = self.rt.tooling.redactor
        return redactor.redact(text) if redactor is not None else text

    @property
    def redactor(self) -> Any:
        """The session's redactor (None: nothing to mask), for front ends redacting values."""
        return self.rt.tooling.redactor

    def thread_length(self) -> int:
        """How many messages the main agent's thread holds (a resumed session's too)."""
        return len(self.rt.main_agent.loop.messages)

    def replay(self) -> tuple[list[Any], dict[str, Any]]:
        """A resumed session as it was: its recorded events, and its restored subagents by
        path (each with ``status``, ``closed`` and ``reason``); empty for a new session."""
        resumed = self.rt.factory.resumed
        return (list(resumed.events) if resumed is not None else [],
                dict(self.rt.agents.records))

    def run_commands_elsewhere(self, runner: Any, tag_var: str) -> None:
        """Hand every agent's sandboxed commands, confined as its bash would confine them,
        to ``runner`` (``protocol.elsewhere``): ACP's client terminals."""
        from nyzhi.core.protocol.elsewhere import run_commands_elsewhere

        run_commands_elsewhere(self.rt, runner, tag_var)

    def read_file(self, path: Path) -> str:
        """A file of the session's (one a tool changed), read as a prompt file is
        (``config.prompt_files``): only under the workspace or nyz's own folders, so a path
        swapped for a symlink out of them (``/proc/self/environ``) is refused.

        Raises:
            OSError: refused, missing or unreadable.
            UnicodeDecodeError: not UTF-8 text.
        """
        from nyzhi.config.prompt_files import prompt_roots, read_prompt_file

        return read_prompt_file(path, prompt_roots(self.workspace_root), errors="strict")

    async def add_mcp_server(self, name: str, *, url: str = "",
                             headers: dict[str, str] | None = None, command: str = "",
                             args: tuple[str, ...] = (),
                             env: dict[str, str] | None = None) -> None:
        """Connect one more MCP server for this session: over HTTP at ``url`` (with
        ``headers``), else the stdio server ``command`` (with ``args`` and ``env``), as a
        ``[mcp.servers]`` entry of the config would (ACP's ``mcpServers``)."""
        from nyzhi.config.schema import McpHttpServer, McpStdioServer

        entry: Any = (McpHttpServer(url=url, headers=dict(headers or {})) if url
                      else McpStdioServer(command=command, args=tuple(args), env=dict(env or {})))
        await self.rt.mcp_add(name, entry)

    def background_processes(self) -> list[dict[str, Any]]:
        """Every process the session started in the background, described (``id``,
        ``command``, ``state``, …): ``nyz run``'s ``background`` field. Readable after the
        runtime closed too (the processes are known, each killed by then)."""
        from nyzhi.core.loop.background import shell_summaries

        return shell_summaries(self.rt.tooling.context.shells)

    async def stop_background(self) -> None:
        """Kill every background process still running, each within its kill grace: the end
        of ``nyz run``, before its last events are printed (so their ``process_exit`` is)."""
        from nyzhi.core.loop.background import stop_all

        await stop_all(self.rt.tooling.context.shells)

    async def team_settled(self, team: str | None) -> str | None:
        """Wait until the session's team (``team``; None: the one it leads) is quiet; then
        why its work is not done: a process teammate failed past its restarts, or tasks are
        left neither completed nor deleted (quiet is not done: issue 55). None: it is done."""
        from nyzhi.core.runtime.teams.control import TeamRuntimeError

        try:
            await self.rt.teams.wait_quiet(team)
        except TeamRuntimeError as exc:
            return str(exc)
        left = self.rt.teams.store.board(team).unfinished() if team else ()
        if not left:
            return None
        shown = ", ".join(f"#{t.id} {t.status.value}" + (f" ({t.owner})" if t.owner else "")
                          for t in left[:10])
        return (f"team {team} went quiet with {len(left)} task(s) unfinished: {shown}; "
                "nyz team status shows them")

    def ask_while(self, attended: Any) -> None:
        """A headless session asks a person after all while ``attended()`` is true (a front
        end is attached to its live socket); otherwise a call that needs approval is refused
        as before. Set on the base tools too, so agents spawned later ask the same way."""
        rt = self.rt
        if rt.tooling.gates.approver is not None:
            return  # an interactive session asks anyway
        for gates in {id(g): g for g in (rt.tooling.gates, rt.main_agent.tooling.gates)}.values():
            gates.approver = rt.approvals.request
            gates.attended = attended

    def allow_always(self, tool: str) -> None:
        """Answer ``always`` for ``tool`` before it asks (``nyz init --deep --run-checks``)."""
        self.rt.main_agent.tooling.gates.memory.remember(tool)

    @contextlib.asynccontextmanager
    async def events(self) -> AsyncIterator[Any]:
        """Every event from now on, in order (a trio receive channel)."""
        async with self.rt.subscribe() as channel:
            yield channel

    async def submit(self, op: o.Op) -> Applied:
        """Apply ``op``; the one place every front end's ops go through."""
        rt = self.rt
        if isinstance(op, o.UserTurn):
            if op.agent == o.MAIN_AGENT:
                return Applied(handle=await rt.submit(op.text, op.attachments))
            return Applied(value=await rt.send(op.agent, op.text))
        if isinstance(op, o.MessageAgent):
            return Applied(value=await rt.send(op.path, op.text))
        if isinstance(op, o.Interrupt):
            return Applied(value=await rt.cancel(op.agent, op.scope))
        if isinstance(op, o.Approve):
            await rt.answer_approval(op.request_id, op.answer)
            return Applied()
        if isinstance(op, o.Answer):
            await rt.answer_question(op.request_id, op.text)
            return Applied()
        if isinstance(op, o.RunCommand):
            from nyzhi.core.runtime.commands import dispatch

            if self.host is None:
                raise o.OpError("run_command needs a front end's command host")
            await dispatch(self.host, op.line)
            return Applied()
        if isinstance(op, o.ResumeAgent):
            return Applied(value=await rt.agents.resume(op.path))
        if isinstance(op, o.RunShell):
            import json
            import time

            from nyzhi.provider.types import ToolCall

            call = ToolCall(f"shell-{time.monotonic_ns()}", "bash",
                            json.dumps({"command": op.command}))
            loop = rt.main_agent.loop
            results: dict[str, Any] = {}
            await loop.tool_step([call], results)
            if (done := results.get(call.id)) is not None:
                loop.add_shell_context(op.command, done.content)
            return Applied()
        if isinstance(op, o.Compact):
            await rt.compact(op.hint)
            return Applied()
        if isinstance(op, o.Rewind):
            if op.all:
                from nyzhi.core.runtime.checkpoints.actions import undo_turn

                return Applied(notice=await undo_turn(rt))
            return Applied(notice=rt.undo())
        if isinstance(op, o.Shutdown):
            await rt.cancel(o.MAIN_AGENT, "subtree")
            return Applied()
        return self.apply(op)

    def apply(self, op: o.Op) -> Applied:
        """The ops that take effect at once (modes, model, thinking), without
        awaiting: Shift-Tab in the console toggles plan mode from a key handler."""
        rt = self.rt
        if isinstance(op, o.SetTrust):
            mode = rt.set_trust(op.mode, source=self.source)
            return Applied(notice=f"trust: {mode}", value=mode)
        if isinstance(op, o.SetPlanMode):
            execute = rt.set_plan_mode(op.on, source=self.source)
            return Applied(notice="plan mode on: read-only tools only" if op.on
                           else "plan mode off", follow_up=execute)
        if isinstance(op, o.SetModel):
            rt.set_model(op.model)
            return Applied(notice=f"model: {rt.provider_name}/{rt.model} from the next request")
        if isinstance(op, o.SetThinking):
            return Applied(notice=rt.set_thinking(op.level) or "")
        raise o.OpError(f"{op.op} is not applied at once; await submit()")

    async def custom_status_line(self, cwd: Path, cost_usd: float,
                                 started: float) -> str | None:
        """The first line the workspace's ``statusLine`` command (Claude Code's setting, read
        into ``rt.status_line``) prints when given Claude Code's status JSON for the session
        now, run in ``cwd`` with the session's environment policy; None when it failed, timed
        out or printed nothing. ``cost_usd``: the agent tree's cost; ``started``: the
        ``time.monotonic()`` the front end started at."""
        from nyzhi.core.runtime.status_line import run_status_line, status_payload
        from nyzhi.tools.env_policy import child_env

        rt = self.rt
        payload = status_payload(rt, cwd, cost_usd, started)
        env = child_env(rt.main_agent.tooling.context.env_policy, {})
        return await run_status_line(rt.status_line, payload, str(cwd), env)

    def next_thinking(self) -> str:
        """Think at the named level after the current one (off, low, medium, high, round; a
        token budget goes to off): the console's Alt-T. Says what ``/thinking LEVEL`` says,
        the level now on its last line."""
        from nyzhi.core.runtime.thinking import next_level, thinking_command

        return thinking_command(self.rt, next_level(self.rt.thinking_level))

    # ---- the snapshot -------------------------------------------------------------------

    def status(self) -> SessionStatus:
        """The session now; the context figure is ``/context``'s (system prompt, tools and
        the thread, from the main agent's loop)."""
        return session_status(self.rt)


def session_status(rt: Any) -> SessionStatus:
    tooling = rt.main_agent.tooling
    loop = rt.main_agent.loop
    sandbox = tooling.context.sandbox
    try:
        usage = loop.context_usage()
        used, window = sum(t for _n, t, _c in usage.parts), usage.window
    except Exception:  # a prompt part that cannot be built yet: no figure, not a crash
        used, window = 0, loop.settings.context_window
    agents = tuple(AgentLine(a.path, a.kind, str(a.status), a.tokens, a.usd)
                   for a in rt.agents.placed())
    if agents:  # the whole tree's use: every placed agent's own figures
        tokens, cost = sum(a.tokens for a in agents), sum(a.cost_usd for a in agents)
    else:
        totals = rt.usage_totals()
        tokens = totals.get("input_tokens", 0) + totals.get("output_tokens", 0)
        cost = float(totals.get("cost_usd", 0.0))
    return SessionStatus(
        session_id=rt.session_id, cwd=str(rt.session_start.cwd or ""),
        provider=rt.provider_name, model=rt.model, trust=str(tooling.gates.trust.mode.value),
        sandbox=sandbox.level.value if sandbox else "none",
        plan_mode=bool(tooling.gates.plan_mode), context_used=used, context_window=window,
        tokens=tokens, cost_usd=round(cost, 6),
        thinking="" if rt.thinking_level is None else str(rt.thinking_level),
        agents=agents, approvals=rt.approvals.waiting(), background=_background(rt))


def _background(rt: Any) -> tuple[str, ...]:
    """What runs beside the turns: MCP servers, language servers, the browser."""
    out = []
    if rt.mcp is not None:
        servers = rt.mcp_status()
        if servers:
            up = sum(1 for s in servers if s.status == "connected")
            out.append(f"mcp {up}/{len(servers)} connected")
    context = rt.tooling.context
    if context.lsp is not None and context.lsp.running():
        out.append(f"lsp {len(context.lsp.running())} running")
    if context.browser is not None and context.browser.running:
        out.append("browser")
    return tuple(out)


__all__ = ["Applied", "Session", "answer_mismatch", "session_status"]
