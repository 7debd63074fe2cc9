"""One runtime assembly path for every front end.

``open_runtime`` builds, in order: config (three layers, then the front end's overrides through
``Config.with_overrides``), the actor system, the provider (configured, or the local offline
model as a supervised actor), the tool registry with its gates and sandbox, hooks, the session,
the event bus, the agent factory, the agent tree, and the main agent actor at
``/agents/main``. Every agent, the main one included, is built by that factory from an
``AgentSpec`` (``nyzhi.core.runtime.agent_factory``) and placed by that tree, which holds the limits,
budgets, journal and statuses (``nyzhi.core.runtime.placement``). The console, ``nyz run``, teams, the web console and library users
all get the same thing; front ends only consume events (``subscribe``) and answer approvals
and questions.

    async with nyzhi.open_runtime(RuntimeOptions(cwd=path, trust="full")) as rt:
        handle = await rt.submit("list the python files")
        outcome = await handle.wait()
"""

from __future__ import annotations

import contextlib
import math
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import attrs
import trio

import actors
from nyzhi import collector, process, records
from nyzhi.core import events as ev
from nyzhi.core.event_bus import EventBus, Listener
from nyzhi.core.loop.agent import TurnHandle, UserInput
from nyzhi.core.loop.background import publish_events
from nyzhi.core.loop.prompt import session_parts
from nyzhi.core.loop.tool_step import ApprovalAnswer, ApprovalBroker
from nyzhi.core.loop.turn import TurnSettings
from nyzhi.core.runtime import assembly
from nyzhi.core.runtime.agent_factory import Agent, AgentFactory, AgentSpec
from nyzhi.core.runtime.browser import browser_pool
from nyzhi.core.runtime.budget import Budget, Limits
from nyzhi.core.runtime.hooks import HookRunner
from nyzhi.core.runtime.model_redaction import RedactingProvider
from nyzhi.core.runtime.placement import journal_to
from nyzhi.core.runtime.roles import RoleModels
from nyzhi.core.runtime.session_knowledge import SessionKnowledge, load_session_knowledge
from nyzhi.core.runtime.sessions.store import SessionWriter
from nyzhi.core.runtime.subagents import SubagentManager
from nyzhi.core.runtime.teams.control import TeamRuntime
from nyzhi.core.runtime.teams.membership import open_membership
from nyzhi.core.runtime.teams.model_gate import ModelCallGate
from nyzhi.provider import types as pt


@records.define
class RuntimeOptions:
    """What a front end asks for; ``None`` means "as configured"."""

    cwd: Path = attrs.field(factory=Path.cwd, converter=records.as_path)
    provider: str | None = None
    model: str | None = None
    thinking: str | int | None = None  # ``--thinking``: a level (nyzhi.config.thinking)
    # ``nyz run --output-schema``: the main agent's final answer as JSON matching this schema
    output_schema: dict[str, Any] | None = None
    trust: str | None = None
    # ``--approve-project-config``: the person running nyz approves the project's gated
    # configuration for this run (nyzhi.config.project_trust); no trust mode does.
    approve_project_config: bool = False
    sandbox: str | None = None
    network: bool | None = None  # True: ``nyz run --network`` (sandboxed commands get the network)
    max_steps: int | None = None
    ephemeral: bool = False
    continue_latest: bool = False
    session: str | None = None
    interactive: bool = False
    # The root agent's budget (``nyz run --budget-*``), over ``[agent.agents.budget]``.
    # ``Limits`` is imported from this module with ``RuntimeOptions``: part of open_runtime's
    # API, so a front end building the options needs nothing else of the runtime's.
    budget: Limits | None = None
    plan: bool = False  # start in plan mode (read-only tools; see Runtime.knowledge)
    # Teams (nyzhi.core.runtime.teams): run as ``member`` (default the lead) of ``team``; teammates
    # it starts run ``teammate_mode`` (None: the team's configured mode).
    team: str | None = None
    member: str | None = None
    teammate_mode: str | None = None
    # A member on another host (``nyz team member --remote-store``): its team store, the
    # lead's, reached down its pipe (``nyzhi.team_files.remote.RemoteTeamStore``).
    team_store: Any = None
    # Library and test seams: a ready provider object, extra environment for key lookup.
    provider_instance: pt.Provider | None = None
    env: dict[str, str] | None = None


