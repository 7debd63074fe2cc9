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
import trio

import actors
from nyzhi import records
from nyzhi.config.modes import ApiStyle, SandboxLevel, TrustMode
from nyzhi.config.secrets import Redactor
from nyzhi.core.events import MAIN_AGENT
from nyzhi.core.runtime.hooks import HookRunner, hooks_from_config, load_claude_hooks
from nyzhi.core.runtime.sessions.store import Session, SessionStore, SessionWriter
from nyzhi.provider import types as pt
from nyzhi.tools.base import Permission, ToolContext
from nyzhi.tools.env_policy import EnvPolicy
from nyzhi.tools.gates import ApprovalMemory, Gates, TrustPolicy
from nyzhi.tools.ledger import FileLedger
from nyzhi.tools.registry import CONFIGURED_TOOLS, ToolRegistry
from nyzhi.tools.sandbox import SandboxPolicy

# When nothing is configured, the first of these with a key found wins.
AUTO_PROVIDER_ORDER = (
    "anthropic", "openai", "gemini", "openrouter", "groq", "together", "deepseek", "xai",
    "mistral", "moonshot", "minimax", "zai", "cerebras", "fireworks",
)


class RuntimeConfigError(Exception):
    """The configuration cannot make a working runtime; the message says what to change."""


# ---- provider ------------------------------------------------------------------------------


def choose_provider(config: Any, env: Mapping[str, str]) -> str | None:
    """The provider name to use (``--provider`` is already ``[provider] default`` through
    ``Config.with_overrides``), or None for the local offline model."""
    from nyzhi.auth import resolve_key_source

    if config.provider.default:
        return config.provider.default
    if len(config.provider.entries) == 1:
        return next(iter(config.provider.entries))
    for name in AUTO_PROVIDER_ORDER:
        if resolve_key_source(name, config.provider.get(name), env).current_key():
            return name
    return None


def provider_spec(name: str, config: Any, env: Mapping[str, str]) -> Any:
    from nyzhi.auth import resolve_key_source
    from nyzhi.provider import PRESETS, ProviderSpec, RetryPolicy, StreamLimits

    entry = config.provider.get(name)
    preset = PRESETS.get(name)
    api_style = entry.api_style or (preset.api_style if preset else ApiStyle.OPENAI)
    base_url = entry.base_url or (preset.base_url if preset else None)
    if not base_url:
        raise RuntimeConfigError(
            f"provider {name!r} has no base_url: set [provider.{name}] base_url = \"https://…\" "
            "in your config (built-in presets: " + ", ".join(sorted(PRESETS)) + ")"
        )
    chosen_model = entry.model or (preset.default_model if preset else None)
    listed = preset is not None and not preset.default_model  # a local server's first model
    if not chosen_model and not listed:
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
    stream = config.agent.stream
    return ProviderSpec(
        name=name,
        api_style=api_style,
        base_url=base_url,
        model=chosen_model or "",
        key=keys,
        headers=dict(entry.headers),
        max_tokens=entry.max_tokens or config.agent.max_tokens,
        temperature=entry.temperature,
        retry=RetryPolicy(
            max_retries=retry.max_retries,
            initial_backoff_ms=retry.initial_backoff_ms,
            max_backoff_ms=retry.max_backoff_ms,
        ),
        limits=StreamLimits(
            max_answer_chars=stream.max_answer_chars,
            max_tool_argument_chars=stream.max_tool_argument_chars,
            max_step_tool_argument_chars=stream.max_step_tool_argument_chars,
        ),
        **({"read_timeout_s": entry.timeout} if entry.timeout else {}),
    )


async def open_provider(
    stack: Any, system: actors.ActorSystem, config: Any, options: Any
) -> tuple[pt.Provider, str | None]:
    """The provider the runtime talks to, and a notice to show once (or None).

    ``--model`` applies to the provider chosen here, so it is the one override applied after
    the others (with the same ``Config.with_overrides``)."""
    from nyzhi.provider import build_provider, spec_from_preset

    if options.provider_instance is not None:
        return options.provider_instance, None
    env = options.env if options.env is not None else os.environ
    name = choose_provider(config, env)
    notice = None
    if name is None:
        from nyzhi.core.runtime.local_model import LOCAL_MODEL_NOTICE, ensure_local_model

        services = services_supervisor(system)
        _ref, base_url = await _local_model(services, ensure_local_model)
        spec = spec_from_preset("llama-cpp", base_url=base_url)
        notice = LOCAL_MODEL_NOTICE
    else:
        if options.model:
            config = config.with_overrides(provider=name, model=options.model)
        spec = provider_spec(name, config, env)
        if not spec.model:
            spec = await _first_listed_model(spec)
    provider = await stack.enter_async_context(build_provider(spec))
    return provider, notice


