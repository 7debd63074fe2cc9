"""The slash commands as the protocol offers them (a ``run_command`` op runs one): the one
command table, the kinds of line a command shows, and the features a front end's host says
it has. Only names: the table and its commands live in ``nyzhi.core.runtime.commands``."""

from __future__ import annotations

from nyzhi.core.runtime.commands import available, dispatch
from nyzhi.core.runtime.commands.builtin import toggle_plan
from nyzhi.core.runtime.commands.registry import (
    BODY,
    EDITOR,
    ERROR,
    NOTICE,
    PANEL,
    PICK,
    RESTART,
    SCREEN,
    THEME,
    WEB,
    CommandHost,
    headless_prompt,
    waits_for_idle,
)

__all__ = ["BODY", "EDITOR", "ERROR", "NOTICE", "PANEL", "PICK", "RESTART", "SCREEN", "THEME", "WEB",
           "CommandHost",
           "available", "dispatch", "headless_prompt", "toggle_plan",
           "waits_for_idle"]
