"""Every agent is built here, from an ``AgentSpec``: main agent, subagents and (later) teammates.

An agent is its turn loop (thread, model, tool schemas, system prompt) plus its tools (a
fenced view of the registry, its own approvals memory). What differs between the main agent
and a subagent is data in its spec, never a second construction path:

* ``path`` — where it lives in the actor tree (``/agents/main``, ``/agents/main/explorer``);
* ``role`` and ``role_prompt`` — what it is told it is;
* ``model`` — per request, on the runtime's provider (None: the provider's model);
* ``tools`` / ``disallowed_tools`` — its tool fence (a child never gets more than its parent);
* ``max_steps`` — its step budget (None: ``[agent] max_steps``);
* ``session`` — where its thread is journaled (the session log; a subagent's thread is
  journaled in the same log under its path, see ``nyzhi.core.runtime.sessions``);
* ``prompt_hooks`` — whether its input fires ``user_prompt_submit`` hooks. Only input typed
  by a person does: a subagent's input is written by its parent model, not by the user;
* ``fence`` — its role (``nyzhi.core.runtime.roles.Role``), whose tool fence narrows the tools and gates;
* ``budget`` — its ``nyzhi.core.runtime.budget.Budget``, asked before every model step;
* ``thinking`` — its thinking level (a role's, or inherited; None: the runtime's), fitted to
  its model when built (``nyzhi.provider.thinking``).

Every agent of a runtime shares one approvals memory, so "always for this session" covers the
whole tree.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import attrs

from nyzhi import convert, records
from nyzhi.core import events as ev
from nyzhi.core.event_bus import Emit
from nyzhi.core.loop.background import notices as background_notices
from nyzhi.core.loop.context_window import Calibration
from nyzhi.core.loop.prompt import PromptParts, SessionPrompt, agent_parts
from nyzhi.core.loop.state_record import StateKeeper
from nyzhi.core.loop.tool_step import ApprovalBroker, GatedToolStep, PermissionHooks
from nyzhi.core.loop.turn import TurnLoop, TurnSettings
from nyzhi.core.runtime.assembly import Tooling
from nyzhi.core.runtime.hooks import HookRunner
from nyzhi.core.runtime.sessions.store import Session
from nyzhi.provider import types as pt
from nyzhi.provider.models import cost, model_info
from nyzhi.provider.offline_model import OFFLINE_TOOLS, is_offline_model
from nyzhi.provider.thinking import resolve_thinking

_NICKNAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
# Children an agent actor already has: its tool executor lives at ``<path>/tools``.
RESERVED_NICKNAMES = frozenset({"tools"})


def _valid_nickname(nickname: str) -> bool:
    return bool(_NICKNAME.fullmatch(nickname)) and nickname not in RESERVED_NICKNAMES


class AgentSpecError(ValueError):
    """An agent spec that cannot be built (bad nickname or path)."""


class SessionSink(Protocol):
    """Where an agent's thread is journaled (``nyzhi.core.runtime.sessions.SessionWriter``)."""

    def append_message(self, message: pt.Message) -> None: ...

    def replace_thread(
        self, messages: list[pt.Message], state: dict[str, object] | None = None
    ) -> None: ...


def _check_path(_inst: object, _attr: object, path: str) -> None:
    """``/agents/main[/<nickname>…]`` or, for a teammate, ``/team/<team>/<member>[/…]``."""
    parts = path.split("/")
    if path == ev.MAIN_AGENT:
        return
    if path.startswith(ev.MAIN_AGENT + "/"):
        below = parts[len(ev.MAIN_AGENT.split("/")):]
    elif path.startswith(ev.TEAM_ROOT + "/") and len(parts) >= 4:
        below = parts[2:]
    else:
        below = [""]
    if not all(_valid_nickname(p) for p in below):
        raise AgentSpecError(
            f"agent path {path!r} must be {ev.MAIN_AGENT}[/<nickname>…] or "
            f"{ev.TEAM_ROOT}/<team>/<member>[/<nickname>…], nicknames being letters, digits, "
            "'_', '-' or '.' (at most 64), not 'tools'"
        )


def _fence(value: Sequence[str] | None) -> frozenset[str] | None:
    return None if value is None else frozenset(value)


