"""A workspace's Claude Code settings files (``.claude/settings.json`` and
``settings.local.json``), read one way for every reader: the hooks they declare
(``core.hooks.claude``) and their permission rules (``tools.claude_permissions``).

Why one reader: a file that cannot be used (unreadable, not UTF-8, nested too deeply, not
JSON) must give one clear notice naming it, not one per reader, and both readers must agree
on what counts as usable. A missing file is fine: it is another tool's config.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nyzhi import records
from nyzhi.config.errors import ConfigError
from nyzhi.config.textfile import read_config_text

SETTINGS_FILES = ("settings.json", "settings.local.json")


@records.frozen
class SettingsFile:
    """One settings file as read: its path, its text (for hashing) and its JSON value."""

    path: Path
    text: str
    data: Any


def read_settings(workspace_root: Path | str) -> tuple[list[SettingsFile], list[str]]:
    """The workspace's usable settings files in order, and one note for each unusable one."""
    found: list[SettingsFile] = []
    notes: list[str] = []
    for name in SETTINGS_FILES:
        _read(Path(workspace_root) / ".claude" / name, found, notes)
    return found, notes


def user_settings_path(env: Mapping[str, str] | None = None) -> Path:
    """The user's own Claude Code settings: ``$CLAUDE_CONFIG_DIR/settings.json``, by default
    ``~/.claude/settings.json``, where Claude Code reads them."""
    env = os.environ if env is None else env
    base = env.get("CLAUDE_CONFIG_DIR") or os.path.join(env.get("HOME") or
                                                        os.path.expanduser("~"), ".claude")
    return Path(base) / "settings.json"


def read_user_settings(env: Mapping[str, str] | None = None
                       ) -> tuple[list[SettingsFile], list[str]]:
    """The user's Claude Code settings file (none when missing), and a note if unusable."""
    found: list[SettingsFile] = []
    notes: list[str] = []
    _read(user_settings_path(env), found, notes)
    return found, notes


def _read(path: Path, found: list[SettingsFile], notes: list[str]) -> None:
    try:
        text = read_config_text(path, "json")
    except ConfigError as exc:  # unreadable, not UTF-8, nested too deeply
        notes.append(f"{exc}; its hooks and permission rules are ignored")
        return
    if text is None:
        return
    try:
        data = json.loads(text)
    except ValueError as exc:
        notes.append(f"{path}: not valid JSON ({exc}); its hooks and permission rules are "
                     "ignored")
        return
    found.append(SettingsFile(path, text, data))
