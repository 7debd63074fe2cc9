"""Slash commands: one table (name, one-line help, handler) that ``/help``, Tab completion and
dispatch all read, so a command cannot be listed without working or work without being listed.

A handler is ``async (console, argument) -> None`` and shows its result in the conversation.
A line starting with ``/`` that names no command is reported locally and never reaches the
model. Commands that change the thread or the files (``/compact``, ``/undo``) wait for an
idle agent.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from nyzhi import records

if TYPE_CHECKING:
    from nyzhi.tui.app import Console

Handler = Callable[["Console", str], Awaitable[None]]


@records.frozen
class Command:
    name: str
    summary: str
    run: Handler
    idle_only: bool = False
    needs_runtime: bool = True  # False: works while the runtime is still starting


COMMANDS: dict[str, Command] = {}


def command(name: str, summary: str, *, idle_only: bool = False,
            needs_runtime: bool = True) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        COMMANDS[name] = Command(name, summary, fn, idle_only, needs_runtime)
        return fn

    return register


async def dispatch(console: Console, line: str) -> None:
    name, _, arg = line[1:].partition(" ")
    cmd = COMMANDS.get(name)
    custom = console.rt.knowledge.commands if console.rt and console.rt.knowledge else {}
    if cmd is None and name in custom:  # .nyzhi/commands, .claude/commands, [[agent.commands]]
        console.send_main(console.rt.knowledge.expand(line))
        return
    if cmd is None:
        console.note(("error", f"unknown command /{name} (not sent to the model); "
                               "/help lists the commands"))
        return
    if cmd.needs_runtime and console.rt is None:
        console.note(("notice", f"/{name}: nyz is still starting; try again in a moment"))
        return
    if cmd.idle_only and console.busy:
        console.note(("notice", f"/{name} waits for an idle agent: Esc cancels the turn"))
        return
    await cmd.run(console, arg.strip())


def complete(text: str, cwd: Path, custom: Iterable[str] = ()) -> tuple[str | None, list[str]]:
    """(the completed input or None, the candidates) for Tab: a command name at the start
    (``custom``: the session's custom commands too), or the ``@path`` being typed at the end."""
    if text.startswith("/") and " " not in text:
        names = sorted(n for n in {*COMMANDS, *custom} if n.startswith(text[1:]))
        if len(names) == 1:
            return f"/{names[0]} ", names
        if names:
            return "/" + os.path.commonprefix(names), names
        return None, []
    head, _, word = text.rpartition(" ")
    if word.startswith("@"):
        typed = word[1:]
        base = cwd / os.path.dirname(typed)
        stem = os.path.basename(typed)
        try:
            found = sorted(p.name + ("/" if p.is_dir() else "") for p in base.iterdir()
                           if p.name.startswith(stem) and not p.name.startswith(".") or
                           (stem.startswith(".") and p.name.startswith(stem)))
        except OSError:
            return None, []
        if not found:
            return None, []
        common = found[0] if len(found) == 1 else os.path.commonprefix(found)
        path = os.path.join(os.path.dirname(typed), common)
        return (head + " " if head else "") + "@" + path, found
    return None, []


# ---- the commands ---------------------------------------------------------------------------


@command("help", "list the commands and keys", needs_runtime=False)
async def _help(console: Console, _arg: str) -> None:
    """One line per command (a note each, so the view follows to the last and PageUp shows
    the first), then the keys."""
    console.note(("notice", "commands:"))
    width = max(len(n) for n in COMMANDS) + 2
    for name in sorted(COMMANDS):
        console.note(("body", f"  /{name.ljust(width)}{COMMANDS[name].summary}"))
    custom = console.rt.knowledge.commands if console.rt and console.rt.knowledge else {}
    if custom:
        console.note(("notice", "custom commands (a prompt sent to the model):"))
        for name in sorted(set(custom) - set(COMMANDS)):
            summary = custom[name].description or custom[name].source
            console.note(("body", f"  /{name.ljust(width)}{summary}"[:80]))
    console.note(("notice", "keys: Enter send · Alt-Enter newline · ↑↓ history · Ctrl-R search · "
                            "Tab complete · "
                            "Esc cancel turn · Ctrl-C twice quit · Ctrl-L clear · Ctrl-T theme · "
                            "Ctrl-O expand tool output and thinking · "
                            "Alt-↑↓ select one, Enter expands or collapses it · "
                            "F2 agents · Shift-Tab plan mode · !cmd shell · @path attach"))


@command("status", "session, model, trust, sandbox, context and usage")
async def _status(console: Console, _arg: str) -> None:
    console.note(("body", console.status_text(long=True)))


@command("model", "list models · switch: /model NAME · /model PROVIDER/MODEL")
async def _model(console: Console, arg: str) -> None:
    if not arg:
        console.note(("body", await model_listing(console)))
        return
    rt = console.rt
    provider, _, model = arg.partition("/")
    if model or arg.endswith("/"):
        switch = _provider_switch(console, provider, model.strip() or None)
        if switch is None:
            return
        if switch:  # another provider: the session reopens on it (its thread is kept)
            if console.busy:
                console.note(("notice", "/model PROVIDER/MODEL waits for an idle agent: "
                                        "Esc cancels the turn"))
                return
            if rt.main_agent.spec.session is None:
                console.note(("error", "this session is not saved (--ephemeral), so it cannot "
                                       "reopen on another provider"))
                return
            console.note(("notice", f"switching to {provider}/{model or '(its default model)'}…"))
            console.restart_on(rt.session_id, (provider, model.strip() or None))
            return
        if provider == rt.provider_name:
            arg = model.strip()
    if not arg:
        console.note(("error", f"usage: /model NAME · /model PROVIDER/MODEL (now {rt.model})"))
        return
    rt.set_model(arg)
    console.note(("notice", f"model: {rt.provider_name}/{rt.model} from the next request"))
    console.refresh_status()


def _provider_switch(console: Console, provider: str, model: str | None) -> bool | None:
    """Whether ``/model PROVIDER/MODEL`` names another provider that can be used (True), or a
    model of the current one (False: OpenRouter's ``vendor/model`` names); None: the provider
    is configured but cannot be used, and the person was told why."""
    import os

    from nyzhi.core.assembly import RuntimeConfigError, provider_spec
    from nyzhi.provider import PRESETS

    config = console.config
    if provider == console.rt.provider_name or (
            provider not in config.provider.entries and provider not in PRESETS):
        return False
    try:
        provider_spec(provider, config.with_overrides(provider=provider, model=model), os.environ)
    except RuntimeConfigError as exc:
        if provider in config.provider.entries:
            console.note(("error", f"cannot switch: {exc}"))
            return None
        return False  # a preset with no key: the whole name is the current provider's model
    return True


async def model_listing(console: Console) -> str:
    """The model in use, what its provider lists (GET /models), and the configured providers."""
    import trio

    from nyzhi.provider.models import model_info, refresh_models

    rt = console.rt
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
    providers = console.config.provider.entries
    if providers:
        lines.append("configured providers: " + " · ".join(
            f"{name} ({entry.model or 'its default model'})" for name, entry in providers.items()))
    lines.append("/model NAME switches the model from the next request · /model PROVIDER/MODEL "
                 "reopens this session on another provider")
    return "\n".join(lines)


@command("subagent-config", "model per subagent role · set: /subagent-config ROLE MODEL")
async def _subagent_config(console: Console, arg: str) -> None:
    agents = console.rt.agents
    words = arg.split()
    if len(words) == 2:
        role, model = words
        console.rt.set_role_model(role, None if model == "-" else model)
        text = f"{role}: {model}" if model != "-" else f"{role}: as configured"
        if role not in agents.catalog.roles:
            text += (f" ({role} is not a defined role: it applies to agents spawned as {role}, "
                     "which get the default role)")
        console.note(("notice", text + "; for subagents spawned from now on"))
        return
    if words:
        console.note(("error", "usage: /subagent-config · /subagent-config ROLE MODEL · "
                               "/subagent-config ROLE - (back to the configured model)"))
        return
    console.note(("body", role_models_text(console)))


def role_models_text(console: Console) -> str:
    """Each role's model for the next subagent spawned with it, and where that comes from."""
    rt = console.rt
    agents = rt.agents
    names = agents.catalog.names()
    names += sorted(set(agents.models.overrides) - set(names))
    rows = []
    for name in names:
        choice = agents.models.resolve(agents.catalog.resolve(name), rt.model)
        rows.append(f"  {name:<20} {choice.model}  ({choice.source})")
    return ("subagent models by role (first set wins: /subagent-config, the model spawn_agent "
            "asks for, the role's model, agent.subagent_model, the main agent's):\n"
            + "\n".join(rows) + "\n/subagent-config ROLE MODEL sets one for this session · "
            "/subagent-config ROLE - removes it")


@command("mcp", "MCP servers · /mcp read SERVER URI · /mcp prompt SERVER NAME")
async def _mcp(console: Console, arg: str) -> None:
    import io

    from nyzhi.core.mcp.console import mcp_command  # the line chat's /mcp: one implementation

    out = io.StringIO()
    prompt = await mcp_command(console.rt, f"/mcp {arg}", out)
    console.note(("body", out.getvalue().rstrip("\n")))
    if prompt is not None:
        console.send_main(prompt)


@command("init", "create .nyzhi/ (config, rules, commands…); never overwrites",
         needs_runtime=False)
async def _init(console: Console, _arg: str) -> None:
    import trio

    from nyzhi.config.scaffold import init_lines

    lines = await trio.to_thread.run_sync(init_lines, console.cwd)
    console.note(("body", "\n".join(lines) + "\n(nyz reads the new files when it next starts)"))


@command("trust", "show or set trust: /trust off|limited|autoedit|full")
async def _trust(console: Console, arg: str) -> None:
    from nyzhi.config.modes import parse_trust

    gates = console.rt.main_agent.tooling.gates
    if arg:
        try:
            mode = parse_trust(arg)
        except ValueError as exc:
            console.note(("error", str(exc)))
            return
        gates.trust = attrs.evolve(gates.trust, mode=mode)
    console.note(("body", f"trust: {gates.trust.mode.value}"))
    console.refresh_status()


@command("thinking", "thinking: off|low|medium|high|TOKENS (Alt-T cycles)")
async def _thinking(console: Console, arg: str) -> None:
    from nyzhi.core.thinking import thinking_command

    console.note(("body", thinking_command(console.rt, arg)))
    console.refresh_status()


@command("sandbox", "show the sandbox level and writable roots")
async def _sandbox(console: Console, _arg: str) -> None:
    sb = console.rt.main_agent.tooling.context.sandbox
    if sb is None:
        console.note(("body", "sandbox: none"))
        return
    roots = ", ".join(str(r) for r in (sb.workspace_root, *sb.writable_roots))
    console.note(("body", f"sandbox: {sb.level.value} (writable: {roots}; "
                          f"network {'on' if sb.network else 'off'})"))


@command("plan", "toggle plan mode (read-only tools only); also Shift-Tab")
async def _plan(console: Console, _arg: str) -> None:
    console.toggle_plan()


@command("clear", "clear the screen (the thread is kept); also Ctrl-L", needs_runtime=False)
async def _clear(console: Console, _arg: str) -> None:
    console.clear_screen()


@command("compact", "summarise older history to free context", idle_only=True)
async def _compact(console: Console, _arg: str) -> None:
    messages = console.rt.main_agent.loop.messages
    before = len(messages)
    await console.rt.compact()  # a compaction shows itself (its event) with the token counts
    if len(messages) == before:
        console.note(("notice", "nothing to compact: the thread is still short"))


@command("undo", "revert the last file change", idle_only=True)
async def _undo(console: Console, _arg: str) -> None:
    console.note(("body", console.rt.undo()))


@command("diff", "git diff of the workspace")
async def _diff(console: Console, _arg: str) -> None:
    import trio

    proc = await trio.run_process(["git", "diff", "--stat", "--patch"], cwd=console.cwd,
                                  capture_stdout=True, capture_stderr=True, check=False)
    out = (proc.stdout or proc.stderr).decode(errors="replace").rstrip() or "no changes"
    lines = out.split("\n")
    if len(lines) > 200:
        lines = [*lines[:200], f"… {len(lines) - 200} more line(s)"]
    console.note([("tool_ok" if ln.startswith("+") else "tool_err" if ln.startswith("-")
                   else "body", ln + "\n") for ln in lines])


@command("sessions", "list recent sessions (resume one with /resume ID)")
async def _sessions(console: Console, _arg: str) -> None:
    from nyzhi.core.sessions import SessionStore

    metas = SessionStore().list()[:15]
    if not metas:
        console.note(("body", "no sessions yet"))
        return
    console.note([("body", f"{m.id[:8]}  {(m.title or '(untitled)')[:40]:40}  "
                           f"{m.message_count:>4} msgs  {m.updated[:16]}\n") for m in metas])


@command("resume", "switch to another session: /resume ID-or-title", idle_only=True)
async def _resume(console: Console, arg: str) -> None:
    from nyzhi.core.sessions import SessionError, SessionStore

    if not arg:
        await _sessions(console, "")
        return
    try:
        meta = SessionStore().resolve(arg)
    except SessionError as exc:
        console.note(("error", str(exc)))
        return
    console.restart_on(meta.id)


@command("export", "write the thread as Markdown: /export [FILE]")
async def _export(console: Console, arg: str) -> None:
    console.note(export_thread(console, arg))


def export_thread(console: Console, arg: str) -> tuple[str, str]:
    """Write the main thread as Markdown (temp file + rename); the line to show."""
    name = os.path.expanduser(arg) if arg else f"nyzhi-{console.rt.session_id[:8]}.md"
    path = console.cwd / name  # an absolute name replaces cwd
    parts: list[str] = []
    for m in console.rt.main_agent.loop.messages:
        text = m.content
        for call in m.tool_calls:
            text += f"\n\n`{call.name}` {call.arguments}"
        parts.append(f"## {m.role}\n\n{text.strip()}\n")
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text("\n".join(parts), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        return ("error", f"cannot write {path}: {exc.strerror}")
    return ("notice", f"exported {len(parts)} message(s) to {path}")


@command("agents", "show or hide the agent tree; also F2", needs_runtime=False)
async def _agents(console: Console, _arg: str) -> None:
    console.toggle_panel()


@command("spawn", "start a subagent of the main agent: /spawn ROLE TASK")
async def _spawn(console: Console, arg: str) -> None:
    """Through the subagent manager, as the ``spawn_agent`` tool does: the agent is tracked
    (status, budget, limits) and appears in the tree. Any ROLE name works: one that is not
    defined gets the default role under that name."""
    role, _, task = arg.partition(" ")
    if not role or not task.strip():
        console.note(("error", "usage: /spawn ROLE TASK (roles: /subagent-config lists them)"))
        return
    rt = console.rt
    try:
        started = await rt.agents.spawn(rt.main_agent.spec.path, task.strip(), role)
    except Exception as exc:  # the thread or depth limit, a broken role file: say why
        console.note(("error", f"cannot start a {role} agent: {exc}"))
        return
    console.note(("notice", f"started {started['agent_nickname']}; F2 shows it"))


@command("team", "team members and tasks · message one: /team MEMBER TEXT")
async def _team(console: Console, arg: str) -> None:
    """Members (status, unread) and tasks, from the team's files; with an argument, a message
    from ``user`` into a member's inbox (it wakes the member)."""
    import trio

    from nyzhi.core.teams.report import summary_lines, team_status

    rt = console.rt
    team = rt.main_agent.tooling.context.team_name
    if not team:
        console.note(("notice", "not in a team: nyz team start NAME --members alice:worker, "
                                "or ask the agent to create one"))
        return
    if arg:
        member, _, text = arg.partition(" ")
        path = f"/team/{team}/{member}"
        if not text.strip() or path not in rt.teams.members:
            console.note(("error", "usage: /team MEMBER TEXT, MEMBER one of the running "
                                   "teammates (F2 shows them)"))
            return
        await rt.send(path, text.strip())
        console.note(("notice", f"sent to {member}"))
        return
    data = await trio.to_thread.run_sync(team_status, team)
    console.note(("body", "\n".join(summary_lines(data))))


@command("hooks", "list the hooks that run in this session")
async def _hooks(console: Console, _arg: str) -> None:
    specs: Any = console.rt.hooks.specs
    if not specs:
        console.note(("body", "no hooks"))
        return
    console.note([("body", f"{s.event:<20} {s.tool_pattern or '*':<10} {s.command}"
                           f"  ({s.source})\n") for s in specs])


@command("memory", "saved memory: /memory lists, /memory TOPIC shows one topic",
         needs_runtime=False)
async def _memory(console: Console, arg: str) -> None:
    import trio

    from nyzhi.config.workspace import find_root

    root = find_root(Path(console.cwd))
    console.note(("body", await trio.to_thread.run_sync(memory_text, root, arg)))


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
async def _config(console: Console, _arg: str) -> None:
    console.note(("body", console.config_text()))


@command("theme", "switch between the dark and light theme; also Ctrl-T", needs_runtime=False)
async def _theme(console: Console, _arg: str) -> None:
    console.toggle_theme()


@command("quit", "leave the console; also Ctrl-C twice", needs_runtime=False)
async def _quit(console: Console, _arg: str) -> None:
    console.quit()