@records.define(eq=False)
class Runtime:
    """The assembled runtime. Create it with ``open_runtime``; every attribute is set there."""

    system: actors.ActorSystem
    bus: EventBus
    approvals: ApprovalBroker
    hooks: HookRunner
    factory: AgentFactory
    main_agent: Agent
    main: actors.ActorRef
    session_start: ev.SessionStart
    agents: SubagentManager
    notices: tuple[str, ...] = ()
    # The one of ``notices`` saying the project's hooks (and other gated parts) were left out
    # because nobody approved them: nyz run's stream-json says it as a ``notice`` event too.
    untrusted_notice: str = ""
    # Claude Code's statusLine command (nyzhi.core.runtime.status_line), when the project is approved
    # (it runs a program); the console shows its output as its status bar.
    status_line: Any = None
    mcp: Any = None  # nyzhi.core.runtime.mcp.McpPool: the MCP connections every agent shares
    teams: Any = None  # nyzhi.core.runtime.teams.control.TeamRuntime: this runtime's team members
    thinking_level: str | int | None = None  # the main agent's (``set_thinking``)
    # The runtime's background nursery (``open_runtime``): where config_change hooks run.
    background: trio.Nursery | None = None
    _config_changes: trio.MemorySendChannel[dict[str, Any]] | None = None
    # nyzhi.core.runtime.checkpoints.Recorder: every prompt a checkpoint of the files the tree changes
    checkpoints: Any = None

    @property
    def tooling(self) -> Any:
        """The tools every agent's view is made from (registry store, gates, context)."""
        return self.factory.tooling

    # Memory, skills, custom commands (``knowledge.expand``) and plan mode
    # (``knowledge.set_plan_mode``) for front ends.
    knowledge: SessionKnowledge | None = None

    @property
    def session_id(self) -> str:
        return self.session_start.session_id

    @property
    def provider_name(self) -> str:
        return self.session_start.provider

    @property
    def model(self) -> str:
        """The main agent's model now (``set_model`` changes it during the session)."""
        return self.main_agent.loop.model or self.session_start.model

    # ---- front-end API ----------------------------------------------------------------

    def add_listener(self, listener: Listener, *, name: str | None = None,
                     only: tuple[type, ...] | None = None) -> None:
        """Await ``listener(event)`` for every event (or, with ``only``, every event of those
        classes), before front ends see it. It must be ``async`` (else ``TypeError``); if it
        raises, the failure is reported as an ``error`` event (``kind="listener"``) naming it
        (``name``, default its qualified name) and the agent goes on."""
        self.bus.add_listener(listener, name=name, only=only)

    @property
    def save_fault(self) -> OSError | None:
        """Why the session stopped being saved (a full or read-only disk), or None."""
        return getattr(self.main_agent.spec.session, "fault", None)

    @contextlib.asynccontextmanager
    async def subscribe(self) -> AsyncIterator[trio.MemoryReceiveChannel[ev.Event]]:
        """Receive every event from now on, in order."""
        async with self.bus.subscribe() as channel:
            yield channel

    async def submit(self, text: str, images: tuple[Any, ...] = ()) -> TurnHandle:
        """Queue user input for the main agent; await ``handle.wait()`` for the outcome.
        ``images`` (ImageParts or paths, as ``nyz run -i``) and the images ``text`` mentions
        (``@shot.png``) go with it; ``ImageError`` before any request when one is not an image
        or the model takes none."""
        from nyzhi.core.loop.prompt_images import check_vision, prompt_images

        attached = prompt_images(text, self.tooling.context.cwd, images,
                                 self.tooling.context.workspace_root)
        check_vision(self.model, attached)
        handle: TurnHandle = await self.main.ask(UserInput(text, attached))
        await self.agents.watch_main(handle)
        return handle

    async def cancel(self, path: str = ev.MAIN_AGENT, scope: str = "subtree") -> bool:
        """Cancel the running turn of the agent at ``path`` (Esc / Ctrl-C: the main agent),
        and with ``scope="subtree"`` (the default) every agent under it. Threads are kept:
        an interrupted subagent continues with ``send_input`` or ``resume_agent``."""
        if path in self.teams.processes:  # a process teammate: cancel goes down its pipe
            return await self.teams.cancel_process(path)
        return await self.agents.cancel(path, scope)

    async def send(self, path: str, text: str) -> TurnHandle | dict[str, Any]:
        """Give the agent at ``path`` its next input: the main agent's turn handle, a
        subagent's status (a finished subagent starts a new turn), or for a teammate
        (``/team/<team>/<member>``) a message from ``user`` in its inbox, which wakes it."""
        if path == ev.MAIN_AGENT:
            return await self.submit(text)
        if path in self.teams.members and path != ev.MAIN_AGENT:
            return await self.teams.send_to(path, text)  # a teammate: into its inbox
        return await self.agents.send(path, text)

    def set_model(self, model: str) -> None:
        """Run the main agent's next requests on ``model`` of the same provider (the console's
        ``/model NAME``). Its context window and the model line of its prompt follow, and
        subagents spawned from now on inherit it. Another provider needs another runtime."""
        from nyzhi.provider.models import model_info

        loop = self.main_agent.loop
        previous = self.model
        loop.model = model
        loop.settings = attrs.evolve(
            loop.settings, context_window=model_info(model).context_window)
        self.main_agent.prompt.set_model(model)
        self.set_thinking(self.thinking_level)  # fitted to the new model
        self.config_changed("model", previous, model)

    def set_trust(self, mode: str, source: str = "command") -> str:
        """Trust ``mode`` (off, limited, autoedit, full) for the main agent from its next
        call, firing ``config_change``: ``/trust``, ACP's set_mode and the web's set_trust
        all come here (through ``nyzhi.core.protocol.Session``). ``ValueError`` (one line)
        for a mode that is not one; returns the mode now."""
        from nyzhi.config.modes import parse_trust

        parsed = parse_trust(mode)
        gates = self.main_agent.tooling.gates
        previous = gates.trust.mode
        gates.trust = attrs.evolve(gates.trust, mode=parsed)
        self.config_changed("trust", previous.value, parsed.value, source)
        return str(parsed.value)

    def set_plan_mode(self, on: bool, source: str = "command") -> str | None:
        """Plan mode on (read-only tools for the main agent and agents spawned from now on)
        or off, firing ``config_change``; leaving it with a plan written returns the message
        that executes the plan, which the front end sends as the main agent's next turn."""
        knowledge = self.knowledge
        if knowledge is None:
            raise RuntimeError("plan mode needs the session's knowledge")
        previous = knowledge.plan_mode
        execute = knowledge.set_plan_mode(on)
        self.config_changed("plan_mode", previous, on, source)
        return execute

    def config_changed(self, key: str, previous: Any, value: Any, source: str = "command") -> None:
        """A setting changed during the session (``/model``, ``/trust``, ``/thinking``,
        ``/plan``, ``/subagent-config``): fire the ``config_change`` hooks in the background
        (the front end does not wait for them), one change after another in the order they
        happened, shielded, so leaving the runtime lets them finish."""
        if previous == value or self.background is None or not self.hooks.has("config_change"):
            return
        payload = {"key": key, "previous": previous, "value": value, "source": source,
                   "session_id": self.session_id}
        if self._config_changes is None:
            send, receive = trio.open_memory_channel[dict[str, Any]](math.inf)
            self._config_changes = send
            self.background.start_soon(self._fire_config_changes, receive)
        self._config_changes.send_nowait(payload)

    async def _fire_config_changes(self, changes: trio.MemoryReceiveChannel[dict[str, Any]]) -> None:
        try:
            async for payload in changes:
                with trio.CancelScope(shield=True):
                    await self.hooks.fire("config_change", payload)
        finally:  # the runtime is closing: the changes still queued fire too
            with trio.CancelScope(shield=True):
                while True:
                    try:
                        payload = changes.receive_nowait()
                    except (trio.WouldBlock, trio.EndOfChannel):
                        break
                    await self.hooks.fire("config_change", payload)

    def set_thinking(self, level: str | int | None) -> str | None:
        """Think at ``level`` (off, low, medium, high or a token budget) from the main agent's
        next request (the console's ``/thinking``); returns the notice when the model cannot
        take it as asked (clamped, or not sent to a model that does not reason)."""
        from nyzhi.provider.thinking import resolve_thinking

        previous, self.thinking_level = self.thinking_level, level
        self.main_agent.loop.thinking, notice = resolve_thinking(level, self.model)
        self.config_changed("thinking", previous, level)
        return notice

    def set_role_model(self, role: str, model: str | None) -> None:
        """Run subagents of ``role`` spawned from now on on ``model`` (None: as configured);
        the console's ``/subagent-config``."""
        previous = self.agents.models.overrides.get(role)
        self.agents.models.set(role, model)
        self.config_changed(f"subagent_model.{role}", previous, model or None)

    async def answer_approval(self, request_id: str, answer: ApprovalAnswer | str) -> None:
        """Answer an ``approval_request``. A string must be an ``ApprovalAnswer`` value
        ("approve", "always" for this session, "deny"); anything else is a ``ValueError``."""
        answer = ApprovalAnswer.parse(answer)
        if await self.teams.answer_remote(
                request_id, {"op": "approval", "request_id": request_id, "answer": answer.value}):
            return  # a process teammate asked: its answer goes down its pipe
        self.approvals.answer_approval(request_id, answer)

    async def answer_question(self, request_id: str, text: str) -> None:
        """Answer a ``user_question`` event (the ``ask_user`` tool) with the chosen value."""
        if await self.teams.answer_remote(
                request_id, {"op": "answer", "request_id": request_id, "text": text}):
            return
        self.approvals.answer_question(request_id, text)

    async def spawn(self, spec: AgentSpec) -> actors.ActorRef:
        """Place the agent ``spec`` describes under its parent (the agent one level up its
        path), built like every agent by the runtime's factory and placed like every agent by
        its tree (``Runtime.agents``): within ``[agent.agents] max_depth`` and
        ``max_threads`` (else ``PlacementError``), on a budget carved from its parent's
        (``spec.budget``'s limits, if any), listed by ``agents.placed()`` and closed by
        ``agents.close``. ``await ref.ask(UserInput(...))`` drives it; stopping the parent
        stops it. ``LookupError`` if no agent runs at the parent's path."""
        return await self.agents.place(spec)

    async def spawn_agent(self, name: str) -> actors.ActorRef:
        """Place a subagent ``/agents/main/<name>`` sharing the main agent's provider, model
        and tools (with its own thread and approvals memory), like ``spawn``."""
        return await self.spawn(self.main_agent.spec.child(name))

    # ---- MCP (the pool is shared by every agent of this runtime) ----------------------------

    async def mcp_add(self, name: str, server: Any) -> Any:
        """Connect another MCP server now (hot connect); ``server`` is a ``McpStdioServer``
        or ``McpHttpServer``. Returns at once; its tools appear when it connects."""
        from nyzhi.config.mcp_sources import ServerEntry

        return await self.mcp.add(ServerEntry(name, server))

    def mcp_status(self) -> list[Any]:
        return self.mcp.statuses()

    async def mcp_resources(self) -> list[Any]:
        return await self.mcp.resources()

    async def mcp_read_resource(self, server: str, uri: str) -> str:
        return await self.mcp.read_resource(server, uri)

    async def mcp_prompts(self) -> list[Any]:
        return await self.mcp.prompts()

    async def mcp_prompt_text(self, server: str, name: str,
                              arguments: dict[str, str] | None = None) -> str:
        """A server prompt as text; ``submit`` it to send it as a user message."""
        return await self.mcp.prompt_text(server, name, arguments)

    async def compact(self, hint: str = "") -> None:
        """Compact the main agent's thread now; ``hint``: what the summary must keep."""
        await self.main_agent.loop.compact_now(hint)

    def undo(self) -> str:
        return self.main_agent.tooling.undo_last()

    def usage_totals(self) -> dict[str, Any]:
        return self.main_agent.loop.totals.as_dict()