def limits_resolver(config: Any, provider: pt.Provider, options: Any,
                    write_behind: Any = None) -> Any:
    """The runtime's resolver of context windows (``nyzhi.provider.limits``). It asks the
    server on the provider's own client when the provider has one (no second TLS context
    is built, and the first request reuses the connection the question opened); with
    ``write_behind`` (a nursery's ``start_soon``) it caches the answer behind the request."""
    from nyzhi.config.paths import cache_dir
    from nyzhi.provider.limits import ConfiguredLimits, LimitsResolver

    spec = getattr(provider, "spec", None)
    name = spec.name if spec is not None else getattr(provider, "name", "")
    return LimitsResolver(
        spec, ConfiguredLimits.from_entry(name, config.provider.get(name)),
        cache_dir=cache_dir(options.env) if spec is not None else None,
        client=getattr(provider, "client", None), write_behind=write_behind,
        notices_env=options.env if options.env is not None else os.environ,
    )


async def _first_listed_model(spec: Any) -> Any:
    """``spec`` on the first model its server lists (LM Studio, vLLM: the model loaded)."""
    from nyzhi.core.errors import describe_error
    from nyzhi.provider.models import refresh_models

    try:
        listed = await refresh_models(spec, register_unknown=False)
    except Exception as exc:  # refused, HTTP error, not JSON: one line that says what to do
        raise RuntimeConfigError(
            f"provider {spec.name!r}: cannot list the models at {spec.base_url} "
            f"({describe_error(exc)}); start the server, or pass --model"
        ) from None
    if not listed:
        raise RuntimeConfigError(
            f"provider {spec.name!r} lists no model at {spec.base_url}: load one, or pass --model")
    return attrs.evolve(spec, model=listed[0].id)


def services_supervisor(system: actors.ActorSystem) -> actors.ActorRef:
    """``/services``: the supervisor of long-lived helpers (local model, semantic index)."""
    return system.lookup("/services") or system.spawn(
        actors.Supervisor, name="services", restart=actors.Restart.PERMANENT
    )


async def _local_model(services: actors.ActorRef, ensure: Any) -> tuple[Any, str]:
    from nyzhi.core.runtime.local_model import LocalModelConfig, LocalModelServer, wait_base_url
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


