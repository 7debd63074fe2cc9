"""The typed configuration tree (attrs classes, structured by ``convert.py``).

Every class is frozen: a loaded Config is shared by agents and tools and must not change
under them. Runtime overrides (``--provider``, ``--model``, ``--trust``, ``--sandbox``) go
through ``Config.with_overrides`` which returns a new tree.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from nyzhi import records
from nyzhi.config.durations import Duration
from nyzhi.config.modes import ApiStyle, SandboxLevel, TrustMode
from nyzhi.config.schema_agent import AgentConfig


@records.frozen
class DeviceFlowConfig:
    """OAuth 2.0 device authorization grant (RFC 8628) endpoints for ``nyz login``."""

    device_authorization_url: str
    token_url: str
    client_id: str
    scope: str | None = None


def _tokens(_inst: Any, attribute: Any, value: int | None) -> None:
    if value is not None and value < 1:
        raise ValueError(f"{attribute.name} must be a positive number of tokens (e.g. 131072), "
                         f"not {value}")


@records.frozen
class ModelLimitsEntry:
    """``[provider.NAME.models."MODEL"]``: one model's figures, over the provider's."""

    # tokens the model reads (prompt and tools included), and the most it writes in one answer
    context_window: int | None = attrs.field(default=None, validator=_tokens)
    max_output_tokens: int | None = attrs.field(default=None, validator=_tokens)


@records.frozen
class ProviderEntry:
    """One ``[provider.NAME]`` table. Unset fields fall back to the built-in preset."""

    api_style: ApiStyle | None = None
    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None
    env_var: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    headers: dict[str, str] = attrs.Factory(dict)
    timeout: float | None = None  # seconds without data before a request is abandoned
    oauth: DeviceFlowConfig | None = None
    options: dict[str, Any] = attrs.Factory(dict)  # style-specific extras, passed through
    # The model's context window and output limit, when neither nyz's table nor the server
    # knows them (nyzhi.provider.limits); ``models`` sets them per model.
    context_window: int | None = attrs.field(default=None, validator=_tokens)
    max_output_tokens: int | None = attrs.field(default=None, validator=_tokens)
    models: dict[str, ModelLimitsEntry] = attrs.Factory(dict)


@records.frozen
class ProviderSection:
    """``[provider]``: ``default`` plus one table per provider (stored in ``entries``)."""

    default: str | None = None  # None: the runtime picks (a provider with a key, else local)
    entries: dict[str, ProviderEntry] = attrs.Factory(dict)

    def get(self, name: str) -> ProviderEntry:
        """The entry for ``name``, or an empty one (all preset defaults)."""
        return self.entries.get(name) or ProviderEntry()


@records.frozen
class ModelsConfig:
    """Legacy nyzhi 3.x ``[models]``, accepted and ignored: a model's limits are
    ``[provider.NAME]`` keys (``max_tokens``, ``context_window``, ``models."MODEL"``)."""

    max_tokens: int = 4096
    temperature: float | None = None


@records.frozen
class TuiNotifyConfig:
    bell: bool = True
    desktop: bool = False
    min_duration_ms: int = 5000


@records.frozen
class TuiConfig:
    markdown: bool = True
    streaming: bool = True
    theme: str = "auto"  # auto (from COLORFGBG) | dark | light | high-contrast
    accent: str = "copper"
    output_style: Literal["normal", "verbose", "minimal", "structured"] = "normal"
    show_thinking: bool = True
    input_mode: Literal["emacs", "vi"] = "emacs"
    colors: dict[str, str] = attrs.Factory(dict)
    notify: TuiNotifyConfig = attrs.Factory(TuiNotifyConfig)


@records.frozen
class McpStdioServer:
    """A server nyz starts as a subprocess and talks to over stdin/stdout."""

    command: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = attrs.Factory(dict)
    cwd: str | None = None
    # Globs over this server's tool names (``mcp__NAME__*`` or bare ``git_*``) that run
    # without asking for approval; the sandbox and deny rules still apply.
    allow_tools: tuple[str, ...] = ()


@records.frozen
class McpHttpServer:
    """A server reached over streamable HTTP; ``headers`` go with every request.
    ``client_id``: an OAuth client registered by hand, for an authorization server that
    offers no dynamic registration (``nyz mcp login``); ``client_secret_env``: the name of the
    environment variable holding that client's secret (a confidential client), never the
    secret itself."""

    url: str
    headers: dict[str, str] = attrs.Factory(dict)
    allow_tools: tuple[str, ...] = ()
    client_id: str | None = None
    client_secret_env: str | None = None


McpServer = McpStdioServer | McpHttpServer


@records.frozen
class McpConfig:
    servers: dict[str, McpServer] = attrs.Factory(dict)
    # More MCP tools than this in a run: they are deferred (found through tool_search).
    defer_threshold: int = 15
    # Seconds one connection attempt may take; also how long a headless run waits for
    # servers still starting before its first model request.
    startup_timeout: float = 30.0
    # A server's elicitation (a form it asks the user to fill) when nobody can answer (nyz
    # run, CI): "decline", or "defaults" to accept a form whose every required field has a
    # default in the server's schema. Interactive sessions always ask the user.
    elicitation: Literal["decline", "defaults"] = "decline"


@records.frozen
class LspServerConfig:
    """One ``[lsp.NAME]`` table: a language server nyz starts on first use (issue 36). A NAME
    of a built-in default (``pyright``, ``typescript``, ``gopls``, ``rust-analyzer``,
    ``clangd``) changes that default's fields; any other NAME needs ``command`` and
    ``languages``."""

    command: str | None = None
    args: tuple[str, ...] = ()
    languages: tuple[str, ...] = ()  # LSP language ids: python, typescript, go, rust, c, cpp...
    extensions: tuple[str, ...] = ()  # file suffixes (".vue") for a language nyz does not know
    root_markers: tuple[str, ...] = ()  # files naming a project root (pyproject.toml, go.mod)
    initialization_options: dict[str, Any] = attrs.Factory(dict)
    # What the server is told when it asks for its configuration (workspace/configuration),
    # by section ("python.analysis" -> {"typeCheckingMode": "strict"}).
    settings: dict[str, Any] = attrs.Factory(dict)
    enabled: bool = True


@records.frozen
class LspConfig:
    """``[lsp]``: the settings below, and one ``[lsp.NAME]`` table per server (``servers``)."""

    enabled: bool = True
    # After write, edit, multi_edit and apply_patch: new errors in the touched files are added
    # to the tool's result, waiting at most ``diagnostics_wait`` seconds for the server.
    diagnostics_after_edit: bool = True
    diagnostics_wait: float = 1.5
    # A server nobody used for this long is stopped (0: never); it starts again on next use.
    idle_timeout: float = 600.0
    startup_timeout: float = 30.0  # seconds a server may take to start and initialize
    request_timeout: float = 20.0  # seconds one request (definition, references...) may take
    servers: dict[str, LspServerConfig] = attrs.Factory(dict)


@records.frozen
class NodeConfig:
    """One ``[[nodes]]`` entry: an SSH host tools can run commands on (key auth only)."""

    name: str
    host: str
    user: str | None = None
    port: int = attrs.field(default=22, metadata={"min": 1, "max": 65535})
    identity_file: str | None = None
    cwd: str | None = None
    # Teams (docs/teams.md): the command that runs nyz on this host, as a shell would read it
    # (``nyz``, or ``~/.local/bin/nyz``, or ``env PYTHONPATH=... python -m nyzhi``).
    nyz_command: str = "nyz"
    # Where ssh records this host's key (trusted on first use); default ssh's own file.
    known_hosts: str | None = None
    # "monitored": only commands nyz can prove read-only run there (``MonitoredExecutor``:
    # ls, cat, grep, git status/log/diff...); "managed": any command (the default).
    mode: Literal["managed", "monitored"] = "managed"


@records.frozen
class TeamSection:
    """``[team]``: what every member of a team shares, on one host or several
    (docs/teams.md)."""

    # Model requests in flight at once across a whole team (the lead, its teammates and their
    # subagents, in-process or process); more wait their turn, first come first served, so a
    # provider's rate limit is met by queueing instead of a storm of retries. 0: no limit.
    max_concurrent_model_calls: int = attrs.field(default=16,
                                                  metadata={"min": 0, "max": 100_000})
    # The lead makes the model calls of its members on other hosts (with its own keys)
    # instead of each node using its own credentials (the default).
    proxy_model_calls: bool = False


@records.frozen
class ShellSandboxConfig:
    """Legacy nyzhi 3.x keys, accepted and ignored: the sandbox is ``[agent.sandbox]``."""

    enabled: bool = False
    allow_network: tuple[str, ...] = ()
    allow_read: tuple[str, ...] = ()
    allow_write: tuple[str, ...] = ()
    block_dotfiles: bool = True


@records.frozen
class ShellEnvConfig:
    """``[shell.env]``: what processes started for tools inherit (``nyzhi.tools.env_policy``).

    ``exclude`` None means the default patterns (secret-looking names and every provider's key
    variable); an explicit list replaces them, ``[]`` excludes nothing."""

    inherit: Literal["all", "core", "none"] = "all"
    exclude: tuple[str, ...] | None = None
    include_only: tuple[str, ...] = ()
    set: dict[str, str] = attrs.Factory(dict)


@records.frozen
class ShellConfig:
    """``[shell]``: how ``bash`` and ``verify`` run commands locally."""

    path: str | None = None  # the shell (``bash``, else ``sh``, when unset)
    env: ShellEnvConfig = attrs.Factory(ShellEnvConfig)
    startup_commands: tuple[str, ...] = ()  # run before every command, in the same shell
    sandbox: ShellSandboxConfig = attrs.Factory(ShellSandboxConfig)


@records.frozen
class BrowserConfig:
    enabled: bool = False
    executable: str | None = None  # the browser tools' Chromium (else found on PATH)
    executable_path: str | None = None  # older spelling of ``executable``
    headless: bool = True


@records.frozen
class WebSearchConfig:
    """``[web_search]``: the search API the ``web_search`` tool asks (none: no such tool)."""

    backend: str | None = None  # searxng, brave, tavily or exa
    url: str | None = None  # the SearXNG instance; for the others, another endpoint base
    max_results: int = 8


@records.frozen
class NetworkConfig:
    """``[network]``: what requests the model directs (``web_fetch``, the browser) may reach
    besides public addresses (``nyzhi.tools.netguard``). Read from the user's own config only:
    a project layer's ``[network]`` is ignored (``nyzhi.config.key_classes.USER_ONLY_TABLES``)."""

    allow_hosts: tuple[str, ...] = ()


