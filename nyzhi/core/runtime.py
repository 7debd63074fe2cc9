"""One runtime assembly path for every front end.

``open_runtime`` builds, in order: config (three layers, then the front end's overrides through
``Config.with_overrides``), the actor system, the provider (configured, or the local offline
model as a supervised actor), the tool registry with its gates and sandbox, hooks, the session,
the event bus, the agent factory, and the main agent actor at ``/agents/main``. Every agent,
the main one included, is built by that factory from an ``AgentSpec``
(``nyzhi.core.agent_factory``). The console, ``nyz run``, teams, the web console and library users
all get the same thing; front ends only consume events (``subscribe``) and answer approvals
and questions.

    async with nyzhi.open_runtime(RuntimeOptions(cwd=path, trust="full")) as rt:
        handle = await rt.submit("list the python files")
        outcome = await handle.wait()
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import trio

import actors
from nyzhi.core import assembly
from nyzhi.core import events as ev
from nyzhi.core.agent import AgentActor, Cancel, SpawnSubagent, TurnHandle, UserInput
from nyzhi.core.agent_factory import Agent, AgentFactory, AgentSpec
from nyzhi.core.event_bus import EventBus, Listener
from nyzhi.core.hooks import HookRunner
from nyzhi.core.prompt import session_parts
from nyzhi.core.session_knowledge import SessionKnowledge, load_session_knowledge
from nyzhi.core.sessions.store import SessionWriter
from nyzhi.core.tool_step import ApprovalAnswer, ApprovalBroker
from nyzhi.core.turn import TurnSettings
from nyzhi.provider import types as pt


@attrs.define
class RuntimeOptions:
    """What a front end asks for; ``None`` means "as configured"."""

    cwd: Path = attrs.field(factory=Path.cwd, converter=Path)
    provider: str | None = None
    model: str | None = None
    trust: str | None = None
    sandbox: str | None = None
    network: bool | None = None  # True: ``nyz run --network`` (sandboxed commands get the network)
    max_steps: int | None = None
    ephemeral: bool = False
    continue_latest: bool = False
    session: str | None = None
    interactive: bool = False
    plan: bool = False  # start in plan mode (read-only tools; see Runtime.knowledge)
    # Library and test seams: a ready provider object, extra environment for key lookup.
    provider_instance: pt.Provider | None = None
    env: dict[str, str] | None = None


@attrs.define(eq=False)
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
    notices: tuple[str, ...] = ()
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
        return self.session_start.model

    # ---- front-end API ----------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def subscribe(self) -> AsyncIterator[trio.MemoryReceiveChannel[ev.Event]]:
        """Receive every event from now on, in order."""
        async with self.bus.subscribe() as channel:
            yield channel

    async def submit(self, text: str) -> TurnHandle:
        """Queue user input for the main agent; await ``handle.wait()`` for the outcome."""
        return await self.main.ask(UserInput(text))

    async def cancel(self) -> bool:
        """Cancel the running turn (Esc / Ctrl-C)."""
        return bool(await self.main.ask(Cancel()))

    async def answer_approval(self, request_id: str, answer: ApprovalAnswer | str) -> None:
        """Answer an ``approval_request``. A string must be an ``ApprovalAnswer`` value
        ("approve", "always" for this session, "deny"); anything else is a ``ValueError``."""
        self.approvals.answer_approval(request_id, ApprovalAnswer.parse(answer))

    async def answer_question(self, request_id: str, text: str) -> None:
        """Answer a ``user_question`` event (the ``ask_user`` tool) with the chosen value."""
        self.approvals.answer_question(request_id, text)

    async def spawn(self, spec: AgentSpec) -> actors.ActorRef:
        """Start the agent ``spec`` describes under its parent (the agent one level up its
        path), built like every agent by the runtime's factory. ``await ref.ask(UserInput(...))``
        drives it; stopping the parent stops it."""
        parent_path, _, name = spec.path.rpartition("/")
        parent = self.system.lookup(parent_path)
        if parent is None:
            raise LookupError(f"cannot start {spec.path}: no running agent at {parent_path}")
        return await parent.ask(SpawnSubagent(name, self.factory.build(spec).loop))

    async def spawn_agent(self, name: str) -> actors.ActorRef:
        """Start a subagent ``/agents/main/<name>`` sharing the main agent's provider, model
        and tools (with its own thread and approvals memory)."""
        return await self.spawn(self.main_agent.spec.child(name))

    async def compact(self) -> None:
        await self.main_agent.loop.compact_now()

    def undo(self) -> str:
        return self.main_agent.tooling.undo_last()

    def usage_totals(self) -> dict[str, Any]:
        return self.main_agent.loop.totals.as_dict()


@contextlib.asynccontextmanager
async def open_runtime(
    options: RuntimeOptions | None = None, **kwargs: Any
) -> AsyncIterator[Runtime]:
    """Assemble the runtime inside the caller's trio program; leaving the block stops every
    actor (agents, model servers, tool executors) and closes the session."""
    from nyzhi.config import load_config

    options = options or RuntimeOptions(**kwargs)
    loaded = load_config(options.cwd, env=options.env)
    config = loaded.config.with_overrides(
        provider=options.provider, trust=options.trust, sandbox=options.sandbox,
        max_steps=options.max_steps, network=options.network,
    )
    workspace = loaded.workspace
    bus = EventBus()
    approvals = ApprovalBroker(bus)
    async with contextlib.AsyncExitStack() as stack:
        system = await stack.enter_async_context(actors.open_system(name="nyzhi"))
        provider, notice = await assembly.open_provider(stack, system, config, options)
        tooling = assembly.build_tooling(config, workspace, options, approvals)
        hooks, notes = assembly.build_hooks(config, workspace, options.cwd)
        _store, writer, resumed = assembly.open_session(options, workspace, provider)
        bus.redactor = tooling.redactor  # known secrets never reach an event or the log
        if writer is not None:
            writer.redactor = tooling.redactor
        session_id = writer.id if writer else (resumed.id if resumed else uuid.uuid4().hex)
        tooling.context.session_id = hooks.session_id = session_id
        knowledge = await load_session_knowledge(config, workspace.root, session_id, options.env)
        factory = AgentFactory(
            provider=provider,
            tooling=tooling,
            hooks=hooks,
            approvals=approvals,
            emit=bus.publish,
            prompt=attrs.evolve(
                await session_parts(
                    workspace=workspace, cwd=options.cwd, config=config, resumed=resumed
                ),
                skills=knowledge.skills, memory=knowledge.memory_text,
            ),
            settings=TurnSettings(
                max_steps=config.agent.max_steps,
                archive_dir=workspace.root / ".nyzhi" / "context" / "history",
                compaction_threshold=config.agent.auto_compact_threshold,
                compact_instructions=config.agent.compact_instructions or "",
            ),
            session_id=session_id,
            resumed=resumed,
            turn_context=knowledge.turn_context,
        )
        main = factory.build(AgentSpec(ev.MAIN_AGENT, session=writer, prompt_hooks=True))
        knowledge.toolings = (main.tooling, tooling)
        knowledge.set_plan_mode(options.plan)
        if resumed is not None:
            main.loop.messages.extend(resumed.messages)
        bus.add_listener(_session_listener(writer, hooks, session_id))
        session_start = ev.SessionStart(
            session_id=session_id, cwd=str(options.cwd), provider=provider.name,
            model=provider.model, prompt=main.prompt.describe(main.loop.tool_schemas()),
        )
        if writer is not None:
            writer.append_event(session_start)

        async def lifecycle(event: str, path: str, status: str) -> None:
            await hooks.fire(event, {"session_id": session_id, "agent": path, "status": status})

        agents = system.spawn(actors.Supervisor, name="agents", restart=actors.Restart.PERMANENT)
        main_ref = await agents.ask(
            actors.StartChild(
                actors.ChildSpec(
                    AgentActor, (main.loop, bus.publish, lifecycle), name=main.spec.name,
                    restart=actors.Restart.TRANSIENT,
                )
            )
        )
        rt = Runtime(
            system=system, bus=bus, approvals=approvals, hooks=hooks, factory=factory,
            main_agent=main, main=main_ref, session_start=session_start, knowledge=knowledge,
            notices=tuple(n for n in (*(str(w) for w in loaded.warnings), notice, *notes) if n),
        )
        await hooks.fire("session_start", {"session_id": session_id, "cwd": str(options.cwd)})
        try:
            yield rt
        finally:
            with trio.CancelScope(shield=True):
                await system.shutdown()  # agents first, so session_end is the last hook
                await hooks.fire("session_end", {"session_id": session_id})
                if writer is not None:
                    writer.close()


def _session_listener(writer: SessionWriter | None, hooks: HookRunner, session_id: str) -> Listener:
    """Every event goes to the session log (when there is one); a finished turn that was not
    cancelled fires the ``after_turn`` hook."""

    async def after_event(event: ev.Event) -> None:
        if writer is not None:
            writer.append_event(event)
        if isinstance(event, ev.TurnComplete) and event.stop_reason != "cancelled":
            await hooks.fire(
                "after_turn", {"session_id": session_id, "agent": event.agent, "text": event.text}
            )

    return after_event