@records.define
class Tooling:
    """One agent's tools: its registry view, gates, tool context and approvals memory.

    ``schemas()`` and ``deferred_text()`` run on every model step; both are cached until the
    registry view changes (``ToolRegistry.version``), since building them deep-copies every
    tool's JSON schema."""

    registry: ToolRegistry
    gates: Gates
    context: ToolContext
    memory: ApprovalMemory
    redactor: Redactor = attrs.Factory(Redactor)  # shared by every agent (see build_redactor)
    # notices from building the tools (Claude Code permission rules we cannot express)
    notices: tuple[str, ...] = ()
    _schemas: tuple[object, tuple[pt.ToolSchema, ...]] | None = attrs.field(
        default=None, init=False, repr=False)
    _deferred: tuple[object, str] | None = attrs.field(default=None, init=False, repr=False)

    def schemas(self) -> tuple[pt.ToolSchema, ...]:
        in_team = self.context.team_name is not None
        key = (self.registry.version, tuple(self.context.nodes), self.gates.plan_mode, in_team)
        if self._schemas is None or self._schemas[0] != key:
            # The team tools are shown to members of a team only: an agent in no team does not
            # pay for them on every request (team_create, deferred, makes it a lead).
            hidden = () if in_team else self._in_team_only()
            schemas = self.registry.shared(
                f"schemas:{','.join(key[1])}:{'plan' if key[2] else 'all'}:{int(in_team)}",
                lambda: tuple(
                    pt.ToolSchema(s["name"], s["description"], s["parameters"])
                    for s in self.registry.schemas(nodes=key[1])
                    if s["name"] not in hidden and (
                        not key[2]
                        or self.registry.get(s["name"]).permission is Permission.READ_ONLY)
                ))  # plan mode: the model is shown only read-only tools
            self._schemas = (key, schemas)
        return self._schemas[1]

    def deferred_text(self) -> str:
        """Deferred tools not yet discovered, for the system prompt (full schemas of the
        others go with each request)."""
        in_team = self.context.team_name is not None
        key = (self.registry.version, in_team)
        if self._deferred is None or self._deferred[0] != key:
            self._deferred = (key, self.registry.prompt_summary(
                self._unlisted() | (set() if in_team else self._in_team_only())))
        return self._deferred[1]

    def _in_team_only(self) -> set[str]:
        """The tools an agent in no team is not shown (``Tool.in_team_only``)."""
        return {t.name for t in self.registry.tools() if getattr(t, "in_team_only", False)}

    def _unlisted(self) -> set[str]:
        """Deferred tools another tool loads when needed (``Tool.listed`` False): left out of
        the prompt's list of tools to load (tool_search still finds them)."""
        return {t.name for t in self.registry.tools() if not getattr(t, "listed", True)}

    def for_agent(
        self,
        path: str,
        broker: Any,
        *,
        allowed: frozenset[str] | None = None,
        disallowed: frozenset[str] = frozenset(),
        memory: ApprovalMemory | None = None,
    ) -> Tooling:
        """The same tools for one agent: its own context (path, question routing), its own
        fenced view of the registry (``allowed`` None: all) and the approvals memory given
        (None: a fresh one)."""
        registry = self.registry.fenced(allowed, disallowed)
        context = attrs.evolve(
            self.context, agent_path=path, agent_name=path.rsplit("/", 1)[-1],
            ask_user=broker.question_for(path) if self.context.ask_user else None,
            registry=registry,  # tool_search discovers into this agent's own view
            # Its own stale-write ledger: a subagent does not inherit its parent's reads.
            seen=FileLedger() if self.context.seen is not None else None,
        )
        memory = memory if memory is not None else ApprovalMemory()
        gates = attrs.evolve(self.gates, memory=memory)
        return Tooling(registry, gates, context, memory, self.redactor)

    def undo_last(self) -> str:
        from nyzhi.tools.paths import ToolPathError
        from nyzhi.tools.undo import UndoConflict, undo_last

        try:
            lines = undo_last(self.context.changes)
        except (OSError, UndoConflict, ToolPathError) as exc:  # nothing reverted; the record is kept
            text = str(exc)  # a restore's own refusal already says "not restored: ..."
            return text if text.startswith("not restored:") else f"not undone: {text}"
        return "\n".join(lines) if lines else "nothing to undo"


def sandbox_policy(config: Any, workspace_root: Path) -> SandboxPolicy:
    sb = config.agent.sandbox
    return SandboxPolicy(
        level=SandboxLevel(sb.level),
        workspace_root=workspace_root,
        writable_roots=tuple(Path(os.path.expanduser(p)) for p in sb.writable_roots),
        network=sb.network,
        bwrap_fallback=sb.fallback,
        allow_paths=config.agent.trust.allow_paths,
        hide=sb.hide,
    )


def trust_policy(config: Any) -> TrustPolicy:
    return TrustPolicy.from_config(attrs.asdict(config.agent.trust))


def build_nodes(config: Any, env_policy: EnvPolicy | None = None) -> dict[str, Any]:
    if not config.nodes:
        return {}  # without importing the SSH executor (start-up time)
    from nyzhi.tools.executors import MonitoredExecutor, SshExecutor

    nodes: dict[str, Any] = {}
    for n in config.nodes:
        ssh = SshExecutor(n.host, user=n.user, port=n.port, identity_file=n.identity_file,
                          cwd=n.cwd, env_policy=env_policy, nyz_command=n.nyz_command,
                          known_hosts=Path(os.path.expanduser(n.known_hosts))
                          if n.known_hosts else None)
        # a monitored node runs only what the classifier proves read-only (its docstring)
        nodes[n.name] = MonitoredExecutor(ssh) if n.mode == "monitored" else ssh
    return nodes


