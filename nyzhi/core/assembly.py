"""Building the runtime's parts from config: provider, tools, hooks, session.

Kept apart from ``runtime`` so each step can be read (and tested) on its own; ``open_runtime``
calls them in order.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

import actors
from nyzhi.core.hooks import HookRunner, hooks_from_config, load_claude_hooks
from nyzhi.core.sessions.store import Session, SessionStore, SessionWriter
from nyzhi.provider import types as pt
from nyzhi.tools.base import SandboxLevel, ToolContext, TrustMode
from nyzhi.tools.gates import ApprovalMemory, Gates, TrustPolicy
from nyzhi.tools.sandbox import SandboxPolicy

# When nothing is configured, the first of these with a key found wins.
AUTO_PROVIDER_ORDER = ("anthropic", "openai", "gemini", "openrouter", "groq", "together", "deepseek")


class RuntimeConfigError(Exception):
    """The configuration cannot make a working runtime; the message says what to change."""


# ---- provider ------------------------------------------------------------------------------


def choose_provider(config: Any, requested: str | None, env: Mapping[str, str]) -> str | None:
    """The provider name to use, or None for the local offline model."""
    from nyzhi.auth import resolve_key_source

    if requested:
        return requested
    if config.provider.default:
        return config.provider.default
    if len(config.provider.entries) == 1:
        return next(iter(config.provider.entries))
    for name in AUTO_PROVIDER_ORDER:
        if resolve_key_source(name, config.provider.get(name), env).current_key():
            return name
    return None


def provider_spec(name: str, config: Any, model: str | None, env: Mapping[str, str]) -> Any:
    from nyzhi.auth import resolve_key_source
    from nyzhi.provider import PRESETS, ProviderSpec, RetryPolicy

    entry = config.provider.get(name)
    preset = PRESETS.get(name)
    api_style = entry.api_style or (preset.api_style if preset else "openai")
    base_url = entry.base_url or (preset.base_url if preset else None)
    if not base_url:
        raise RuntimeConfigError(
            f"provider {name!r} has no base_url: set [provider.{name}] base_url = \"https://…\" "
            "in your config (built-in presets: " + ", ".join(sorted(PRESETS)) + ")"
        )
    chosen_model = model or entry.model or (preset.default_model if preset else None)
    if not chosen_model:
        raise RuntimeConfigError(
            f"provider {name!r} has no model: pass --model or set [provider.{name}] model"
        )
    keys = resolve_key_source(name, entry, env)
    needs_key = preset.key_required if preset else False
    if needs_key and keys.current_key() is None:
        var = (preset.env_var if preset else None) or f"{name.upper()}_API_KEY"
        raise RuntimeConfigError(
            f"no API key for provider {name!r}: set {var}, run `nyz login {name}`, "
            f"or set api_key in [provider.{name}]"
        )
    retry = config.agent.retry
    return ProviderSpec(
        name=name,
        api_style=api_style,
        base_url=base_url,
        model=chosen_model,
        key=keys,
        headers=dict(entry.headers),
        max_tokens=entry.max_tokens or config.agent.max_tokens,
        temperature=entry.temperature,
        retry=RetryPolicy(
            max_retries=retry.max_retries,
            initial_backoff_ms=retry.initial_backoff_ms,
            max_backoff_ms=retry.max_backoff_ms,
        ),
        **({"read_timeout_s": entry.timeout} if entry.timeout else {}),
    )


async def open_provider(
    stack: Any, system: actors.ActorSystem, config: Any, options: Any
) -> tuple[pt.Provider, str | None]:
    """The provider the runtime talks to, and a notice to show once (or None)."""
    from nyzhi.provider import build_provider, spec_from_preset

    if options.provider_instance is not None:
        return options.provider_instance, None
    env = options.env if options.env is not None else os.environ
    name = choose_provider(config, options.provider, env)
    notice = None
    if name is None:
        from nyzhi.core.local_model import LOCAL_MODEL_NOTICE, ensure_local_model

        services = system.lookup("/services") or system.spawn(
            actors.Supervisor, name="services", restart=actors.Restart.PERMANENT
        )
        _ref, base_url = await _local_model(services, ensure_local_model)
        spec = spec_from_preset("llama-cpp", base_url=base_url)
        notice = LOCAL_MODEL_NOTICE
    else:
        spec = provider_spec(name, config, options.model, env)
    provider = await stack.enter_async_context(build_provider(spec))
    return provider, notice


async def _local_model(services: actors.ActorRef, ensure: Any) -> tuple[Any, str]:
    from nyzhi.core.local_model import LocalModelConfig, LocalModelServer, wait_base_url
    from nyzhi.provider.llama_server import free_loopback_port

    config = attrs.evolve(LocalModelConfig.default(), port=free_loopback_port())
    ref = await services.ask(
        actors.StartChild(
            actors.ChildSpec(LocalModelServer, (config,), name="local-model",
                             restart=actors.Restart.PERMANENT)
        )
    )
    return ref, await wait_base_url(ref, timeout=config.startup_timeout + 30)


# ---- tools ---------------------------------------------------------------------------------


@attrs.define
class Tooling:
    registry: Any
    gates: Gates
    context: ToolContext
    memory: ApprovalMemory

    def schemas(self) -> list[pt.ToolSchema]:
        nodes = list(self.context.nodes)
        return [
            pt.ToolSchema(s["name"], s["description"], s["parameters"])
            for s in self.registry.schemas(nodes=nodes)
        ]

    def deferred_text(self) -> str:
        """Deferred tools not yet discovered, for the system prompt (full schemas of the
        others go with each request)."""
        return self.registry.prompt_summary()

    def for_agent(self, path: str, broker: Any = None) -> Tooling:
        """The same tools for another agent: its own context (path, changes) and approvals."""
        context = attrs.evolve(
            self.context, agent_path=path, agent_name=path.rsplit("/", 1)[-1],
            ask_user=broker.question_for(path) if broker and self.context.ask_user else None,
        )
        memory = ApprovalMemory()
        gates = attrs.evolve(self.gates, memory=memory)
        return Tooling(self.registry.fenced(), gates, context, memory)

    def undo_last(self) -> str:
        from nyzhi.tools.undo import undo_last

        lines = undo_last(self.context.changes)
        return "\n".join(lines) if lines else "nothing to undo"


def sandbox_policy(config: Any, workspace_root: Path, level: str | None) -> SandboxPolicy:
    sb = config.agent.sandbox
    return SandboxPolicy(
        level=SandboxLevel(level or sb.level),
        workspace_root=workspace_root,
        writable_roots=tuple(Path(os.path.expanduser(p)) for p in sb.writable_roots),
        network=sb.network,
        bwrap_fallback=sb.fallback,
    )


def trust_policy(config: Any, mode: str | None) -> TrustPolicy:
    table = attrs.asdict(config.agent.trust)
    if mode:
        table["mode"] = mode
    return TrustPolicy.from_config(table)


def build_nodes(config: Any) -> dict[str, Any]:
    from nyzhi.tools.executors import SshExecutor

    return {
        n.name: SshExecutor(n.host, user=n.user, port=n.port, identity_file=n.identity_file,
                            cwd=n.cwd)
        for n in config.nodes
    }


def build_tooling(
    config: Any, workspace: Any, options: Any, broker: Any, agent_path: str = "/agents/main"
) -> Tooling:
    from nyzhi.tools.executors import LocalExecutor
    from nyzhi.tools.registry import default_registry

    registry = default_registry()
    trust = trust_policy(config, options.trust)
    memory = ApprovalMemory()
    gates = Gates(
        trust=trust,
        approver=broker.request if options.interactive else None,
        memory=memory,
    )
    context = ToolContext(
        workspace_root=workspace.root,
        cwd=Path(options.cwd),
        sandbox=sandbox_policy(config, workspace.root, options.sandbox),
        trust=trust,
        executor=LocalExecutor(),
        agent_path=agent_path,
        agent_name=agent_path.rsplit("/", 1)[-1],
        registry=registry,
        nodes=build_nodes(config),
        ask_user=broker.question_for(agent_path) if options.interactive else None,
    )
    if trust.mode is TrustMode.FULL:
        context.state["trust_full"] = True
    return Tooling(registry, gates, context, memory)


# ---- hooks and sessions ----------------------------------------------------------------------


def build_hooks(config: Any, workspace: Any, cwd: Path) -> tuple[HookRunner, list[str]]:
    specs = list(hooks_from_config([h.as_table() for h in config.agent.hooks]))
    claude_specs, notes = load_claude_hooks(workspace.root)
    specs += claude_specs
    return HookRunner(specs, cwd), notes


def open_session(
    options: Any, workspace: Any, provider: pt.Provider
) -> tuple[SessionStore, SessionWriter | None, Session | None]:
    """The session to write to (None when ephemeral) and the loaded one when resuming."""
    store = SessionStore()
    resumed: Session | None = None
    if options.session or options.continue_latest:
        if options.session:
            meta = store.resolve(options.session)
        else:
            meta = store.latest(cwd=str(options.cwd)) or store.latest()
            if meta is None:
                raise RuntimeConfigError("no session to continue: none has been saved yet")
        resumed = store.load(meta.id)
    if options.ephemeral:
        return store, None, resumed
    if resumed is not None:
        return store, store.open(resumed.id, sync="turn"), resumed
    # Every record is written as it happens (a kill -9 loses nothing written); fsync at turn
    # boundaries keeps the per-step cost low (see SyncMode).
    writer = store.create(
        cwd=options.cwd, workspace_root=workspace.root, provider=provider.name,
        model=provider.model, sync="turn",
    )
    return store, writer, None


# ---- MCP -----------------------------------------------------------------------------------


async def open_mcp(
    system: actors.ActorSystem, config: Any, workspace: Any, options: Any, registry: Any,
    broker: Any, publish: Any,
) -> Any:
    """The runtime's MCP pool under ``/mcp``, its servers connecting in the background.

    ``.mcp.json`` servers nobody approved yet are asked about once: through the front end's
    approvals in an interactive session, accepted by ``--trust full``, else left untrusted."""
    from nyzhi.config.mcp_sources import declared_servers
    from nyzhi.core.mcp import McpPool

    env = options.env if options.env is not None else os.environ
    entries = declared_servers(config, workspace.root, env)
    trust_all = trust_policy(config, options.trust).mode is TrustMode.FULL

    async def ask_trust(entry: Any) -> bool:
        from nyzhi.tools.gates import ApprovalKind, ApprovalRequest

        request = ApprovalRequest(
            call_id="", tool_name=f"mcp server {entry.name}",
            args_summary=f"start the project MCP server {entry.name!r} from .mcp.json: "
                         f"{entry.describe()}",
            preview=None, agent_path="/mcp",
        )
        await broker.bus.wait_for_subscriber()
        decision = await broker.request(request)
        return decision.kind is not ApprovalKind.DENY

    return await McpPool.open(
        system, registry, entries, root=workspace.root,
        defer_threshold=config.mcp.defer_threshold,
        startup_timeout=config.mcp.startup_timeout,
        ask_trust=ask_trust if options.interactive else None,
        trust_all=trust_all, publish=publish, env=env,
    )