@records.frozen
class AgentSpec:
    """Everything that makes one agent different from another (see the module docstring)."""

    path: str = attrs.field(default=ev.MAIN_AGENT, validator=_check_path)
    role: str = "main"
    role_prompt: str = ""
    model: str | None = None
    tools: frozenset[str] | None = attrs.field(default=None, converter=_fence)
    disallowed_tools: frozenset[str] = attrs.field(default=frozenset(), converter=records.as_frozenset)
    max_steps: int | None = None
    session: SessionSink | None = attrs.field(default=None, eq=False)
    prompt_hooks: bool = False
    fence: Any = attrs.field(default=None, eq=False)  # a roles.Role
    budget: Any = attrs.field(default=None, eq=False)  # a budget.Budget
    # Team membership (``nyzhi.core.runtime.teams``): the team tools act for ``member`` of ``team``;
    # a child inherits both (it works on its teammate's behalf).
    team: str | None = None
    member: str | None = None
    # Where its tools work (a teammate's git worktree); None: the runtime's workspace.
    workdir: Path | None = None
    # Messages put into the thread before each model call (a teammate's unread inbox).
    inject: Callable[[], Awaitable[list[pt.Message]]] | None = attrs.field(default=None, eq=False)
    thinking: str | int | None = None  # a thinking level; None: the factory's

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    def child(self, nickname: str, **changes: object) -> AgentSpec:
        """The spec of a child at ``<path>/<nickname>``: it inherits this agent's model, tool
        fence and budget (``changes`` override them; a ``tools`` fence is narrowed to this
        agent's), but not its session journal nor its prompt hooks."""
        if not _valid_nickname(nickname):
            raise AgentSpecError(
                f"invalid agent nickname {nickname!r}: use letters, digits, '_', '-' or '.' "
                "(at most 64; 'tools' is the agent's tool executor)"
            )
        spec = attrs.evolve(
            self, path=f"{self.path}/{nickname}", role="subagent", role_prompt="",
            session=None, prompt_hooks=False, fence=None, budget=None, inject=None,
        )
        spec = attrs.evolve(spec, **changes)
        if self.tools is not None:
            narrowed = self.tools if spec.tools is None else spec.tools & self.tools
            spec = attrs.evolve(spec, tools=narrowed)
        return attrs.evolve(spec, disallowed_tools=spec.disallowed_tools | self.disallowed_tools)


@records.frozen(eq=False)
class Agent:
    """A built agent, ready to be run by an ``AgentActor``."""

    spec: AgentSpec
    loop: TurnLoop
    tooling: Tooling
    prompt: SessionPrompt
    notices: tuple[str, ...] = ()  # said once when it starts (a thinking level clamped)


