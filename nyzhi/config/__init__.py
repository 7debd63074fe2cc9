"""nyzhi.config: the configuration schema, three-layer merge, workspace detection, paths.

The bottom layer of nyzhi: it imports nothing else from nyzhi. Everything here is
synchronous and cheap (a few small files are read).

    load_config(cwd=None, *, env=None) -> LoadedConfig   (.config, .workspace, .sources, .layers)
    detect_workspace(cwd=None, env=None) -> Workspace
    Config.with_overrides(provider=, model=, trust=, sandbox=, max_steps=) -> Config
"""

from nyzhi.config import paths as paths
from nyzhi.config.errors import ConfigError as ConfigError
from nyzhi.config.errors import ConfigProblem as ConfigProblem
from nyzhi.config.loader import Layer as Layer
from nyzhi.config.loader import LoadedConfig as LoadedConfig
from nyzhi.config.loader import load_config as load_config
from nyzhi.config.presets import BUILTIN_PROVIDERS as BUILTIN_PROVIDERS
from nyzhi.config.presets import ProviderPreset as ProviderPreset
from nyzhi.config.schema import Config as Config
from nyzhi.config.schema import ProviderEntry as ProviderEntry
from nyzhi.config.schema_agent import AgentConfig as AgentConfig
from nyzhi.config.schema_agent import HookConfig as HookConfig
from nyzhi.config.workspace import Workspace as Workspace
from nyzhi.config.workspace import detect_workspace as detect_workspace