@records.define(eq=False)
class _Assembly:
    """What ``open_runtime`` builds before it places any agent."""

    options: RuntimeOptions
    config: Any
    system: actors.ActorSystem
    bus: EventBus
    approvals: ApprovalBroker
    provider: pt.Provider
    tooling: Any  # nyzhi.core.runtime.assembly.Tooling
    catalog: Any  # nyzhi.core.runtime.roles.RoleCatalog
    hooks: HookRunner
    writer: SessionWriter | None
    resumed: Any  # nyzhi.core.runtime.sessions.Session
    session_id: str
    mcp: Any
    knowledge: SessionKnowledge
    factory: AgentFactory
    notices: tuple[str, ...]
    # What of the project's hooks, MCP servers and settings the user approved
    # (nyzhi.config.project_trust): the console asks about the rest once.
    project_trust: Any = None


@contextlib.asynccontextmanager
async def open_runtime(
    options: RuntimeOptions | None = None, **kwargs: Any
) -> AsyncIterator[Runtime]:
    """Assemble the runtime inside the caller's trio program; leaving the block stops every
    actor (agents, model servers, tool executors) and closes the session (``_shut_down``)."""
    options = options or RuntimeOptions(**kwargs)
    async with contextlib.AsyncExitStack() as stack:
        system = await stack.enter_async_context(actors.open_system(name="nyzhi"))
        base = await _assemble(stack, system, options)
        tree, teams = _agent_tree(base)
        membership = await open_membership(options, base.tooling, teams)
        main = tree.build_root(attrs.evolve(
            AgentSpec(ev.MAIN_AGENT, session=base.writer, prompt_hooks=True),
            **membership.spec_changes(tree.catalog)))
        main.loop.output_schema = options.output_schema
        base.knowledge.toolings = (main.tooling, base.tooling)
        if base.writer is not None:
            base.knowledge.on_plan_mode = base.writer.set_plan_mode
        # a resumed session starts in the mode it was left in (or plan mode, if asked)
        base.knowledge.set_plan_mode(options.plan or bool(
            base.resumed is not None and base.resumed.plan_mode))
        if base.resumed is not None:
            main.loop.messages.extend(base.resumed.messages)
            tree.restore(base.resumed.agents)
        checkpoints = _checkpoints(base)
        _listen(base, tree, teams)
        await _notify(stack, base, options)
        background = await stack.enter_async_context(trio.open_nursery())
        background.start_soon(trio.to_thread.run_sync, checkpoints.journal.store.prune_if_due,
                              base.session_id)
        await background.start(tree.run)
        await background.start(teams.run)
        trust = base.project_trust
        if options.interactive and trust is not None and not trust.approved:
            background.start_soon(assembly.ask_project_trust, base.approvals, base.tooling.context
                                  .workspace_root, trust, options.env)
        rt = await _start(base, tree, teams, main)
        rt.background = background
        rt.checkpoints = checkpoints
        await membership.bind(rt)
        # In nyz (``nyzhi.process``), everything built so far (modules, config, tools,
        # prompts) lives as long as the process: move it out of the collector's view. A full
        # collection walks every tracked object, and with hundreds of subagents running it
        # stalled the event loop for 100-250 ms at a time; frozen, it walks only what the
        # agents create. An embedding program's collector is its own: left as it was.
        if process.claimed():
            collector.freeze_runtime()
        try:
            yield rt
        finally:
            try:
                await _shut_down(rt, background, base.writer)
            finally:
                if process.claimed():  # what it leaves is collected before the next freeze
                    collector.runtime_released()


