"""The one table of slash commands (name, one-line help, handler) every front end dispatches
from: the console, the line chat, and the coming web console and editor protocol.

A command is written once, against ``CommandHost``: what a front end supplies (the runtime, a
way to show text, a way to send a prompt, its idle state). The front end decides how things
look (``show(kind, text)``: a styled note in the console, a plain line in the chat). Commands
that need something only some front ends have (a screen to clear, an agent tree, themes,
reopening the runtime under the same screen) name it in ``needs``; a front end offers them
only if its ``features`` cover it, so ``/help`` lists exactly what works there.

A line starting with ``/`` that names no command and no custom command is reported locally
and never reaches the model. Commands that change the thread or the files (``/compact``,
``/undo``) wait for an idle agent.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

from nyzhi import records

# What ``show`` is told a line is: ordinary output, a status notice, an error; ``added`` and
# ``removed`` are diff lines.
BODY, NOTICE, ERROR, ADDED, REMOVED = "body", "notice", "error", "added", "removed"

# Front-end features a command may need (``Command.needs``, ``CommandHost.features``).
SCREEN = "screen"  # a screen that can be cleared
PANEL = "panel"  # the agent tree
THEME = "theme"  # colour themes
RESTART = "restart"  # close the runtime and open another (a session, a provider) in place
EDITOR = "editor"  # hand the terminal to $VISUAL/$EDITOR for the prompt
# A picker (arrow keys, type to filter): ``pick(title, [(label, detail, command line)])``;
# picking one runs its command line (``/resume ID``).
PICK = "pick"
# Serving this session live to a browser (``serve_web()``: ``/web``). Unlike the others no
# command ``needs`` it: ``/web`` is offered everywhere and says where it is unavailable.
WEB = "web"


class CommandHost(Protocol):
    """What a front end gives the commands. Methods named by a feature (``clear_screen`` for
    ``SCREEN``, ``toggle_panel`` for ``PANEL``, ``toggle_theme`` for ``THEME``, ``restart_on``
    for ``RESTART``, ``open_editor`` for ``EDITOR``, ``pick`` for ``PICK``, ``serve_web`` for ``WEB``) are only
    called when the front end lists that feature."""

    rt: Any  # nyzhi.core.runtime.runtime.Runtime, or None while it is still starting
    cwd: Path
    busy: bool  # a turn of the main agent is running
    features: frozenset[str]
    cancel_hint: str  # how the person cancels a turn here ("Esc", "Ctrl-C or /cancel")
    keys_help: str  # the closing lines of /help: keys, approvals

    def show(self, kind: str, text: str) -> None: ...

    def show_lines(self, lines: list[tuple[str, str]]) -> None: ...

    def send_main(self, text: str) -> None: ...

    def cancel_turn(self) -> None: ...

    def quit(self) -> None: ...

    def refresh_status(self) -> None: ...

    def status_text(self, *, long: bool = False) -> str: ...

    def loaded_config(self) -> Any: ...  # nyzhi.config.LoadedConfig of this session


Handler = Callable[[Any, str], Awaitable[None]]


@records.frozen
class Command:
    name: str
    summary: str
    run: Handler
    idle_only: bool = False
    needs_runtime: bool = True  # False: works while the runtime is still starting
    needs: frozenset[str] = frozenset()  # front-end features (SCREEN, PANEL, ...)
    aliases: tuple[str, ...] = ()


COMMANDS: dict[str, Command] = {}
ALIASES: dict[str, str] = {}


def command(name: str, summary: str, *, idle_only: bool = False, needs_runtime: bool = True,
            needs: frozenset[str] = frozenset(),
            aliases: tuple[str, ...] = ()) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        COMMANDS[name] = Command(name, summary, fn, idle_only, needs_runtime, needs, aliases)
        ALIASES.update(dict.fromkeys(aliases, name))
        return fn

    return register


def available(features: frozenset[str]) -> dict[str, Command]:
    """The commands a front end with ``features`` offers, by name."""
    return {n: c for n, c in COMMANDS.items() if c.needs <= features}


def lookup(name: str, features: frozenset[str]) -> Command | None:
    cmd = COMMANDS.get(ALIASES.get(name, name))
    return cmd if cmd is not None and cmd.needs <= features else None


def custom_commands(host: CommandHost) -> dict[str, Any]:
    """The session's custom commands (.nyzhi/commands, .claude/commands, [[agent.commands]])."""
    rt = host.rt
    knowledge = getattr(rt, "knowledge", None) if rt is not None else None
    return knowledge.commands if knowledge is not None else {}


class UnknownCommand(Exception):
    """A prompt that starts with ``/name`` where no command has that name (headless: there is
    nobody to show the notice to and let type again, so the run stops on it)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"unknown command /{name} (not sent to the model); the custom "
                         "commands are in .nyzhi/commands and .claude/commands, and a prompt "
                         "that starts with // is sent with one /")
        self.name = name


def headless_prompt(text: str, custom: Any) -> str:
    """``text`` as ``nyz run`` sends it, by ``dispatch``'s rule: a custom command's prompt,
    ``//x`` as ``/x``, anything else as typed. Raises ``UnknownCommand`` for a ``/x`` that names
    no custom command (the front ends' own commands need a front end)."""
    from nyzhi.knowledge.commands import split_invocation

    invocation = split_invocation(text)
    if invocation is None:
        stripped = text.lstrip()
        return stripped[1:] if stripped.startswith("//") else text
    if invocation[0] not in custom.commands:
        raise UnknownCommand(invocation[0])
    return custom.expand(text)


def waits_for_idle(line: str, features: frozenset[str]) -> bool:
    """Whether the ``/name args`` line is a command that runs only on an idle agent, so a
    front end with a queue holds it behind the running turn instead of refusing it.

    ``/model PROVIDER/MODEL`` counts: switching provider reopens the session, which waits
    for the turn to end (the one idle-only use of a command that is otherwise not)."""
    name, _, arg = line.strip()[1:].partition(" ")
    cmd = lookup(name, features)
    if cmd is None:
        return False
    return cmd.idle_only or (cmd.name == "model" and "/" in arg)


async def dispatch(host: CommandHost, line: str) -> None:
    """Run one ``/name args`` line on ``host``.

    The one rule of every front end for a line that starts with ``/``: a command runs, a
    custom command's prompt is sent, and an unknown ``/x`` is reported and not sent (a typo
    must not reach the model as a prompt). A line whose first word is not a command name (a
    path: ``/etc/hosts has a typo``) is sent as typed, and ``//x`` sends ``/x``."""
    from nyzhi.knowledge.commands import split_invocation

    if split_invocation(line) is None:
        text = line.strip()
        host.send_main(text[1:] if text.startswith("//") else text)
        return
    name, _, arg = line.strip()[1:].partition(" ")
    cmd = lookup(name, host.features)
    if cmd is None and name in custom_commands(host):  # a prompt for the model
        host.send_main(host.rt.knowledge.expand(line.strip()))
        return
    if cmd is None:
        host.show(ERROR, f"unknown command /{name} (not sent to the model); "
                         "/help lists the commands")
        return
    if cmd.needs_runtime and host.rt is None:
        host.show(NOTICE, f"/{name}: nyz is still starting; try again in a moment")
        return
    if cmd.idle_only and host.busy:
        host.show(NOTICE, f"/{name} waits for an idle agent: {host.cancel_hint} cancels the turn")
        return
    await cmd.run(host, arg.strip())
