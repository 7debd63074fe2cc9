"""The console's side of the slash commands: the features it offers them and Tab completion.

The commands themselves, and their one table, are ``nyzhi.core.runtime.commands``, shared with every
front end; ``Console`` (``nyzhi.tui.app``) is their ``CommandHost``. The console has every
feature a command can need: a screen to clear, the agent tree, themes, reopening the
runtime in place (``/resume``, ``/model PROVIDER/MODEL``), and serving itself to a browser
(``/web``, with the server ``nyz`` gives it).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from nyzhi.core.protocol.commands import (
    EDITOR,
    PANEL,
    PICK,
    RESTART,
    SCREEN,
    THEME,
    WEB,
    available,
)

FEATURES = frozenset({SCREEN, PANEL, THEME, RESTART, EDITOR, PICK, WEB})
KEYS_HELP = ("keys: Enter send · Alt-Enter newline · ↑↓ history · Ctrl-R search · Tab complete · "
             "/ or @ a menu (↑↓ Tab Enter Esc) · "
             "Esc cancel turn · Ctrl-C twice quit · Ctrl-L clear · Ctrl-T theme · "
             "Ctrl-O expand tool output and thinking · "
             "Alt-↑↓ select one, Enter expands or collapses it · "
             "PgUp/PgDn scroll · End or Ctrl-End to the end · "
             "Ctrl-A/E line start/end · Ctrl-U/K cut before/after · Ctrl-W or Alt-⌫ cut word · "
             "Alt-B/F word · Ctrl-Y paste the cut · Ctrl-G write in $EDITOR · "
             "Ctrl-V paste an image · "
             "F2 agents · Shift-Tab plan mode · Alt-T thinking level · !cmd shell · @path attach · "
             "&task on a background agent · Ctrl-B running command to the background")


def complete(text: str, cwd: Path, custom: Iterable[str] = ()) -> tuple[str | None, list[str]]:
    """(the completed input or None, the candidates) for Tab: a command name at the start
    (``custom``: the session's custom commands too), or the ``@path`` being typed at the end."""
    if text.startswith("/") and " " not in text:
        names = sorted(n for n in {*available(FEATURES), *custom} if n.startswith(text[1:]))
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