async def _assemble(stack: contextlib.AsyncExitStack, system: actors.ActorSystem,
                    options: RuntimeOptions) -> _Assembly:
    """Config, provider, tools, roles, hooks, session, MCP, index, knowledge and the agent
    factory: everything an agent is built from. What needs closing is on ``stack``."""
    loaded, project_trust, config = _load_config(options)
    workspace = loaded.workspace
    bus = EventBus()
    approvals = ApprovalBroker(bus)
    # The model cache is written behind the first request, by this nursery (closed with the
    # runtime, after the write).
    cache_writes = await stack.enter_async_context(trio.open_nursery())
    snapshot = _start_snapshot(options, workspace)
    async with trio.open_nursery() as asking:
        asking.start_soon(snapshot.wait)
        provider, notice = await assembly.open_provider(stack, system, config, options)
        limits = assembly.limits_resolver(config, provider, options,
                                          write_behind=cache_writes.start_soon)
        # Closed before the nursery: questions asked behind a kept answer are not waited for.
        stack.callback(limits.stop_refreshing)
        # The server is asked for the main model's window (when worth asking) while the rest is
        # assembled: the question overlaps the CPU work below instead of preceding it, and it
        # runs on the provider's own client, whose connection the first request then reuses.
        asking.start_soon(limits.resolve, provider.model)
        await trio.lowlevel.checkpoint()  # the questions go out before the CPU work below
        new_session = None
        if assembly.creates_session(options):  # its files are made beside the rest
            new_session = assembly.NewSession(options, workspace, provider)
            asking.start_soon(new_session.create)
        tooling, provider = await _build_tooling(config, workspace, options, approvals,
                                                 project_trust, provider)
        catalog, role_notes = assembly.load_roles(config, workspace, tooling)
        hooks, notes = assembly.build_hooks(config, workspace, options.cwd,
                                            claude=project_trust.claude_hooks)
        writer, resumed, session_id = _session_identity(options, workspace, provider,
                                                        new_session)
        _name_session(bus, tooling, hooks, session_id, options)
        mcp, auto_context = await _open_services(system, config, workspace, options, tooling,
                                                 approvals, bus, project_trust)
        knowledge = await load_session_knowledge(config, workspace.root, session_id, options.env)
    writer = _finish_writer(writer, new_session, tooling, options)
    base = _Assembly(
        options=options, config=config, system=system, bus=bus,
        approvals=approvals, provider=provider, tooling=tooling, catalog=catalog, hooks=hooks,
        writer=writer, resumed=resumed, session_id=session_id, mcp=mcp, knowledge=knowledge,
        factory=None,  # type: ignore[arg-type]  # set below, from the rest
        project_trust=project_trust,
        notices=_notices(
            *(str(w) for w in loaded.warnings), notice,
            # Resolved now (the nursery waited for it): the agents are built knowing the window.
            limits.notice(limits.known(provider.model)), *project_trust.lines,
            *workspace.notices, *tooling.notices, *notes, *role_notes, *knowledge.notices,
            *(writer.notices if writer is not None else ())),
    )
    base.factory = await _agent_factory(base, workspace, auto_context, limits,
                                        snapshot.environment)
    return base


