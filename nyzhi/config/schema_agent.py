"""The ``[agent]`` section of the config schema (see docs/config.md for every key).

Keys follow nyzhi 3.x so existing configs keep working; additions for this implementation
(``agent.sandbox``, ``hooks.timeout``/``matcher``, ``trust.deny_commands``) are documented.
Collections are tuples so a loaded Config can be shared between agents without copying.
"""

from __future__ import annotations

from typing import Literal

import attrs

from nyzhi import records
from nyzhi.config.durations import Duration
from nyzhi.config.modes import SandboxLevel, TrustMode
from nyzhi.config.thinking import ThinkingLevel

# The hook events, in the order docs/config.md lists them: the one definition (the hook
# runner, the config schema and the docs test read it). ``HOOK_EVENT_ALIASES`` are older
# nyzhi names for the same moments, accepted in configs.
HOOK_EVENTS = (
    "session_start", "session_end", "user_prompt_submit", "pre_tool_use", "post_tool_use",
    "post_tool_use_failure", "permission_request", "notification", "after_edit", "after_turn",
    "subagent_start", "subagent_stop", "compact_context", "worktree_create", "worktree_remove",
    "config_change", "teammate_idle", "task_completed",
)
HOOK_EVENT_ALIASES = {"subagent_end": "subagent_stop"}
HookEvent = Literal[*HOOK_EVENTS, *HOOK_EVENT_ALIASES]  # type: ignore[valid-type]


LISTING_BUDGET_CHARS = 6000  # [agent] listing_budget_chars' default (docs/config.md)

@records.frozen
class TrustConfig:
    mode: TrustMode = TrustMode.OFF
    allow_tools: tuple[str, ...] = ()
    allow_paths: tuple[str, ...] = ()
    deny_tools: tuple[str, ...] = ()
    deny_paths: tuple[str, ...] = ()
    deny_commands: tuple[str, ...] = ()  # added: command patterns refused for bash
    auto_approve: tuple[str, ...] = ()
    always_ask: tuple[str, ...] = ()
    remember_approvals: bool = False
    # The person running nyz approves the project's configuration for every run (CI): only
    # read from the user's own config (nyzhi.config.project_trust), never a project layer.
    approve_project_config: bool = False


@records.frozen
class RetryConfig:
    max_retries: int = 3
    initial_backoff_ms: int = 1000
    max_backoff_ms: int = 30000


@records.frozen
class StreamConfig:
    """``[agent.stream]``: how much one model answer may carry before it is stopped with an
    error (``nyzhi.provider.spec.StreamLimits``): text and thinking, one tool call's
    arguments, all of the answer's tool arguments. A server streaming without end must not
    take the machine's memory."""

    max_answer_chars: int = attrs.field(default=4_000_000, metadata={"min": 1})
    max_tool_argument_chars: int = attrs.field(default=4_000_000, metadata={"min": 1})
    max_step_tool_argument_chars: int = attrs.field(default=16_000_000, metadata={"min": 1})


@records.frozen
class RoutingConfig:
    enabled: bool = False
    low_keywords: tuple[str, ...] = ()
    high_keywords: tuple[str, ...] = ()


@records.frozen
class VerifyCheck:
    kind: Literal["build", "test", "lint", "custom"]
    command: str


@records.frozen
class VerifyConfig:
    checks: tuple[VerifyCheck, ...] = ()


@records.frozen
class BudgetConfig:
    """Limits for one agent (``[agent.agents.budget]``, or a role's ``budget``); unset: none.

    ``time`` is a duration: seconds as a number string or with a unit, "90s", "10m", "1h30m"
    (``nyzhi.config.durations``)."""

    tokens: int | None = None
    usd: float | None = None
    time: Duration | None = None
    steps: int | None = None


@records.frozen
class RoleConfig:
    """One ``[agent.agents.roles.NAME]`` table. ``config_file`` names a role file (the
    ``.nyzhi/agents/NAME.md`` format, relative to the workspace root) whose fields this table
    then overrides."""

    description: str | None = None
    config_file: str | None = None
    system_prompt: str | None = None
    model: str | None = None
    max_steps: int | None = None
    read_only: bool | None = None
    allowed_tools: tuple[str, ...] | None = None
    disallowed_tools: tuple[str, ...] | None = None
    mcp_servers: tuple[str, ...] | None = None  # added: None = every configured server
    budget: BudgetConfig | None = None  # added
    thinking: ThinkingLevel | None = None  # added: None = as the agent that spawns it


@records.frozen
class AgentsConfig:
    max_threads: int = 4
    max_depth: int = 2
    write_lease_wait: float = 30.0  # added: seconds a second writer of a file waits
    budget: BudgetConfig = attrs.Factory(BudgetConfig)  # added: the root agent's budget
    roles: dict[str, RoleConfig] = attrs.Factory(dict)


@records.frozen
class BackgroundConfig:
    """Added: ``bash`` with run_in_background (nyzhi.tools.background)."""

    # processes running at once in the whole agent tree; the next one is refused
    max_processes: int = attrs.field(default=8, metadata={"min": 1})
    # each process's output kept in memory (a ring); all of it goes to the log file
    buffer_bytes: int = attrs.field(default=1 << 20, metadata={"min": 4096})