@records.frozen(eq=False)
class AgentFactory:
    """What every agent of one runtime shares; ``build(spec)`` makes one agent."""

    provider: pt.Provider
    tooling: Tooling  # the template: registry, gates, tool context
    hooks: HookRunner
    approvals: ApprovalBroker
    emit: Emit
    prompt: PromptParts  # the session's: workspace, environment, rules, custom instructions
    settings: TurnSettings  # from config; a spec's budget and model adjust it
    session_id: str
    # MCP: the runtime's pool (its connected servers go in the system prompt) and whether the
    # first prompt waits for servers still starting (headless runs: nobody can ask again).
    mcp: Any = None
    wait_for_mcp: bool = False
    # The session being resumed: the journaled agent's state record starts from it.
    resumed: Session | None = None
    # ``[index] auto_context``: chunks of the semantic index relevant to a typed prompt
    # (nyzhi.core.runtime.assembly.open_index), added to it like a hook's context.
    auto_context: Callable[[str], Awaitable[str]] | None = None
    # Context appended to each user message of agents with prompt hooks (recalled memory,
    # the plan-mode note: nyzhi.core.runtime.session_knowledge), after the hooks' own.
    turn_context: Callable[[str], Awaitable[str]] | None = None
    # A command file's expansion made ready to send: its !`cmd` lines run, its @files read
    # (nyzhi.core.runtime.session_knowledge.SessionKnowledge.prepare); other prompts unchanged.
    prepare_prompt: Callable[[str], Awaitable[str]] | None = None
    # Each model's context window and where it came from (nyzhi.provider.limits); None: the
    # table's figures only.
    limits: Any = None
    # Tokens per character per provider and model, shared by every agent (one provider) and
    # started from the resumed session's.
    calibration: Calibration = attrs.field(
        default=attrs.Factory(lambda self: Calibration.from_session(self.resumed),
                              takes_self=True))
    # The thinking level of agents whose spec sets none (``--thinking``, ``[agent] thinking``).
    thinking: str | int | None = None
    # What session_start hooks printed (nyz's and Claude Code's SessionStart: stdout or
    # additionalContext): added to the first prompt that fires prompt hooks, then emptied.
    session_context: list[str] = attrs.field(factory=list)

    def build(self, spec: AgentSpec) -> Agent:
        model = spec.model or self.provider.model
        tooling = self._tooling(spec, model)
        # Byte-identical across the agent's steps (prompt caching); rebuilt only when a
        # deferred tool is discovered.
        known = self.limits.known(model) if self.limits is not None else None
        told = known.context_window if known is not None and known.source in (
            "config", "server") else None
        system_prompt = SessionPrompt(
            agent_parts(self.prompt, model=model, role_prompt=spec.role_prompt, tooling=tooling,
                        window=told),
            tooling.deferred_text,
            mcp=self.mcp.summaries if self.mcp is not None else None,
        )
        # What compaction keeps verbatim (first prompt, todos, changed files, last failure).
        keeper = StateKeeper(
            tooling.context, self.resumed if spec.path == ev.MAIN_AGENT else None,
            calibration=self.calibration.snapshot)
        keeper.restore_ledger()
        step = GatedToolStep(tooling, self.hooks, self.emit, spec.path)
        loop = TurnLoop(
            agent_path=spec.path,
            provider=self.provider,
            model=spec.model,
            tool_schemas=system_prompt.tools(tooling.schemas),
            tool_step=step,
            system_prompt=system_prompt,
            emit=self.emit,
            settings=self._settings(spec, model, known),
            on_message=_journal_message(spec.session),
            on_thread_replaced=_journal_thread(spec.session, keeper),
            on_prompt=self._prompt_hooks if spec.prompt_hooks else None,
            cost=cost,
            session_stem=self._stem(spec.path),
            state_record=keeper.build,
            limit=spec.budget.before_step if spec.budget is not None else None,
            before_step=spec.inject,
            limits=self.limits,
            calibration=self.calibration,
        )
        step.no_images = _no_images(loop)
        loop.notices = background_notices(tooling.context.shells, spec.path)
        self._hook_loop(loop, spec.path)
        level = spec.thinking if spec.thinking is not None else self.thinking
        loop.thinking, notice = resolve_thinking(level, model)
        return Agent(spec, loop, tooling, system_prompt, (notice,) if notice else ())

    def _tooling(self, spec: AgentSpec, model: str) -> Tooling:
        """The agent's own tools: the runtime's, fenced to what its model, spec and role
        allow, asking through the permission hooks, in its team's workdir."""
        allowed = spec.tools
        if is_offline_model(model):
            # The offline model is offered only a few tools (nyzhi.provider.offline_model):
            # fenced here, so its prompt (tool guidance, deferred-tool list) names no others.
            allowed = frozenset(OFFLINE_TOOLS) & (allowed if allowed is not None
                                                  else frozenset(OFFLINE_TOOLS))
        tooling = self.tooling.for_agent(
            spec.path, self.approvals, allowed=allowed, disallowed=spec.disallowed_tools,
            memory=self.tooling.memory,
        )
        if spec.fence is not None:
            from nyzhi.core.runtime.assembly import Tooling
            from nyzhi.core.runtime.roles import fence_tools

            fenced = fence_tools(spec.fence, tooling.registry, tooling.gates, tooling.context)
            tooling = Tooling(fenced.registry, fenced.gates, fenced.context, tooling.memory)
        if self.hooks.has("permission_request"):
            tooling.gates.permission_hook = PermissionHooks(self.hooks, spec.path)
        if spec.team is not None or spec.workdir is not None:
            tooling.context.team_name = spec.team
            tooling.context.team_member = spec.member
            if spec.workdir is not None:
                tooling.context.cwd = tooling.context.workspace_root = Path(spec.workdir)
        return tooling

    def _settings(self, spec: AgentSpec, model: str, known: Any) -> TurnSettings:
        """The runtime's turn settings with the spec's step limit and the model's window
        (as resolved when known, else the table's)."""
        info = model_info(model)
        return attrs.evolve(
            self.settings,
            max_steps=spec.max_steps or self.settings.max_steps,
            context_window=known.context_window if known is not None else info.context_window,
            max_output=known.max_output if known is not None else info.max_output,
            window_source=known.source if known is not None else "",
        )

    def _hook_loop(self, loop: TurnLoop, path: str) -> None:
        """The hooks the turn loop calls: compact_context before a compaction, Claude Code's
        Stop (the main agent) or SubagentStop (its subagents) when the model stops."""
        if self.hooks.has("compact_context"):
            loop.before_compact = _compact_hooks(self.hooks, path, loop)
        if path == ev.MAIN_AGENT and self.hooks.has_claude("Stop"):
            loop.on_stop = _stop_hooks(self.hooks, self.session_id)
        elif path.startswith(ev.MAIN_AGENT + "/") and self.hooks.has_claude("SubagentStop"):
            loop.on_stop = _stop_hooks(self.hooks, self.session_id, path)

    def _stem(self, path: str) -> str:
        """The compaction archive's file stem: the session id, plus the agent's path below
        the main agent (``<id>-explorer``, ``<id>-explorer-grep``)."""
        if path.startswith(ev.TEAM_ROOT + "/"):
            below = path[len(ev.TEAM_ROOT):].strip("/")
        else:
            below = path[len(ev.MAIN_AGENT):].strip("/")
        return f"{self.session_id}-{below.replace('/', '-')}" if below else self.session_id

    async def _prompt_hooks(self, prompt: str) -> tuple[str, str | None]:
        """``user_prompt_submit`` hooks may block the prompt or add context to it; then
        ``[index] auto_context`` may add the semantic index's chunks for it."""
        typed = prompt  # what auto_context searches for: the person's words, not hook output
        if self.wait_for_mcp and self.mcp is not None:
            await self.mcp.wait_started()
        if self.prepare_prompt is not None:
            prompt = await self.prepare_prompt(prompt)
        outcome = await self.hooks.fire(
            "user_prompt_submit", {"prompt": prompt, "session_id": self.session_id}
        )
        if outcome.blocked:
            return prompt, outcome.message or "blocked by a user_prompt_submit hook"
        typed = prompt
        if self.session_context:  # the session_start hooks' output: the first request's
            prompt = "\n\n".join([prompt, *self.session_context])
            self.session_context.clear()
        if outcome.context:
            prompt = f"{prompt}\n\n{outcome.context}"
        if self.auto_context is not None:
            extra = await self.auto_context(typed)
            if extra:
                prompt = f"{prompt}\n\n{extra}"
        if self.turn_context is not None and (context := await self.turn_context(typed)):
            prompt = f"{prompt}\n\n{context}"
        return prompt, None