def _start_snapshot(options: RuntimeOptions, workspace: Any) -> _EnvironmentSnapshot:
    """A new session's environment (``git status``, a child process: 5-20 ms, far more in a
    large repository) is taken in a thread started here, beside the CPU work of opening the
    provider and building the tools, instead of after it. A resumed one says what it was."""
    snapshot = _EnvironmentSnapshot()
    if not assembly.resumes_session(options):
        snapshot.start(workspace)
    return snapshot


def _load_config(options: RuntimeOptions) -> tuple[Any, Any, Any]:
    """The loaded config (with the options' overrides) and the project's trust; the app's own
    directories are made owner-only first (sessions, credentials and logs go there)."""
    from nyzhi.config import paths
    from nyzhi.config.project_trust import load_trusted

    paths.private_app_dirs(options.env)
    # The project's keys that are not SAFE (hooks, MCP servers, hosts, the environment,
    # looser limits...) count only as last approved by a person, never by a trust mode.
    loaded, project_trust = load_trusted(options.cwd, options.env,
                                         approve=options.approve_project_config)
    config = loaded.config.with_overrides(
        provider=options.provider, trust=options.trust, sandbox=options.sandbox,
        max_steps=options.max_steps, network=options.network,
    )
    return loaded, project_trust, config


async def _build_tooling(config: Any, workspace: Any, options: RuntimeOptions,
                         approvals: ApprovalBroker, project_trust: Any,
                         provider: Any) -> tuple[Any, Any]:
    """The tools, and the provider wrapped as every agent uses it: redacted and gated."""
    tooling = assembly.build_tooling(config, workspace, options, approvals,
                                     claude_allow=project_trust.claude_allow)
    assembly.provider_search_tool(config, tooling.registry, provider)
    await trio.lowlevel.checkpoint()
    # Every request to the model leaves through the redactor (system prompt included).
    provider = RedactingProvider(provider, tooling.redactor)
    # ... and, once the runtime is in a team, waits for a slot of the team's limit.
    provider = ModelCallGate(provider)
    tooling.context.leases.wait = config.agent.agents.write_lease_wait
    return tooling, provider


