"""The runtime: what assembles agent loops into a session, the tier of core above the loop.

``runtime`` (``open_runtime``, ``Runtime``, ``RuntimeOptions``: the embedding API, also
exported by ``nyzhi``), the assembly and agent factory, placement in the agent tree,
subagents and roles, MCP and LSP servers, running teams, sessions and checkpoints, hooks,
plugins and the slash commands. The session protocol (``nyzhi.core.protocol``) sits above it.

``open_runtime`` and its two classes are importable from here, loaded on first use, so that
importing one module of this package (``nyzhi.core.runtime.roles``) does not load them all.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_RUNTIME_NAMES = ("open_runtime", "Runtime", "RuntimeOptions")

if TYPE_CHECKING:
    from nyzhi.core.runtime.runtime import Runtime as Runtime
    from nyzhi.core.runtime.runtime import RuntimeOptions as RuntimeOptions
    from nyzhi.core.runtime.runtime import open_runtime as open_runtime


def __getattr__(name: str) -> Any:
    if name not in _RUNTIME_NAMES:
        raise AttributeError(f"module 'nyzhi.core.runtime' has no attribute {name!r}")
    value = getattr(importlib.import_module("nyzhi.core.runtime.runtime"), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value