def secret_config_values(config: Any) -> list[tuple[str, str]]:
    """(dotted key, value) of every string in the config at a secret-named key (``api_key``,
    an MCP server's ``GITHUB_TOKEN``, an ``Authorization`` header, a hook's ``env`` token);
    for ``Bearer x`` / ``Basic x`` values, ``x`` too, since a tool may print it alone."""
    from nyzhi.config.secrets import is_secret_key

    found: list[tuple[str, str]] = []

    def walk(value: Any, path: tuple[str | int, ...]) -> None:
        if isinstance(value, str):
            if path and is_secret_key(path):  # list indexes (ints) are skipped by the test
                key = ".".join(str(p) for p in path)
                found.append((key, value))
                scheme, _, rest = value.partition(" ")
                if scheme.lower() in ("bearer", "basic", "token") and rest.strip():
                    found.append((key, rest.strip()))
        elif attrs.has(type(value)):
            for field in attrs.fields(type(value)):
                walk(getattr(value, field.name), (*path, field.name.lstrip("_")))
        elif isinstance(value, Mapping):
            for k, v in value.items():
                walk(v, (*path, str(k)))
        elif isinstance(value, list | tuple):
            for i, v in enumerate(value):
                walk(v, (*path, i))

    walk(config, ())
    return found


def build_redactor(config: Any, env: Mapping[str, str], policy: EnvPolicy) -> Redactor:
    """Every secret value nyz knows: provider keys (config ``api_key``, key variables set in
    ``env``), other secret-named config values (``secret_config_values``), the values of
    variables ``[shell.env]`` excludes, and auth.json's entries.

    Key variables are registered whatever ``exclude`` says, since a key the user passes down on
    purpose must still not reach the model or the logs."""
    from nyzhi.auth.store import AuthStore, AuthStoreError
    from nyzhi.config.presets import env_vars_for
    from nyzhi.tools.env_policy import provider_key_vars, search_key_vars

    redactor = Redactor()
    names = {*provider_key_vars(), *search_key_vars()}
    for name, entry in config.provider.entries.items():
        names.update(env_vars_for(name, entry.env_var))
        redactor.add(f"provider.{name}.api_key", entry.api_key)
    for key, value in secret_config_values(config):
        redactor.add(key, value)
    redactor.add_all({n: env[n] for n in sorted(names) if env.get(n)})
    redactor.add_all(policy.excluded(env))
    try:
        accounts = AuthStore(env=env).load()
    except AuthStoreError:
        accounts = {}
    for provider, entries in accounts.items():
        for acct in entries:
            redactor.add(f"auth.json {provider}/{acct.label}", acct.key)
            redactor.add(f"auth.json {provider}/{acct.label} refresh", acct.refresh_token)
    from nyzhi.auth.mcp_tokens import secret_values

    redactor.add_all(secret_values(env))
    return redactor


def build_tooling(config: Any, workspace: Any, options: Any, broker: Any, *,
                  claude_allow: bool = False) -> Tooling:
    """The tools every agent starts from (``Tooling.for_agent`` gives each its own view)."""
    from nyzhi.tools.background import ShellTable
    from nyzhi.tools.claude_permissions import with_claude_permissions
    from nyzhi.tools.executors import LocalExecutor
    from nyzhi.tools.netns import LoopbackNetwork
    from nyzhi.tools.registry import default_registry

    registry = default_registry()
    # .claude/settings*.json permission rules join the config's: deny rules hold headless too
    trust, notices = with_claude_permissions(trust_policy(config), workspace.root, options.env,
                                             allow=claude_allow)
    env_policy = EnvPolicy.from_config(config)
    memory = ApprovalMemory()
    gates = Gates(
        trust=trust,
        approver=broker.request if options.interactive else None,
        memory=memory,
    )
    context = ToolContext(
        workspace_root=workspace.root,
        cwd=Path(options.cwd),
        # One loopback network for the session's sandboxed commands (nyzhi.tools.netns).
        sandbox=attrs.evolve(sandbox_policy(config, workspace.root), loopback=LoopbackNetwork()),
        trust=trust,
        executor=LocalExecutor(env_policy, config.shell.path, config.shell.startup_commands),
        agent_path=MAIN_AGENT,
        agent_name=MAIN_AGENT.rsplit("/", 1)[-1],
        registry=registry,
        nodes=build_nodes(config, env_policy),
        env_policy=env_policy,
        ask_user=broker.question_for(MAIN_AGENT) if options.interactive else None,
        seen=FileLedger() if config.agent.stale_write_guard else None,
        format_on_edit=config.agent.format_on_edit,
        shells=ShellTable(max_processes=config.agent.background.max_processes,
                          buffer_bytes=config.agent.background.buffer_bytes),
    )
    if trust.mode is TrustMode.FULL:
        context.state["trust_full"] = True
    env = options.env if options.env is not None else os.environ
    notices += web_search_tool(config, registry, env)
    if context.nodes:  # the nodes tool is there only when there are nodes (no prompt cost)
        from nyzhi.tools.builtin.nodes import NodesTool

        registry.register(NodesTool())
    # One redactor for the run: the tools redact their results with it (before anything is
    # written or returned), the bus its events, the session its records, the model wrapper
    # (``core.model_redaction``) every request.
    context.redactor = build_redactor(config, env, env_policy)
    context.net, bad = net_policy(config, context.redactor)
    notices += bad
    return Tooling(registry, gates, context, memory, context.redactor, tuple(notices))