def _session_identity(options: RuntimeOptions, workspace: Any, provider: Any,
                      new_session: Any) -> tuple[SessionWriter | None, Any, str]:
    """The session's writer, what it resumes and its id. A new session being created in
    the background has its id already; its writer comes once the nursery has waited for it."""
    if new_session is not None:
        return None, None, new_session.id
    _store, writer, resumed = assembly.open_session(options, workspace, provider)
    session_id = writer.id if writer else (resumed.id if resumed else uuid.uuid4().hex)
    return writer, resumed, session_id


def _name_session(bus: EventBus, tooling: Any, hooks: HookRunner, session_id: str,
                  options: RuntimeOptions) -> None:
    """Give the bus its redactor and the tools and hooks the session's id (and, for Claude
    Code hooks, the transcript and permission mode they read)."""
    bus.redactor = tooling.redactor  # known secrets never reach an event or the log
    if tooling.context.shells is not None:  # process_start / process_exit on the bus
        publish_events(tooling.context.shells, bus.publish)
    tooling.context.session_id = hooks.session_id = session_id
    if any(spec.claude_event for spec in hooks.specs):  # Claude Code hooks read these
        from nyzhi.core.runtime.hooks.transcript import transcript_path

        hooks.transcript_path = str(transcript_path(session_id, options.env))
        hooks.permission_mode = _permission_mode(tooling)


async def _open_services(system: actors.ActorSystem, config: Any, workspace: Any,
                         options: RuntimeOptions, tooling: Any, approvals: ApprovalBroker,
                         bus: EventBus, project_trust: Any) -> tuple[Any, Any]:
    """The runtime's shared services: MCP, the browser, language servers and the index.
    Returns the MCP pool and the index's auto-context."""
    # MCP: one pool under /mcp for every agent; servers connect in the background.
    mcp = await assembly.open_mcp(system, config, workspace, options, tooling.registry,
                                  approvals, bus.publish,
                                  project_approved=project_trust.claude_hooks,
                                  redactor=tooling.redactor)
    # The browser tools' Chromium: one per runtime under /services, started at first use.
    tooling.context.browser = browser_pool(system, config, options.env,
                                           tooling.context.env_policy, tooling.context.net,
                                           tooling.redactor)
    # Language servers: one pool under /lsp for every agent; servers start on first use.
    tooling.context.lsp = await assembly.open_lsp(system, config, workspace, options,
                                                  tooling.context)
    auto_context = await assembly.open_index(
        system, config, workspace.root, bus.publish, tooling.registry, options.env)
    return mcp, auto_context


def _finish_writer(writer: SessionWriter | None, new_session: Any, tooling: Any,
                   options: RuntimeOptions) -> SessionWriter | None:
    """The session's writer, ready: a new session's now (the nursery waited for its files).
    It redacts what it keeps; a team member's session is kept even empty."""
    if new_session is not None:
        writer = new_session.writer()
    if writer is not None:
        writer.redactor = tooling.redactor
        # a team member's session is named in the team's store, and its next process resumes
        # it by id even if it never took a turn: kept, empty or not
        writer.keep_empty = bool(getattr(options, "member", None))
    return writer


def _notices(*lines: str | None) -> tuple[str, ...]:
    """One line per problem: two readers of one broken file say the same thing once."""
    return tuple(dict.fromkeys(n for n in lines if n))


class _EnvironmentSnapshot:
    """The prompt's environment for a new session, taken in a thread while the runtime is
    assembled. The thread starts at once (``trio.to_thread`` would start it only when this
    task next waits, after the CPU work it is meant to overlap)."""

    def __init__(self) -> None:
        self.environment: Any = None
        self._done: trio.Event | None = None
        self._error: BaseException | None = None

    def start(self, workspace: Any) -> None:
        from nyzhi.core.prompt_env import take_environment

        done = self._done = trio.Event()
        token = trio.lowlevel.current_trio_token()

        def deliver(outcome: Any) -> None:
            try:
                self.environment = outcome.unwrap()
            except BaseException as exc:  # raised in the runtime's task by ``wait``
                self._error = exc
            with contextlib.suppress(trio.RunFinishedError):
                token.run_sync_soon(done.set)

        trio.lowlevel.start_thread_soon(lambda: take_environment(workspace), deliver)

    async def wait(self) -> None:
        """Until the snapshot is taken; a cancelled start-up too waits for it (``git status``
        is bounded by ``GIT_TIMEOUT_S``), so no git process outlives the runtime."""
        if self._done is not None:
            with trio.CancelScope(shield=True):
                await self._done.wait()
        if self._error is not None:
            raise self._error


