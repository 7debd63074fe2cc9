"""One runtime assembly path for every front end.

``open_runtime`` builds, in order: config (three layers + CLI overrides), the actor system,
the provider (configured, or the local offline model as a supervised actor), the tool
registry with its gates and sandbox, hooks, the session, the event bus, and the main agent
actor at ``/agents/main``. The console, ``nyz run``, teams, the web console and library users
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
from nyzhi.core.event_bus import EventBus
from nyzhi.core.prompt import PromptParts, build_system_prompt
from nyzhi.core.tool_step import ApprovalBroker, GatedToolStep
from nyzhi.core.turn import TurnLoop, TurnSettings


@attrs.define
class RuntimeOptions:
    """What a front end asks for; ``None`` means "as configured"."""

    cwd: Path = attrs.field(factory=Path.cwd, converter=Path)
    provider: str | None = None
    model: str | None = None
    trust: str | None = None
    sandbox: str | None = None
    max_steps: int | None = None
    ephemeral: bool = False
    continue_latest: bool = False
    session: str | None = None
    interactive: bool = False
    # Library and test seams: a ready provider object, extra environment for key lookup.
    provider_instance: Any = None
    env: dict[str, str] | None = None


class Runtime:
    """The assembled runtime. Create it with ``open_runtime``."""

    def __init__(self) -> None:
        self.system: actors.ActorSystem
        self.bus = EventBus()
        self.notices: list[str] = []
        self.session_id: str = ""
        self.provider_name: str = ""
        self.model: str = ""
        self.session_start: ev.SessionStart
        self.loop: TurnLoop
        self.main: actors.ActorRef
        self.approvals = ApprovalBroker(self.bus)
        self.tooling: Any = None
        self.hooks: Any = None
        self.mcp: Any = None  # nyzhi.core.mcp.McpPool
        self._make_loop: Any = None

    # ---- front-end API ----------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def subscribe(self) -> AsyncIterator[trio.MemoryReceiveChannel[Any]]:
        """Receive every event from now on, in order."""
        async with self.bus.subscribe() as channel:
            yield channel

    async def submit(self, text: str) -> TurnHandle:
        """Queue user input for the main agent; await ``handle.wait()`` for the outcome."""
        return await self.main.ask(UserInput(text))

    async def cancel(self) -> bool:
        """Cancel the running turn (Esc / Ctrl-C)."""
        return bool(await self.main.ask(Cancel()))

    async def answer_approval(self, request_id: str, decision: str) -> None:
        """``decision``: "approve", "always" (for this session) or "deny"."""
        self.approvals.answer(request_id, decision)

    async def spawn_agent(self, name: str) -> actors.ActorRef:
        """Start a subagent under the main agent, sharing its provider and tools (with its own
        path, thread and approvals memory). ``await ref.ask(UserInput(...))`` drives it."""
        return await self.main.ask(SpawnSubagent(name, self._make_loop(f"/agents/main/{name}")))

    async def answer_question(self, request_id: str, text: str) -> None:
        """Answer a ``user_question`` event (the ``ask_user`` tool) with the chosen value."""
        self.approvals.answer(request_id, text)

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

    async def compact(self) -> None:
        await self.loop.compact_now()

    def undo(self) -> str:
        return self.tooling.undo_last()

    def usage_totals(self) -> dict[str, Any]:
        return self.loop.totals.as_dict()


@contextlib.asynccontextmanager
async def open_runtime(
    options: RuntimeOptions | None = None, **kwargs: Any
) -> AsyncIterator[Runtime]:
    """Assemble the runtime inside the caller's trio program; leaving the block stops every
    actor (agents, model servers, tool executors) and closes the session."""
    from nyzhi.config import load_config

    options = options or RuntimeOptions(**kwargs)
    loaded = load_config(options.cwd, env=options.env)
    config = loaded.config
    workspace = loaded.workspace
    rt = Runtime()
    async with contextlib.AsyncExitStack() as stack:
        system = await stack.enter_async_context(actors.open_system(name="nyzhi"))
        rt.system = system
        provider, notice = await assembly.open_provider(stack, system, config, options)
        if notice:
            rt.notices.append(notice)
        rt.provider_name, rt.model = provider.name, provider.model
        rt.tooling = assembly.build_tooling(config, workspace, options, rt.approvals)
        rt.hooks, notes = assembly.build_hooks(config, workspace, options.cwd)
        rt.notices.extend(notes)
        _store, writer, resumed = assembly.open_session(options, workspace, provider)
        rt.session_id = writer.id if writer else (resumed.id if resumed else uuid.uuid4().hex)
        rt.tooling.context.session_id = rt.session_id
        rt.hooks.session_id = rt.session_id
        step = GatedToolStep(rt.tooling, rt.hooks, rt.bus.publish, "/agents/main")
        # MCP: one pool under /mcp for every agent; servers connect in the background.
        rt.mcp = await assembly.open_mcp(system, config, workspace, options,
                                         rt.tooling.registry, rt.approvals, rt.bus.publish)

        def system_prompt() -> str:
            return build_system_prompt(
                PromptParts(
                    workspace_root=workspace.root,
                    cwd=options.cwd,
                    rules=workspace.rules_text,
                    custom_instructions=config.agent.custom_instructions or "",
                    model=provider.model,
                    mcp_summaries=rt.mcp.summaries(),
                    extra=(rt.tooling.deferred_text(),),
                )
            )

        settings = TurnSettings(
            max_steps=options.max_steps or config.agent.max_steps,
            context_window=_context_window(provider.model),
            archive_dir=workspace.root / ".nyzhi" / "context" / "history",
            compaction_threshold=config.agent.auto_compact_threshold,
            compact_instructions=config.agent.compact_instructions or "",
        )

        async def on_message(message: Any) -> None:
            if writer is not None:
                writer.append_message(message)

        async def on_thread_replaced(messages: list[Any]) -> None:
            if writer is not None:
                writer.replace_thread(messages)

        async def on_prompt(prompt: str) -> tuple[str, str | None]:
            if not options.interactive:  # nobody can ask again: let starting servers connect
                await rt.mcp.wait_started()
            outcome = await rt.hooks.fire(
                "user_prompt_submit", {"prompt": prompt, "session_id": rt.session_id}
            )
            if outcome.blocked:
                return prompt, outcome.message or "blocked by a user_prompt_submit hook"
            if outcome.context:
                prompt = f"{prompt}\n\n{outcome.context}"
            return prompt, None

        rt.loop = TurnLoop(
            agent_path="/agents/main",
            provider=provider,
            tool_schemas=rt.tooling.schemas,
            tool_step=step,
            system_prompt=system_prompt,
            emit=rt.bus.publish,
            settings=settings,
            on_message=on_message,
            on_thread_replaced=on_thread_replaced,
            on_prompt=on_prompt,
            cost=_cost,
            session_stem=rt.session_id,
        )

        def make_loop(path: str) -> TurnLoop:
            tooling = rt.tooling.for_agent(path, rt.approvals)
            return TurnLoop(
                agent_path=path,
                provider=provider,
                tool_schemas=tooling.schemas,
                tool_step=GatedToolStep(tooling, rt.hooks, rt.bus.publish, path),
                system_prompt=system_prompt,
                emit=rt.bus.publish,
                settings=settings,
                cost=_cost,
                session_stem=f"{rt.session_id}-{path.rsplit('/', 1)[-1]}",
            )

        rt._make_loop = make_loop

        async def lifecycle(event: str, path: str, status: str) -> None:
            await rt.hooks.fire(event, {"session_id": rt.session_id, "agent": path,
                                        "status": status})
        if resumed is not None:
            rt.loop.messages.extend(resumed.messages)

        async def after_event(event: Any) -> None:
            if writer is not None:
                writer.append_event(event)
            if event.type == "turn_complete" and event.stop_reason != "cancelled":
                await rt.hooks.fire(
                    "after_turn",
                    {"session_id": rt.session_id, "agent": event.agent, "text": event.text},
                )

        rt.bus.add_listener(after_event)
        rt.session_start = ev.SessionStart(
            session_id=rt.session_id, cwd=str(options.cwd), provider=rt.provider_name,
            model=rt.model,
        )
        if writer is not None:
            writer.append_event(rt.session_start)
        agents = system.spawn(actors.Supervisor, name="agents", restart=actors.Restart.PERMANENT)
        rt.main = await agents.ask(
            actors.StartChild(
                actors.ChildSpec(
                    AgentActor, (rt.loop, rt.bus.publish, lifecycle), name="main",
                    restart=actors.Restart.TRANSIENT,
                )
            )
        )
        await rt.hooks.fire("session_start", {"session_id": rt.session_id, "cwd": str(options.cwd)})
        try:
            yield rt
        finally:
            with trio.CancelScope(shield=True):
                await system.shutdown()  # agents first, so session_end is the last hook
                await rt.hooks.fire("session_end", {"session_id": rt.session_id})
                if writer is not None:
                    writer.close()


def _context_window(model: str) -> int:
    try:
        from nyzhi.provider.models import model_info

        return model_info(model).context_window
    except Exception:
        return 8192


def _cost(usage: Any, model: str) -> float:
    try:
        from nyzhi.provider.models import cost

        return cost(usage, model)
    except Exception:
        return 0.0


def rerun_session(session: Any, provider: Any, args: Any) -> int:
    """``nyz replay ID --rerun``: feed the session's user prompts to a fresh, ephemeral runtime
    whose model is the recorded output (``provider``), so tools run again for real and the
    printed answers can be compared with the recording. Returns the exit code."""
    import sys

    prompts = [m.content for m in session.history if m.role == "user"]
    cwd = Path(session.meta.cwd) if session.meta.cwd and Path(session.meta.cwd).is_dir() else Path.cwd()

    async def main() -> int:
        options = RuntimeOptions(
            cwd=cwd, provider_instance=provider, ephemeral=True,
            trust=getattr(args, "trust", None),
        )
        failed = False
        async with open_runtime(options) as rt:
            for prompt in prompts:
                handle = await rt.submit(prompt)
                outcome = await handle.wait()
                if outcome is None or outcome.is_error:
                    failed = True
                print(f"> {prompt}\n{outcome.text if outcome else '(no answer)'}\n")
                sys.stdout.flush()
        return 1 if failed else 0

    return trio.run(main)