def net_policy(config: Any, redactor: Redactor | None) -> tuple[Any, list[str]]:
    """(what model-directed requests may reach: ``[network] allow_hosts``, with the run's
    redactor; a notice per entry that is not a host, which is left out). None without
    ``allow_hosts``: the tools then use the strict default (and start-up imports nothing)."""
    if not config.network.allow_hosts:
        return None, []
    from nyzhi.tools.netguard import NetPolicy, parse_allowed

    allow, notices = [], []
    for entry in config.network.allow_hosts:
        try:
            allow.append(parse_allowed(entry))
        except ValueError as exc:
            notices.append(f"{exc}; left out")
    return NetPolicy(allow=tuple(allow), redactor=redactor), notices


def web_search_tool(config: Any, registry: ToolRegistry, env: Mapping[str, str]) -> list[str]:
    """Registers ``web_search`` when ``[web_search]`` names a usable backend; the notice saying
    what is missing when it names one that is not (nothing configured: no tool, no notice)."""
    if not config.web_search.backend:
        return []  # without importing the tool's module
    from nyzhi.tools.builtin.web_search import search_tool

    tool, notice = search_tool(config, env)
    if tool is not None:
        registry.register(tool)
    return [notice] if notice else []


def provider_search_tool(config: Any, registry: ToolRegistry, provider: Any) -> None:
    """With no ``[web_search]`` backend, ``web_search`` through the provider's own search
    when it has one (Anthropic, OpenAI Responses, Gemini: ``nyzhi.provider.native_search``)."""
    if config.web_search.backend or "web_search" in registry:
        return
    from nyzhi.provider.native_search import offers_search

    if not offers_search(getattr(provider, "spec", None)):
        return  # without importing the tool's module
    from nyzhi.tools.builtin.web_search import provider_search_tool as make

    tool = make(config, provider)
    if tool is not None:
        registry.register(tool)


# ---- semantic index ------------------------------------------------------------------------

AUTO_CONTEXT_TIMEOUT = 10.0


def index_progress_to(emit: Any) -> Any:
    """The index service's progress ``report`` (``nyzhi.index.service.Report``) as
    ``index_progress`` events through ``emit`` (the runtime's bus, ``nyz index build``'s
    renderer): the index sits below ``core`` and knows no events."""
    from nyzhi.core.events import IndexProgress

    async def report(p: Any, path: str) -> None:
        await emit(IndexProgress(p.files_done, p.files_total, p.embedded, p.chunks, p.path,
                                 round(p.elapsed, 3), done=p.done, summary=p.summary,
                                 agent=path))

    return report


async def open_index(
    system: actors.ActorSystem, config: Any, workspace_root: Path, emit: Any,
    registry: ToolRegistry, env: Mapping[str, str] | None = None,
) -> Any:
    """With ``[index] enabled``: the index service under ``/services`` (refreshing an existing
    index in the background) and the ``semantic_search`` tool. Returns the ``auto_context``
    function for the agent factory (None when ``[index] auto_context`` is off): the top
    ``auto_context_chunks`` chunks for a prompt, or "" when there is no index or no answer in
    ``AUTO_CONTEXT_TIMEOUT`` seconds."""
    if not config.index.enabled:
        return None
    import trio

    from nyzhi.index.search import format_hits
    from nyzhi.index.service import Search, index_exists, settings_from_config, start_index_service
    from nyzhi.index.tool import SemanticSearchTool

    settings = settings_from_config(config, workspace_root, refresh_on_start=True, env=env)
    ref = await start_index_service(services_supervisor(system), settings,
                                    index_progress_to(emit))

    async def run_search(query: str, k: int, mode: str) -> Any:
        return await ref.ask(Search(query, k=k, mode=mode), timeout=300)

    registry.register(SemanticSearchTool(run_search))
    if not config.index.auto_context or config.index.auto_context_chunks < 1:
        return None
    k = config.index.auto_context_chunks

    async def auto_context(prompt: str) -> str:
        if not index_exists(settings.directory):
            return ""
        hits = None
        with trio.move_on_after(AUTO_CONTEXT_TIMEOUT):
            try:
                hits = await ref.ask(Search(prompt, k=k), timeout=AUTO_CONTEXT_TIMEOUT)
            except Exception:
                return ""  # a missing model or a failed API must not block the turn
        if not hits:
            return ""
        return ("Possibly relevant code from the project's semantic index "
                "(auto_context):\n\n" + format_hits(hits, max_lines=20))

    return auto_context