@records.frozen
class MemoryConfig:
    auto_memory: bool = True


@records.frozen
class UpdateConfig:
    enabled: bool = True
    check_interval_hours: int = 4
    release_url: str = "https://get.nyzhi.com"


@records.frozen
class IndexConfig:
    enabled: bool = True
    embedding: str = "auto"
    embedding_model: str = ""
    auto_context: bool = True
    auto_context_chunks: int = 5
    exclude: tuple[str, ...] = ()


@records.frozen
class ExternalNotifyConfig:
    webhook_url: str | None = None
    telegram_bot_token: str | None = None
    telegram_chat_id: str | None = None
    discord_webhook_url: str | None = None
    slack_webhook_url: str | None = None


def _webhook(_inst: Any, attribute: Any, value: str | None) -> None:
    if value is not None and not value.startswith(("https://", "http://")):
        raise ValueError(f"{attribute.name} must be an http(s):// URL, not {value!r:.60}")


@records.frozen
class NotifyConfig:
    """``[notify]``: telling the person a long turn ended or an approval waits
    (``nyzhi.core.runtime.notify``). ``after`` is a duration ("30s", "2m")."""

    after: Duration = Duration("30s")  # a main-agent turn at least this long notifies at its end
    approvals: bool = True  # notify when an approval or a question waits for an answer
    bell: bool = True  # the console: the terminal bell
    osc: Literal["off", "9", "777"] = "off"  # the console: a desktop notification by OSC 9/777
    desktop: bool = False  # notify-send, where it is installed and a desktop session runs
    webhook_url: str | None = attrs.field(default=None, validator=_webhook)  # Slack/Discord JSON


