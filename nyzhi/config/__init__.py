"""nyzhi.config: the configuration schema, three-layer merge, workspace detection, paths.

The bottom layer of nyzhi: it imports nothing else from nyzhi but ``nyzhi.records`` (the
attrs decorators). Everything here is synchronous and cheap (a few small files are read).

    load_config(cwd=None, *, env=None) -> LoadedConfig   (.config, .workspace, .sources, .layers,
                                                          .warnings: unknown keys, not fatal)
    detect_workspace(cwd=None, env=None) -> Workspace
    Config.with_overrides(provider=, model=, trust=, sandbox=, max_steps=) -> Config
    TrustMode, SandboxLevel, ApiStyle, TeammateMode, TodoStatus  (the one definition of each)

Names are exported lazily, so ``from nyzhi.config.modes import TrustMode`` (the command line's
argument parsing, the tools) does not pay for the schema and loader; ``load_config`` imports
them when used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "ConfigError": "nyzhi.config.errors",
    "ConfigProblem": "nyzhi.config.errors",
    "Layer": "nyzhi.config.loader",
    "LoadedConfig": "nyzhi.config.loader",
    "load_config": "nyzhi.config.loader",
    "BUILTIN_PROVIDERS": "nyzhi.config.presets",
    "ProviderPreset": "nyzhi.config.presets",
    "Config": "nyzhi.config.schema",
    "ProviderEntry": "nyzhi.config.schema",
    "AgentConfig": "nyzhi.config.schema_agent",
    "HookConfig": "nyzhi.config.schema_agent",
    "SandboxLevel": "nyzhi.config.modes",
    "TrustMode": "nyzhi.config.modes",
    "ApiStyle": "nyzhi.config.modes",
    "TeammateMode": "nyzhi.config.modes",
    "TodoStatus": "nyzhi.config.modes",
    "Workspace": "nyzhi.config.workspace",
    "detect_workspace": "nyzhi.config.workspace",
}

if TYPE_CHECKING:
    from nyzhi.config import paths as paths
    from nyzhi.config.errors import ConfigError as ConfigError
    from nyzhi.config.errors import ConfigProblem as ConfigProblem
    from nyzhi.config.loader import Layer as Layer
    from nyzhi.config.loader import LoadedConfig as LoadedConfig
    from nyzhi.config.loader import load_config as load_config
    from nyzhi.config.modes import ApiStyle as ApiStyle
    from nyzhi.config.modes import SandboxLevel as SandboxLevel
    from nyzhi.config.modes import TeammateMode as TeammateMode
    from nyzhi.config.modes import TodoStatus as TodoStatus
    from nyzhi.config.modes import TrustMode as TrustMode
    from nyzhi.config.presets import BUILTIN_PROVIDERS as BUILTIN_PROVIDERS
    from nyzhi.config.presets import ProviderPreset as ProviderPreset
    from nyzhi.config.schema import Config as Config
    from nyzhi.config.schema import ProviderEntry as ProviderEntry
    from nyzhi.config.schema_agent import AgentConfig as AgentConfig
    from nyzhi.config.schema_agent import HookConfig as HookConfig
    from nyzhi.config.workspace import Workspace as Workspace
    from nyzhi.config.workspace import detect_workspace as detect_workspace


def __getattr__(name: str) -> Any:
    if name == "paths":
        return importlib.import_module("nyzhi.config.paths")
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'nyzhi.config' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS, "paths"])