def _stop_hooks(hooks: HookRunner, session_id: str, subagent: str = ""
                ) -> Callable[[str, bool], Awaitable[str | None]]:
    """Claude Code's ``Stop`` hooks when the main agent is about to stop (``SubagentStop``
    when ``subagent``, its path, is): one that blocks (exit 2, or ``decision: "block"``)
    makes it go on, with its reason as the next message. ``stop_hook_active`` tells the hook
    it already did in this turn (loops stop themselves); the turn's steps (``max_steps``)
    and the agent's budget bound the rest. A subagent's Claude hooks run only here (the
    runtime's end-of-work ``subagent_stop`` fires nyz's own), so each runs once per stop."""
    event, name = ("subagent_stop", "SubagentStop") if subagent else ("after_turn", "Stop")

    async def fire(text: str, active: bool) -> str | None:
        outcome = await hooks.fire(event, {
            "session_id": session_id, "agent": subagent or ev.MAIN_AGENT, "text": text,
            "stop_hook_active": active}, only="claude")
        if outcome.blocked and not outcome.stop:
            return outcome.message or f"A {name} hook asked you to go on."
        return None

    return fire


def _compact_hooks(
    hooks: HookRunner, agent_path: str, loop: TurnLoop
) -> Callable[[str, int], Awaitable[str]]:
    """``compact_context`` hooks before a compaction: Claude Code's PreCompact payload
    (``trigger`` manual or auto, ``custom_instructions``) plus nyzhi's ``reason`` (threshold,
    overflow, manual) and the thread's size; their stdout is added to the summary's
    instructions."""

    async def fire(reason: str, tokens: int) -> str:
        outcome = await hooks.fire("compact_context", {
            "trigger": "manual" if reason == "manual" else "auto", "reason": reason,
            "custom_instructions": loop.settings.compact_instructions, "before_tokens": tokens,
            "agent": agent_path,
        })
        return outcome.context

    return fire


def _no_images(loop: TurnLoop) -> Callable[[], str | None]:
    """Why ``loop``'s model (as it is at each call: ``/model`` may change it) cannot be sent
    images, or None when it can."""
    from nyzhi.core.loop.prompt_images import takes_images

    def reason() -> str | None:
        model = loop.model or loop.provider.model
        return None if takes_images(model) else f"{model} does not take images"

    return reason


def _journal_message(
    sink: SessionSink | None,
) -> Callable[[pt.Message], Awaitable[None]] | None:
    if sink is None:
        return None

    async def append(message: pt.Message) -> None:
        sink.append_message(message)

    return append


def _journal_thread(
    sink: SessionSink | None, keeper: StateKeeper
) -> Callable[[list[pt.Message]], Awaitable[None]] | None:
    if sink is None:
        return None

    async def replace(messages: list[pt.Message]) -> None:
        state = convert.unstructure(keeper.current) if keeper.current is not None else None
        sink.replace_thread(messages, state=state)

    return replace
