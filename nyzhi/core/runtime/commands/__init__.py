"""Slash commands for every front end: one registry (``registry``) and the commands written
once against it (``builtin``; ``checkpoints``: /rewind, /checkpoint, /retry; ``workflows``:
/review, /verify, /qa, /handoff, /context; ``autopilot``: /autopilot; ``plugins``: /plugin,
/output-style), registered when this
package is imported."""

from nyzhi.core.runtime.commands import autopilot as autopilot
from nyzhi.core.runtime.commands import builtin as builtin
from nyzhi.core.runtime.commands import checkpoints as checkpoints
from nyzhi.core.runtime.commands import plugins as plugins
from nyzhi.core.runtime.commands import workflows as workflows
from nyzhi.core.runtime.commands.registry import (
    COMMANDS,
    Command,
    CommandHost,
    available,
    dispatch,
    lookup,
)

__all__ = [
    "COMMANDS", "Command", "CommandHost", "autopilot", "available", "builtin", "checkpoints",
    "dispatch", "lookup", "plugins", "workflows",
]
