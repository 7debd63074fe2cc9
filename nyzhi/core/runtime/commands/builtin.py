"""The slash commands themselves, written once against ``CommandHost`` (``registry``).

Each handler is ``async (host, argument) -> None`` and shows its result with ``host.show``.
Commands that need a front-end feature say so in ``needs``: ``/clear`` (a screen), ``/agents``
(the agent tree), ``/theme`` (colour themes) and ``/resume`` (reopening the runtime in place)
are the console's; every other command works in every front end.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

from nyzhi.core.runtime.commands.registry import (
    ADDED,
    BODY,
    COMMANDS,
    EDITOR,
    ERROR,
    NOTICE,
    PANEL,
    PICK,
    REMOVED,
    RESTART,
    SCREEN,
    THEME,
    WEB,
    CommandHost,
    available,
    command,
    custom_commands,
)

MCP_USAGE = "usage: /mcp · /mcp read SERVER URI · /mcp prompt SERVER NAME [K=V ...]"


@command("help", "list the commands and keys", needs_runtime=False)
async def _help(host: CommandHost, _arg: str) -> None:
    """One line per command this front end offers, the custom commands, then the keys."""
    offered = available(host.features)
    host.show(NOTICE, "commands:")
    width = max(len(n) for n in offered) + 2
    for name in sorted(offered):
        host.show(BODY, f"  /{name.ljust(width)}{offered[name].summary}")
    custom = custom_commands(host)
    if set(custom) - set(offered):
        host.show(NOTICE, "custom commands (a prompt sent to the model):")
        for name in sorted(set(custom) - set(offered)):
            summary = custom[name].description or custom[name].source
            host.show(BODY, f"  /{name.ljust(width)}{summary}"[:80])
    shadowed = sorted(set(custom) & set(offered))
    if shadowed:  # built-ins win, so a project cannot redefine what /undo does
        host.show(NOTICE, "custom commands hidden by built-in ones of the same name (rename "
                          "them to use them): " + ", ".join(
                              f"/{n} ({custom[n].source})" for n in shadowed))
    host.show(NOTICE, host.keys_help)


@command("status", "session, model, trust, sandbox, context and usage")
async def _status(host: CommandHost, _arg: str) -> None:
    host.show(BODY, host.status_text(long=True))


@command("cancel", "cancel the running turn and its subagents'; also Esc, Ctrl-C",
         needs_runtime=False)
async def _cancel(host: CommandHost, _arg: str) -> None:
    host.cancel_turn()


@command("model", "list models · switch: /model NAME · /model PROVIDER/MODEL")
async def _model(host: CommandHost, arg: str) -> None:
    if not arg and PICK in host.features:
        choices = await model_choices(host)
        if choices:
            host.pick(f"Model (now {host.rt.provider_name}/{host.rt.model})",  # type: ignore[attr-defined]
                      choices)
            return
    if not arg:
        host.show(BODY, await model_listing(host))
        return
    rt = host.rt
    provider, _, model = arg.partition("/")
    if model or arg.endswith("/"):
        switch = _provider_switch(host, provider, model.strip() or None)
        if switch is None:
            return
        if switch:  # another provider: the session reopens on it (its thread is kept)
            if RESTART not in host.features:
                host.show(ERROR, f"this front end cannot switch providers in place: restart "
                                 f"with --provider {provider} --session {rt.session_id[:8]}")
                return
            if host.busy:
                host.show(NOTICE, "/model PROVIDER/MODEL waits for an idle agent: "
                                  f"{host.cancel_hint} cancels the turn")
                return
            if rt.main_agent.spec.session is None:
                host.show(ERROR, "this session is not saved (--ephemeral), so it cannot "
                                 "reopen on another provider")
                return
            host.show(NOTICE, f"switching to {provider}/{model or '(its default model)'}…")
            host.restart_on(rt.session_id, (provider, model.strip() or None))  # type: ignore[attr-defined]
            return
        if provider == rt.provider_name:
            arg = model.strip()
    if not arg:
        host.show(ERROR, f"usage: /model NAME · /model PROVIDER/MODEL (now {rt.model})")
        return
    rt.set_model(arg)
    host.show(NOTICE, f"model: {rt.provider_name}/{rt.model} from the next request")
    host.refresh_status()


def _provider_switch(host: CommandHost, provider: str, model: str | None) -> bool | None:
    """Whether ``/model PROVIDER/MODEL`` names another provider that can be used (True), or a
    model of the current one (False: OpenRouter's ``vendor/model`` names); None: the provider
    is configured but cannot be used, and the person was told why."""
    from nyzhi.core.runtime.assembly import RuntimeConfigError, provider_spec
    from nyzhi.provider import PRESETS

    config = host.loaded_config().config
    if provider == host.rt.provider_name or (
            provider not in config.provider.entries and provider not in PRESETS):
        return False
    try:
        provider_spec(provider, config.with_overrides(provider=provider, model=model), os.environ)
    except RuntimeConfigError as exc:
        if provider in config.provider.entries:
            host.show(ERROR, f"cannot switch: {exc}")
            return None
        return False  # a preset with no key: the whole name is the current provider's model
    return True


async def model_choices(host: CommandHost) -> list[tuple[str, str, str]]:
    """``/model``'s picker: the provider's listed models (the current one first), then each
    other configured provider's model; empty when the provider lists nothing."""
    import trio

    from nyzhi.provider.models import refresh_models
    rt = host.rt
    try:
        with trio.fail_after(10):
            listed = await refresh_models(rt.main_agent.loop.provider, register_unknown=False)
    except Exception:  # no listing endpoint, offline: /model shows why, as text
        return []
    names = sorted({m.id for m in listed}, key=lambda n: (n != rt.model, n))
    choices = [(n, "in use" if n == rt.model else rt.provider_name, f"/model {n}")
               for n in names]
    for name, entry in host.loaded_config().config.provider.entries.items():
        if name != rt.provider_name and entry.model:
            choices.append((f"{name}/{entry.model}", "reopens the session there",
                                  f"/model {name}/{entry.model}"))
    return choices


async def model_listing(host: CommandHost) -> str:
    """The model in use, what its provider lists (GET /models), and the configured providers."""
    import trio

    from nyzhi.provider.models import model_info, refresh_models

    rt = host.rt
    current = rt.model
    lines = [f"model: {rt.provider_name}/{current} "
             f"(context {model_info(current).context_window} tokens)"]
    try:
        with trio.fail_after(10):
            listed = await refresh_models(rt.main_agent.loop.provider, register_unknown=False)
        names = sorted({m.id for m in listed})
        lines.append(f"{rt.provider_name} lists: " + (", ".join(
            f"{n}{' *' if n == current else ''}" for n in names) or "nothing"))
    except Exception as exc:  # no listing endpoint, offline, a timeout: the rest still helps
        lines.append(f"{rt.provider_name} lists: (unavailable: {exc or type(exc).__name__})")
    providers = host.loaded_config().config.provider.entries
    if providers:
        lines.append("configured providers: " + " · ".join(
            f"{name} ({entry.model or 'its default model'})" for name, entry in providers.items()))
    lines.append("/model NAME switches the model from the next request · /model PROVIDER/MODEL "
                 "reopens this session on another provider")
    return "\n".join(lines)


@command("subagent-config", "model per subagent role · set: /subagent-config ROLE MODEL")
async def _subagent_config(host: CommandHost, arg: str) -> None:
    agents = host.rt.agents
    words = arg.split()
    if len(words) == 2:
        role, model = words
        host.rt.set_role_model(role, None if model == "-" else model)
        text = f"{role}: {model}" if model != "-" else f"{role}: as configured"
        if role not in agents.catalog.roles:
            text += (f" ({role} is not a defined role: it applies to agents spawned as {role}, "
                     "which get the default role)")
        host.show(NOTICE, text + "; for subagents spawned from now on")
        return
    if words:
        host.show(ERROR, "usage: /subagent-config · /subagent-config ROLE MODEL · "
                         "/subagent-config ROLE - (back to the configured model)")
        return
    host.show(BODY, role_models_text(host.rt))


def role_models_text(rt: Any) -> str:
    """Each role's model for the next subagent spawned with it, and where that comes from."""
    agents = rt.agents
    names = agents.catalog.names()
    names += sorted(set(agents.models.overrides) - set(names))
    rows = []
    for name in names:
        choice = agents.models.resolve(agents.catalog.resolve(name, strict=False), rt.model)
        rows.append(f"  {name:<20} {choice.model}  ({choice.source})")
    return ("subagent models by role (first set wins: /subagent-config, the model spawn_agent "
            "asks for, the role's model, agent.subagent_model, the main agent's):\n"
            + "\n".join(rows) + "\n/subagent-config ROLE MODEL sets one for this session · "
            "/subagent-config ROLE - removes it")


@command("mcp", "MCP servers · /mcp read SERVER URI · /mcp prompt SERVER NAME")
async def _mcp(host: CommandHost, arg: str) -> None:
    """Servers, resources and prompts of the runtime's MCP pool; ``prompt`` sends a server
    prompt as the next user message."""
    text, prompt = await mcp_text(host.rt, arg)
    host.show(BODY, text)
    if prompt is not None:
        host.send_main(prompt)


async def mcp_text(rt: Any, arg: str) -> tuple[str, str | None]:
    """(what to show, a prompt to send or None) for ``/mcp ARG``."""
    try:
        words = shlex.split(arg)
    except ValueError as exc:
        return f"{exc}\n{MCP_USAGE}", None
    try:
        if not words:
            return await _mcp_overview(rt), None
        if words[0] == "read" and len(words) == 3:
            text = await rt.mcp_read_resource(words[1], words[2])
            return text[:4000] + ("\n[…]" if len(text) > 4000 else ""), None
        if words[0] == "prompt" and len(words) >= 3:
            args = dict(w.split("=", 1) for w in words[3:] if "=" in w)
            text = await rt.mcp_prompt_text(words[1], words[2], args)
            return f"[sending prompt {words[1]}/{words[2]}]", text
    except Exception as exc:  # an unknown server, a server error: say so, keep going
        return f"mcp: {exc}", None
    return MCP_USAGE, None


async def _mcp_overview(rt: Any) -> str:
    statuses = rt.mcp_status()
    if not statuses:
        return "no MCP servers (nyz mcp add NAME -- COMMAND)"
    lines = []
    for s in statuses:
        detail = f"{s.tools} tools" if s.status == "connected" else s.reason
        lines.append(f"{s.name}: {s.status} · {detail}")
    for r in await rt.mcp_resources():
        lines.append(f"  resource {r.server} {r.uri}" + (f" ({r.name})" if r.name else ""))
    for p in await rt.mcp_prompts():
        args = f" {' '.join(a + '=' for a in p.arguments)}" if p.arguments else ""
        lines.append(f"  prompt {p.server} {p.name}{args}")
    return "\n".join(lines)


@command("init", "create .nyzhi/ (config, rules, commands…); never overwrites",
         needs_runtime=False)
async def _init(host: CommandHost, _arg: str) -> None:
    import trio

    from nyzhi.config.scaffold import init_lines

    lines = await trio.to_thread.run_sync(init_lines, host.cwd)
    host.show(BODY, "\n".join(lines) + "\n(nyz reads the new files when it next starts)")


@command("init-deep", "subagents write AGENTS.md, diff first · /init-deep force",
         idle_only=True)
async def _init_deep(host: CommandHost, arg: str) -> None:
    """``nyz deepinit`` in the session (``nyzhi.core.runtime.deepinit``): the found commands run
    through the verify tool's gates, so this front end's approval asks about them."""
    from nyzhi.core.runtime.deepinit import deep_init

    if arg not in ("", "force"):
        host.show(ERROR, "usage: /init-deep [force]")
        return
    rt = host.rt
    root = Path(rt.tooling.context.workspace_root)
    try:
        result = await deep_init(rt, root, force=arg == "force",
                                 progress=lambda line: host.show(NOTICE, line))
    except Exception as exc:  # a subagent limit, a full disk: say why
        host.show(ERROR, f"/init-deep: {exc}")
        return
    host.show_lines([(ADDED if ln.startswith("+") and not ln.startswith("+++") else
                      REMOVED if ln.startswith("-") and not ln.startswith("---") else BODY, ln)
                     for ln in result.diff])
    if result.existed and not result.written:
        host.show(ERROR, f"{result.path} exists and was not replaced: /init-deep force "
                         "replaces it with the version above")
    else:
        host.show(NOTICE, f"wrote {result.path}" if result.diff
                  else f"{result.path} is up to date")


@command("trust", "show or set trust: /trust off|limited|autoedit|full")
async def _trust(host: CommandHost, arg: str) -> None:
    from nyzhi.core.protocol import Session, ops

    if arg:
        try:
            host.show(BODY, Session(host.rt, host).apply(ops.SetTrust(arg)).notice)
        except ValueError as exc:
            host.show(ERROR, str(exc))
            return
    else:
        host.show(BODY, f"trust: {host.rt.main_agent.tooling.gates.trust.mode.value}")
    host.refresh_status()


@command("thinking", "thinking: /thinking off|low|medium|high|TOKENS; Alt-T cycles")
async def _thinking(host: CommandHost, arg: str) -> None:
    from nyzhi.core.runtime.thinking import thinking_command

    host.show(BODY, thinking_command(host.rt, arg))
    host.refresh_status()


@command("sandbox", "show the sandbox level and writable roots")
async def _sandbox(host: CommandHost, _arg: str) -> None:
    sb = host.rt.main_agent.tooling.context.sandbox
    if sb is None:
        host.show(BODY, "sandbox: none")
        return
    roots = ", ".join(str(r) for r in (sb.workspace_root, *sb.writable_roots))
    host.show(BODY, f"sandbox: {sb.level.value} (writable: {roots}; "
                    f"network {'on' if sb.network else 'off'})")


@command("plan", "toggle plan mode (read-only tools only); also Shift-Tab")
async def _plan(host: CommandHost, _arg: str) -> None:
    toggle_plan(host)


def toggle_plan(host: CommandHost) -> None:
    """Plan mode switched through the session protocol (``SetPlanMode``), as every front end
    switches it: the main agent and agents spawned from now on get read-only tools; leaving
    it with a plan written sends the message that executes it."""
    from nyzhi.core.protocol import Session, ops

    knowledge = host.rt.knowledge if host.rt is not None else None
    if knowledge is None:
        return
    applied = Session(host.rt, host).apply(ops.SetPlanMode(not knowledge.plan_mode))
    host.show(NOTICE, applied.notice)
    host.refresh_status()
    if applied.follow_up:
        host.send_main(applied.follow_up)


@command("clear", "clear the screen (the thread is kept); also Ctrl-L", needs_runtime=False,
         needs=frozenset({SCREEN}))
async def _clear(host: Any, _arg: str) -> None:
    host.clear_screen()


@command("compact", "summarise older history to free context · /compact HINT",
         idle_only=True)
async def _compact(host: CommandHost, arg: str) -> None:
    messages = host.rt.main_agent.loop.messages
    before = len(messages)
    await host.rt.compact(arg)  # a compaction shows itself (its event) with the token counts
    if len(messages) == before:
        host.show(NOTICE, "nothing to compact: the thread is still short")


@command("undo", "revert the last file change · /undo all: the whole turn's", idle_only=True)
async def _undo(host: CommandHost, arg: str) -> None:
    from nyzhi.core.runtime.commands.checkpoints import undo

    await undo(host, arg)


@command("diff", "git diff of the workspace")
async def _diff(host: CommandHost, _arg: str) -> None:
    import trio

    from nyzhi.tools.gitsafe import EXT_DIFF_OFF, run_git

    # neutralised: the workspace's git config is writable from the sandbox
    proc = await trio.to_thread.run_sync(
        lambda: run_git(host.cwd, "diff", *EXT_DIFF_OFF, "--stat", "--patch"))
    out = (proc.stdout or proc.stderr).decode(errors="replace").rstrip() or "no changes"
    lines = out.split("\n")
    if len(lines) > 200:
        lines = [*lines[:200], f"… {len(lines) - 200} more line(s)"]
    host.show_lines([(ADDED if ln.startswith("+") else REMOVED if ln.startswith("-")
                      else BODY, ln) for ln in lines])


@command("sessions", "list recent sessions (resume one with /resume ID)")
async def _sessions(host: CommandHost, _arg: str) -> None:
    from nyzhi.core.runtime.sessions import SessionStore

    metas = SessionStore().list()[:15]
    if not metas:
        host.show(BODY, "no sessions yet")
        return
    host.show_lines([(BODY, f"{m.id[:8]}  {(m.title or '(untitled)')[:40]:40}  "
                            f"{m.message_count:>4} msgs  {m.updated[:16]}") for m in metas])


@command("resume", "switch to another session: /resume ID-or-title", idle_only=True,
         needs=frozenset({RESTART}))
async def _resume(host: Any, arg: str) -> None:
    from nyzhi.core.runtime.sessions import SessionError, SessionStore

    if not arg and PICK in host.features:
        metas = SessionStore().list()[:100]
        if metas:
            host.pick("Resume a session", session_choices(metas, host.rt.session_id))
            return
    if not arg:
        await _sessions(host, "")
        return
    try:
        meta = SessionStore().resolve(arg)
    except SessionError as exc:
        host.show(ERROR, str(exc))
        return
    host.restart_on(meta.id)


def session_choices(metas: list[Any], current: str) -> list[tuple[str, str, str]]:
    """``/resume``'s picker: each session's title, with its id, age and size."""
    return [((m.title or "(untitled)")[:60],
                   f"{m.id[:8]} · {age(m.updated)} · {m.message_count} msgs"
                   + (" · this session" if m.id == current else ""), f"/resume {m.id}")
            for m in metas]


def age(stamp: str) -> str:
    """How long ago an ISO time was, in the largest whole unit ("5 min ago", "3 d ago")."""
    import datetime as dt

    try:
        then = dt.datetime.fromisoformat(stamp)
    except ValueError:
        return "?"
    if then.tzinfo is None:
        then = then.replace(tzinfo=dt.UTC)
    secs = max(0, int((dt.datetime.now(dt.UTC) - then).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if secs >= size:
            return f"{secs // size} {unit} ago"
    return "just now"


@command("export", "write the thread as Markdown: /export [FILE]")
async def _export(host: CommandHost, arg: str) -> None:
    host.show(*export_thread(host.rt, host.cwd, arg))


def export_thread(rt: Any, cwd: Path, arg: str) -> tuple[str, str]:
    """Write the main thread as Markdown (atomically); (kind, the line to show)."""
    name = os.path.expanduser(arg) if arg else f"nyzhi-{rt.session_id[:8]}.md"
    path = cwd / name  # an absolute name replaces cwd
    parts: list[str] = []
    for m in rt.main_agent.loop.messages:
        text = m.content
        for call in m.tool_calls:
            text += f"\n\n`{call.name}` {call.arguments}"
        parts.append(f"## {m.role}\n\n{text.strip()}\n")
    from nyzhi.core.runtime.sessions import write_export

    try:  # the one atomic write: fsynced, so a crash leaves the old file or the whole export
        write_export(path, "\n".join(parts), parents=True)
    except OSError as exc:
        return (ERROR, str(exc))
    return (NOTICE, f"exported {len(parts)} message(s) to {path}")


@command("agents", "show or hide the agent tree; also F2", needs_runtime=False,
         needs=frozenset({PANEL}))
async def _agents(host: Any, _arg: str) -> None:
    host.toggle_panel()


@command("spawn", "start a subagent of the main agent: /spawn ROLE TASK")
async def _spawn(host: CommandHost, arg: str) -> None:
    """Through the subagent manager, as the ``spawn_agent`` tool does: the agent is tracked
    (status, budget, limits). Any ROLE name works: one that is not defined gets the default
    role under that name."""
    role, _, task = arg.partition(" ")
    if not role or not task.strip():
        host.show(ERROR, "usage: /spawn ROLE TASK (roles: /subagent-config lists them)")
        return
    rt = host.rt
    try:
        started = await rt.agents.spawn(rt.main_agent.spec.path, task.strip(), role)
    except Exception as exc:  # the thread or depth limit, a broken role file: say why
        host.show(ERROR, f"cannot start a {role} agent: {exc}")
        return
    where = "; F2 shows it" if PANEL in host.features else ""
    host.show(NOTICE, f"started {started['agent_nickname']}{where}")


@command("team", "team members and tasks · message one: /team MEMBER TEXT")
async def _team(host: CommandHost, arg: str) -> None:
    """Members (status, unread) and tasks, from the team's files; with an argument, a message
    from ``user`` into a member's inbox (it wakes the member)."""
    import trio

    from nyzhi.core.runtime.teams.report import summary_lines, team_status

    rt = host.rt
    team = rt.main_agent.tooling.context.team_name
    if not team:
        host.show(NOTICE, "not in a team: nyz team start NAME --members alice:worker, "
                          "or ask the agent to create one")
        return
    if arg:
        member, _, text = arg.partition(" ")
        path = f"/team/{team}/{member}"
        if not text.strip() or path not in rt.teams.members:
            host.show(ERROR, "usage: /team MEMBER TEXT, MEMBER one of the running teammates")
            return
        await rt.send(path, text.strip())
        host.show(NOTICE, f"sent to {member}")
        return
    data = await trio.to_thread.run_sync(team_status, team)
    host.show(BODY, "\n".join(summary_lines(data)))


@command("hooks", "list the hooks that run in this session")
async def _hooks(host: CommandHost, _arg: str) -> None:
    specs: Any = host.rt.hooks.specs
    if not specs:
        host.show(BODY, "no hooks")
        return
    host.show_lines([(BODY, f"{s.event:<20} {s.tool_pattern or '*':<10} {s.command}"
                            f"  ({s.source})") for s in specs])


@command("memory", "saved memory: /memory lists, /memory TOPIC shows one topic",
         needs_runtime=False)
async def _memory(host: CommandHost, arg: str) -> None:
    import trio

    from nyzhi.config.workspace import find_root

    root = find_root(Path(host.cwd))
    host.show(BODY, await trio.to_thread.run_sync(memory_text, root, arg))


def memory_text(root: Path, topic: str = "") -> str:
    """The same files ``nyz memory`` and the memory tools use (``nyzhi.knowledge.memory``)."""
    from nyzhi.knowledge.frontmatter import first_prose_line
    from nyzhi.knowledge.memory import MemoryRequestError, MemoryStore

    store = MemoryStore.for_workspace(root)
    if not topic:
        user = store.read_user()
        lines = [f"user memory: {store.user_file}"
                 + (f" ({len(user.splitlines())} lines)" if user else " (empty)"),
                 f"project memory: {store.project_dir}"]
        lines += [f"  {t}: {first_prose_line(store.read_topic(t) or '', 80)}"
                  for t in store.topics()] or ["  (no topics)"]
        return "\n".join(lines)
    try:
        text = store.read_topic(topic)
    except MemoryRequestError as exc:
        return str(exc)
    if text is None:
        return f"no topic {topic!r} (project topics: {', '.join(store.topics()) or 'none'})"
    return text.rstrip()


@command("config", "the config files and the settings in effect")
async def _config(host: CommandHost, _arg: str) -> None:
    host.show(BODY, config_summary(host.loaded_config()))


def config_summary(loaded: Any) -> str:
    lines = ["config files (merge order):"]
    for layer in loaded.candidates:
        path = getattr(layer, "path", layer)
        lines.append(f"  {path}{'' if Path(str(path)).exists() else '  (absent)'}")
    tui = loaded.config.tui
    lines.append(f"[tui] theme={tui.theme} markdown={tui.markdown} streaming={tui.streaming} "
                 f"show_thinking={tui.show_thinking}")
    return "\n".join(lines)


@command("doctor", "check providers, sandbox, tools, disk · /doctor online",
         needs_runtime=False)
async def _doctor(host: CommandHost, arg: str) -> None:
    """``nyz doctor`` in the session (``nyzhi.core.runtime.doctor``); ``online`` adds one
    authenticated call per provider."""
    import trio

    from nyzhi.core.runtime.doctor import FAIL, OK, run_checks, verdict

    if arg.strip() not in ("", "online"):
        host.show(ERROR, "usage: /doctor [online]")
        return
    checks = await trio.to_thread.run_sync(
        lambda: run_checks(Path(host.cwd), online=arg.strip() == "online"))
    host.show_lines([(ERROR if c.status == FAIL else BODY if c.status == OK else NOTICE,
                      c.line()) for c in checks] + [(BODY, verdict(checks))])


@command("stats", "usage and cost of all sessions · /stats model|project|agent",
         needs_runtime=False)
async def _stats(host: CommandHost, arg: str) -> None:
    """``nyz stats`` in the session: the same index and text (``nyzhi.core.runtime.usage_stats``)."""
    import trio

    from nyzhi.core.runtime.sessions import default_sessions_dir
    from nyzhi.core.runtime.usage_stats import GROUPS, session_summaries, stats, stats_lines

    by = arg.strip() or None
    if by is not None and by not in GROUPS:
        host.show(ERROR, f"usage: /stats [{'|'.join(GROUPS)}]")
        return
    summaries = await trio.to_thread.run_sync(session_summaries, default_sessions_dir())
    host.show(BODY, "\n".join(stats_lines(stats(summaries, by))))


@command("theme", "pick a theme · /theme dark|light|high-contrast|auto · Ctrl-T",
         needs_runtime=False,
         needs=frozenset({THEME}))
async def _theme(host: Any, arg: str) -> None:
    if arg:
        host.set_theme(arg)
    elif PICK in host.features:
        host.pick("Theme", [(n, "in use" if n == host.theme else "", f"/theme {n}")
                        for n in host.theme_names()])
    else:
        host.toggle_theme()


@command("editor", "write the prompt in $VISUAL/$EDITOR and send it; also Ctrl-G",
         needs_runtime=False, needs=frozenset({EDITOR}))
async def _editor(host: Any, _arg: str) -> None:
    host.open_editor()


@command("web", "this session live in a browser: prints the URL to open")
async def _web(host: CommandHost, _arg: str) -> None:
    """The front end serves its own runtime (the console, given a server by ``nyz``); the
    others say so, and how to get a browser console instead."""
    if WEB not in host.features:
        host.show(ERROR, "/web: this front end cannot serve its session to a browser; the "
                         "console can, and `nyz serve` runs a session for one")
        return
    await host.serve_web()  # type: ignore[attr-defined]


@command("quit", "leave nyz (also /exit)", needs_runtime=False, aliases=("exit",))
async def _quit(host: CommandHost, _arg: str) -> None:
    host.quit()


__all__ = ["COMMANDS", "memory_text", "role_models_text", "toggle_plan"]