@records.frozen
class SharingConfig:
    enabled: bool = False
    pages_project: str | None = None
    domain: str | None = None
    redact_patterns: tuple[str, ...] = ()


@records.frozen
class VoiceConfig:
    enabled: bool = False
    api_key_env: str | None = None
    model: str | None = None


@records.frozen
class HookConfig:
    """One ``[[agent.hooks]]`` entry. ``pattern`` (nyzhi 3.x) and ``matcher`` (Claude Code
    style) both filter on paths / tool names; a hook matches when either is absent or matches."""

    event: HookEvent
    command: str | None = None
    hook_type: Literal["command", "prompt", "agent"] = "command"
    prompt: str | None = None
    instructions: str | None = None
    tools: tuple[str, ...] = ()
    model: str | None = None
    pattern: str | None = None  # comma list of path globs / substrings (nyzhi 3.x)
    paths: tuple[str, ...] = ()  # the same as a list
    matcher: str | None = None  # regex on the tool name (Claude Code)
    tool_pattern: str | None = None  # the same, by its descriptive name
    tool_name: str | None = None
    block: bool = False
    timeout: float = 30.0  # seconds
    env: dict[str, str] = attrs.Factory(dict)  # added: this hook's own variables

    def as_table(self) -> dict:
        """The keys set to non-default values, as in the TOML table (what
        ``nyzhi.core.runtime.hooks.hooks_from_config`` takes)."""
        def default(f: attrs.Attribute) -> object:
            return f.default.factory() if isinstance(f.default, attrs.Factory) else f.default

        return {
            f.name: list(v) if isinstance(v, tuple) else v
            for f in attrs.fields(type(self))
            if (v := getattr(self, f.name)) != default(f) or f.name == "event"
        }


@records.frozen
class CommandConfig:
    name: str
    prompt: str
    description: str | None = None


@records.frozen
class SandboxConfig:
    """Added (nyzhi 3.x had an unwired ``[shell.sandbox]``): the enforced sandbox."""

    level: SandboxLevel = SandboxLevel.WORKSPACE_WRITE
    writable_roots: tuple[str, ...] = ()
    network: bool = False  # True: sandboxed commands may use the network (``nyz run --network``)
    fallback: Literal["refuse", "unsandboxed"] = "refuse"  # when bwrap is missing
    # credential paths masked from sandboxed commands and refused to the read tools, added to
    # the built-in list (nyzhi.tools.credentials); ~ is HOME
    hide: tuple[str, ...] = ()


@records.frozen
class AgentConfig:
    max_steps: int = attrs.field(default=100, metadata={"min": 1})
    max_tokens: int | None = None  # None: the model's max output
    # added: off / low / medium / high / a token budget (nyzhi.config.thinking); None = off
    thinking: ThinkingLevel | None = None
    custom_instructions: str | None = None
    auto_compact_threshold: float = attrs.field(default=0.85, metadata={"max": 1})
    compact_instructions: str | None = None
    enforce_todos: bool = False
    auto_simplify: bool = False
    auto_commit: bool = False
    model_profile: str | None = None
    subagent_model: str | None = None
    # Refuse a write to a file that changed since this agent read it (nyzhi.tools.ledger).
    stale_write_guard: bool = True
    # "auto": the project's own formatter (ruff format, black, prettier, gofmt, rustfmt,
    # clang-format, shfmt; nyzhi.tools.formatting) runs, sandboxed, over what the file tools
    # wrote, and the model is told what it changed. "off": files stay as the model wrote them.
    format_on_edit: Literal["off", "auto"] = "off"
    # Characters for each listing of skills (system prompt) and of roles (spawn_agent's
    # description); entries that do not fit are counted, not listed (nyzhi.knowledge.listing).
    listing_budget_chars: int = attrs.field(default=LISTING_BUDGET_CHARS, metadata={"min": 200})
    # An autopilot's returns to execute after a failed QA or validation before it stops with a
    # report (nyzhi.core.runtime.autopilot); 0: one attempt only.
    autopilot_max_loops: int = attrs.field(default=2, metadata={"min": 0})
    trust: TrustConfig = attrs.Factory(TrustConfig)
    retry: RetryConfig = attrs.Factory(RetryConfig)
    stream: StreamConfig = attrs.Factory(StreamConfig)
    routing: RoutingConfig = attrs.Factory(RoutingConfig)
    verify: VerifyConfig = attrs.Factory(VerifyConfig)
    agents: AgentsConfig = attrs.Factory(AgentsConfig)
    background: BackgroundConfig = attrs.Factory(BackgroundConfig)
    sharing: SharingConfig = attrs.Factory(SharingConfig)
    voice: VoiceConfig = attrs.Factory(VoiceConfig)
    sandbox: SandboxConfig = attrs.Factory(SandboxConfig)
    hooks: tuple[HookConfig, ...] = ()
    commands: tuple[CommandConfig, ...] = ()