async def _agent_factory(base: _Assembly, workspace: Any, auto_context: Any,
                         limits: Any, environment: Any = None) -> AgentFactory:
    """The one factory every agent of the runtime is built by (``nyzhi.core.runtime.agent_factory``):
    the session's prompt parts (with skills and memory) and turn settings from config."""
    config, options, knowledge = base.config, base.options, base.knowledge
    return AgentFactory(
        provider=base.provider,
        tooling=base.tooling,
        hooks=base.hooks,
        approvals=base.approvals,
        emit=base.bus.publish,
        prompt=attrs.evolve(
            await session_parts(
                workspace=workspace, cwd=options.cwd, config=config, resumed=base.resumed,
                environment=environment,
            ),
            skills=knowledge.skills, memory=knowledge.memory_text,
        ),
        settings=TurnSettings(
            max_steps=config.agent.max_steps,
            archive_dir=workspace.root / ".nyzhi" / "context" / "history",
            compaction_threshold=config.agent.auto_compact_threshold,
            compact_instructions=config.agent.compact_instructions or "",
        ),
        session_id=base.session_id,
        mcp=base.mcp,
        wait_for_mcp=not options.interactive,
        resumed=base.resumed,
        auto_context=auto_context,
        turn_context=knowledge.turn_context, prepare_prompt=knowledge.prepare,
        limits=limits,
        thinking=options.thinking if options.thinking is not None
        else config.agent.thinking.level if config.agent.thinking is not None else None,
    )


def _agent_tree(base: _Assembly) -> tuple[SubagentManager, TeamRuntime]:
    """The agent tree (limits, the root budget, the journal) and the teams that ask it to
    place their members; every tool view shares both."""
    options, agents_config = base.options, base.config.agent.agents
    root_budget = Budget(
        Limits.from_config(agents_config.budget).merged(options.budget or Limits()))
    tree = SubagentManager(
        system=base.system, factory=base.factory, catalog=base.catalog,
        models=RoleModels(subagent_model=base.config.agent.subagent_model),
        root_budget=root_budget, emit=base.bus.publish, max_threads=agents_config.max_threads,
        max_depth=agents_config.max_depth,
        journal=journal_to(base.writer) if base.writer is not None else None,
    )
    base.tooling.context.agents = tree  # before any agent is built: every view shares it
    teams = TeamRuntime(
        system=base.system, factory=base.factory, tree=tree, emit=base.bus.publish,
        hooks=base.hooks, session_id=base.session_id, env=options.env,
        mode=options.teammate_mode, interactive=options.interactive,
        gate=base.provider, model_calls=base.config.team.max_concurrent_model_calls,
        store=options.team_store, nodes=base.tooling.context.nodes,
        proxy_model_calls=base.config.team.proxy_model_calls,
    )
    base.tooling.context.teams = teams
    return tree, teams


def _checkpoints(base: _Assembly) -> Any:
    """The checkpoint recorder, watching the change log every agent's tools share and
    listening to the bus first (a prompt's point is opened before anything else hears of it).
    """
    from nyzhi.core.runtime.checkpoints import Recorder

    context = base.tooling.context
    recorder = Recorder.attach(base.session_id, context.workspace_root, context.changes,
                               writer=base.writer, redactor=base.tooling.redactor,
                               discard=base.writer is None and base.resumed is None)
    base.bus.add_listener(recorder.on_event, name="checkpoints",
                          only=(ev.TurnStart, ev.TurnComplete))
    return recorder


def _listen(base: _Assembly, tree: SubagentManager, teams: TeamRuntime) -> None:
    """The bus's listeners, in order: budgets and statuses, the session log, the
    ``after_turn`` hook, the teams."""
    bus = base.bus
    bus.add_listener(tree.on_event, name="subagents", only=(ev.Usage, ev.AgentStatus))
    if base.writer is not None:
        bus.add_listener(_session_listener(base.writer), name="session")
    bus.add_listener(_after_turn_listener(base.hooks, base.session_id), name="after_turn hook",
                     only=(ev.TurnComplete,))
    if base.hooks.transcript_path:
        from nyzhi.core.runtime.hooks.transcript import ClaudeTranscript

        bus.add_listener(ClaudeTranscript(Path(base.hooks.transcript_path), base.session_id,
                                          base.hooks.cwd),
                         name="claude transcript", only=ClaudeTranscript.LISTENS)
    bus.add_listener(teams.on_event, name="teams")


async def _notify(stack: contextlib.AsyncExitStack, base: _Assembly,
                  options: RuntimeOptions) -> None:
    """``[notify]``: long turns and waiting approvals told to the person (``nyzhi.core.runtime.notify``).
    Entered before the runtime's other tasks, so it is left last: notes queued by the end of
    the session are still sent."""
    from nyzhi.core.runtime.notify import notifier_for

    notifier = notifier_for(base.config, options, base.session_id,
                            Path(base.tooling.context.workspace_root).name, base.bus.publish,
                            base.hooks)
    if notifier is not None:
        await stack.enter_async_context(notifier.running())
        base.bus.add_listener(notifier.on_event, name="notify")