def load_roles(config: Any, workspace: Any, tooling: Tooling) -> tuple[Any, list[str]]:
    """The role catalog (``nyzhi.core.runtime.roles``) and notices about it; lists the roles in the
    ``spawn_agent`` tool's description."""
    from nyzhi.core.runtime.roles import RoleCatalog

    catalog = RoleCatalog.load(config.agent.agents.roles, workspace.root)
    notes = [*catalog.warnings, *catalog.errors.values(),
             *catalog.check_tools({*tooling.registry.names(), *CONFIGURED_TOOLS})]
    spawn = tooling.registry.get("spawn_agent")
    if spawn is not None:
        roles = catalog.render_list(config.agent.listing_budget_chars)
        spawn.description = f"{spawn.base_description}\n\nRoles:\n{roles}"
    return catalog, notes


# ---- hooks and sessions ----------------------------------------------------------------------


def build_hooks(config: Any, workspace: Any, cwd: Path, *,
                claude: bool = True) -> tuple[HookRunner, list[str]]:
    """The hooks to run: the config's, the user's own Claude Code ones
    (``~/.claude/settings.json``: theirs, so never gated), and (``claude``: approved,
    ``nyzhi.config.project_trust``) those of the project's ``.claude/settings*.json``."""
    from nyzhi.core.runtime.hooks.claude import load_user_claude_hooks

    specs = list(hooks_from_config([h.as_table() for h in config.agent.hooks]))
    specs_user, notes = load_user_claude_hooks(workspace.root)
    specs += specs_user
    if claude:
        claude_specs, more = load_claude_hooks(workspace.root)
        specs += claude_specs
        notes = [*notes, *more]
    from nyzhi.core.runtime.plugins.parts import plugin_hooks

    # installed plugins' hooks: approved by digest when installed, never by a trust mode
    got, more = plugin_hooks(workspace.root, project_approved=claude)
    specs += got
    notes = [*notes, *more]
    return HookRunner(specs, cwd, env_policy=EnvPolicy.from_config(config)), notes


def open_session(
    options: Any, workspace: Any, provider: pt.Provider
) -> tuple[SessionStore, SessionWriter | None, Session | None]:
    """The session to write to (None when ephemeral) and the loaded one when resuming."""
    store = SessionStore()
    resumed: Session | None = None
    if resumes_session(options):
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
    return store, _create_session(store, options, workspace, provider), None


def _create_session(store: SessionStore, options: Any, workspace: Any, provider: pt.Provider,
                    session_id: str | None = None) -> SessionWriter:
    # Every record is written as it happens (a kill -9 loses nothing written); fsync at turn
    # boundaries keeps the per-step cost low (see SyncMode).
    return store.create(
        cwd=options.cwd, workspace_root=workspace.root, provider=provider.name,
        model=provider.model, sync="turn", session_id=session_id,
    )


def resumes_session(options: Any) -> bool:
    """Whether the runtime goes on with a saved session (``--session``, ``--continue``)."""
    return bool(options.session or options.continue_latest)


def creates_session(options: Any) -> bool:
    """Whether ``open_session`` would create a new session (not ephemeral, not resuming)."""
    return not (options.ephemeral or resumes_session(options))