@records.frozen
class Config:
    provider: ProviderSection = attrs.Factory(ProviderSection)
    models: ModelsConfig = attrs.Factory(ModelsConfig)
    tui: TuiConfig = attrs.Factory(TuiConfig)
    agent: AgentConfig = attrs.Factory(AgentConfig)
    mcp: McpConfig = attrs.Factory(McpConfig)
    lsp: LspConfig = attrs.Factory(LspConfig)
    nodes: tuple[NodeConfig, ...] = ()
    team: TeamSection = attrs.Factory(TeamSection)
    shell: ShellConfig = attrs.Factory(ShellConfig)
    browser: BrowserConfig = attrs.Factory(BrowserConfig)
    web_search: WebSearchConfig = attrs.Factory(WebSearchConfig)
    network: NetworkConfig = attrs.Factory(NetworkConfig)
    memory: MemoryConfig = attrs.Factory(MemoryConfig)
    update: UpdateConfig = attrs.Factory(UpdateConfig)
    index: IndexConfig = attrs.Factory(IndexConfig)
    external_notify: ExternalNotifyConfig = attrs.Factory(ExternalNotifyConfig)
    notify: NotifyConfig = attrs.Factory(NotifyConfig)

    def with_overrides(
        self,
        *,
        provider: str | None = None,
        model: str | None = None,
        trust: TrustMode | str | None = None,
        sandbox: SandboxLevel | str | None = None,
        max_steps: int | None = None,
        network: bool | None = None,
    ) -> Config:
        """A copy with command-line overrides applied (None leaves a value alone).

        ``model`` applies to ``provider`` if given, else to ``[provider] default``; with
        neither there is nothing to attach it to, so it raises ValueError (the runtime picks
        a provider first, then calls this again with it).
        """
        cfg = self
        if provider is not None:
            cfg = attrs.evolve(cfg, provider=attrs.evolve(cfg.provider, default=provider))
        if model is not None:
            target = provider or cfg.provider.default
            if target is None:
                raise ValueError("--model needs a provider: pass --provider or set [provider] default")
            entries = dict(cfg.provider.entries)
            entries[target] = attrs.evolve(cfg.provider.get(target), model=model)
            cfg = attrs.evolve(cfg, provider=attrs.evolve(cfg.provider, entries=entries))
        agent = cfg.agent
        if trust is not None:
            agent = attrs.evolve(agent, trust=attrs.evolve(agent.trust, mode=TrustMode(trust)))
        if sandbox is not None:
            level = SandboxLevel(sandbox)
            agent = attrs.evolve(agent, sandbox=attrs.evolve(agent.sandbox, level=level))
        if max_steps is not None:
            agent = attrs.evolve(agent, max_steps=max_steps)
        if network is not None:
            agent = attrs.evolve(agent, sandbox=attrs.evolve(agent.sandbox, network=network))
        if agent is not cfg.agent:
            cfg = attrs.evolve(cfg, agent=agent)
        return cfg