async def _start(base: _Assembly, tree: SubagentManager, teams: TeamRuntime,
                 main: Agent) -> Runtime:
    """Record the session's start, start the main agent's actor under ``/agents`` and fire
    the ``session_start`` hook."""
    hooks, session_id, options = base.hooks, base.session_id, base.options
    session_start = ev.SessionStart(
        session_id=session_id, cwd=str(options.cwd), provider=base.provider.name,
        model=base.provider.model, prompt=main.prompt.describe(main.loop.tool_schemas()),
    )
    if base.writer is not None:
        base.writer.append_event(session_start)

    async def lifecycle(event: str, path: str, status: str) -> None:
        # Claude Code's SubagentStop hooks run inside the subagent's turn, where they can make
        # it go on (agent_factory._stop_hooks); at the end of its work, only nyz's own.
        only = "ours" if event == "subagent_stop" else None
        await hooks.fire(event, {"session_id": session_id, "agent": path, "status": status},
                         only=only)

    tree.lifecycle = teams.lifecycle = lifecycle
    agents = base.system.spawn(actors.Supervisor, name="agents",
                               restart=actors.Restart.PERMANENT)
    main_ref = await tree.start_root(main, agents)
    rt = Runtime(
        system=base.system, bus=base.bus, approvals=base.approvals, hooks=hooks,
        factory=base.factory, main_agent=main, main=main_ref, session_start=session_start,
        agents=tree, mcp=base.mcp, knowledge=base.knowledge, teams=teams,
        notices=(*base.notices, *main.notices), thinking_level=base.factory.thinking,
        untrusted_notice=base.project_trust.notice,
        status_line=_status_line(base),
    )
    started = await hooks.fire("session_start", {
        "session_id": session_id, "cwd": str(options.cwd), "model": base.provider.model,
        "source": "resume" if base.resumed is not None else "startup"})
    if started.context:  # reaches the first request (issue 56: it reached none)
        base.factory.session_context.append(started.context)
    return rt


async def _shut_down(rt: Runtime, background: trio.Nursery,
                     writer: SessionWriter | None) -> None:
    """Leaving ``open_runtime``, in this order, shielded so that a cancelled caller still
    gets all of it: the team members' drivers stop (their status files say "stopped"); the
    tree's and the teams' watchers are cancelled; every actor stops, children before parents
    (turns cancelled, tool subprocesses killed, model servers stopped); the ``session_end``
    hook fires, the last one; the session log closes. The exit stack then closes what the
    assembly opened (the provider's connections, the actor system)."""
    with trio.CancelScope(shield=True):
        await rt.teams.stop()
    background.cancel_scope.cancel()
    with trio.CancelScope(shield=True):
        await rt.system.shutdown()  # background processes killed with their agents
        loopback = getattr(rt.tooling.context.sandbox, "loopback", None)
        if loopback is not None:  # the shared network namespace's holder (tools.netns)
            await loopback.aclose()
        await rt.hooks.fire("session_end", {"session_id": rt.session_id})
        if writer is not None:
            writer.close()
        if rt.checkpoints is not None:
            await trio.to_thread.run_sync(rt.checkpoints.close)


def _session_listener(writer: SessionWriter) -> Listener:
    """Every event goes to the session log. A write that failed (full or read-only disk; also
    one made by the agent itself, such as a thread message) is raised once, so the bus
    reports it; the writer has stopped, and the run goes on unsaved."""
    reported = False

    async def log_event(event: ev.Event) -> None:
        nonlocal reported
        writer.append_event(event)
        if writer.fault is not None and not reported:
            reported = True
            raise writer.fault

    return log_event


def _status_line(base: _Assembly) -> Any:
    """The project's statusLine, only when its Claude settings are approved (like hooks)."""
    if not base.project_trust.claude_hooks:
        return None
    from nyzhi.core.runtime.status_line import read_status_line

    return read_status_line(Path(base.tooling.context.workspace_root))


def _permission_mode(tooling: Any) -> Callable[[], str]:
    """Claude Code's ``permission_mode`` for the session now: ``plan`` in plan mode, else the
    trust mode's nearest (``nyzhi.core.runtime.hooks.claude_io.PERMISSION_MODES``)."""
    from nyzhi.core.runtime.hooks.claude_io import PERMISSION_MODES

    def mode() -> str:
        gates = tooling.gates
        if gates.plan_mode:
            return "plan"
        return PERMISSION_MODES.get(gates.trust.mode, "default")

    return mode


def _after_turn_listener(hooks: HookRunner, session_id: str) -> Listener:
    """A finished turn that was not cancelled fires the ``after_turn`` hook."""

    async def after_turn(event: ev.Event) -> None:
        # Claude Code's Stop hooks run inside the main agent's turn, where they can make it
        # go on (nyzhi.core.runtime.agent_factory._stop_hooks); here only nyz's own.
        if isinstance(event, ev.TurnComplete) and event.stop_reason != "cancelled":
            await hooks.fire(
                "after_turn", {"session_id": session_id, "agent": event.agent, "text": event.text},
                only="ours",
            )

    return after_turn