class NewSession:
    """A new session created in a worker thread while the rest of the runtime is assembled:
    its header, folder and metadata are fsynced there (3-4 waits for the disk, 10-40 ms on a
    busy machine, before the console could take a prompt or ``nyz run`` send its first
    request). Its id is chosen at once, so the rest of the assembly can use it."""

    def __init__(self, options: Any, workspace: Any, provider: pt.Provider) -> None:
        import uuid

        self.id = str(uuid.uuid4())  # the form ``SessionStore.create`` gives
        self._args = (options, workspace, provider)
        self._writer: SessionWriter | None = None
        self._error: Exception | None = None

    async def create(self) -> None:
        """Run in the assembly's nursery; ``writer()`` then has the result."""
        options, workspace, provider = self._args
        try:
            with trio.CancelScope(shield=True):  # once created, the writer is not lost
                self._writer = await trio.to_thread.run_sync(
                    _create_session, SessionStore(), options, workspace, provider, self.id)
        except Exception as exc:  # raised by writer(), as open_session raises it
            self._error = exc

    def writer(self) -> SessionWriter:
        if self._error is not None:
            raise self._error
        assert self._writer is not None, "NewSession.create has not run"
        return self._writer


async def ask_project_trust(broker: Any, root: Path, verdict: Any,
                            env: Mapping[str, str] | None) -> None:
    """In an interactive session, ask once (through the front end's approvals, as a
    ``.mcp.json`` server is asked) about the project's hooks, MCP servers and security settings
    that this session left out (``nyzhi.config.project_trust``). A yes is recorded, so they
    are used from the next session on; this session keeps running without them."""
    import json

    from nyzhi.config.approvals import record_trust
    from nyzhi.config.project_trust import TRUST_KEY
    from nyzhi.oserror import StorageError
    from nyzhi.tools.gates import ApprovalKind, ApprovalRequest

    preview = "\n".join(
        f"{file}:\n" + "\n".join(f"  {key} = {json.dumps(value, default=str)}"
                                 for key, value in parts.items())
        for file, parts in sorted(verdict.parts.items()))
    request = ApprovalRequest(
        call_id="", tool_name="project configuration",
        args_summary=f"the project's configuration sets {sum(map(len, verdict.parts.values()))} keys that "
                     "need approval (they run programs, choose hosts, set the environment or "
                     "loosen limits); approve them for the next sessions",
        preview=preview, agent_path="/project",
    )
    await broker.bus.wait_for_subscriber()
    decision = await broker.request(request)
    if decision.kind is ApprovalKind.DENY:
        return
    try:
        await trio.to_thread.run_sync(record_trust, root, TRUST_KEY, verdict.digest, env)
    except (OSError, StorageError) as exc:  # the session goes on; the next one asks again
        from nyzhi.core import events as ev

        await broker.bus.publish(ev.Error(agent="/project", message=str(exc), kind="storage"))


# ---- MCP -----------------------------------------------------------------------------------


async def open_lsp(system: actors.ActorSystem, config: Any, workspace: Any, options: Any,
                   context: Any) -> Any:
    """The runtime's language servers under ``/lsp`` (none started yet), or None when
    ``[lsp] enabled = false``."""
    if not config.lsp.enabled:
        return None
    from nyzhi.core.runtime.lsp import LspPool

    env = options.env if options.env is not None else os.environ
    return await LspPool.open(system, config.lsp, workspace=workspace.root, env=env,
                              env_policy=context.env_policy, sandbox=context.sandbox)


async def open_mcp(
    system: actors.ActorSystem, config: Any, workspace: Any, options: Any, registry: Any,
    broker: Any, publish: Any, *, project_approved: bool = True, redactor: Any = None,
) -> Any:
    """The runtime's MCP pool under ``/mcp``, its servers connecting in the background.

    ``.mcp.json`` servers nobody approved yet are asked about once: through the front end's
    approvals in an interactive session, accepted by ``--approve-project-config`` (or the
    user's own ``approve_project_config``), else left untrusted."""
    from nyzhi.config.mcp_sources import declared_servers
    from nyzhi.core.runtime.mcp import McpPool

    env = options.env if options.env is not None else os.environ
    entries = declared_servers(config, workspace.root, env)
    from nyzhi.core.runtime.plugins.parts import plugin_servers

    entries += plugin_servers(workspace.root, env, {e.name for e in entries},
                              project_approved=project_approved)[0]
    # Approved by the person running nyz (the flag, or their own config), never by a trust
    # mode: a server the agent planted under --trust full must not start in the next run.
    trust_all = bool(getattr(options, "approve_project_config", False)
                     or config.agent.trust.approve_project_config)

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
        # a server's form is the main agent's question; headless, [mcp] elicitation decides
        ask_user=broker.question_for(MAIN_AGENT) if options.interactive else None,
        elicitation=config.mcp.elicitation,
        redactor=redactor,  # an OAuth token loaded or refreshed mid-session is redacted too
    )
