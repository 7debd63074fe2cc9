"""Hooks: user commands run at agent lifecycle points, able to block tool calls and prompts.

``spec`` (what a hook is, ``hooks_from_config``), ``claude`` (Claude Code settings.json),
``runner`` (``HookRunner.fire`` → ``HookOutcome``; ordering and blocking rules in its
docstring).
"""

from nyzhi.core.runtime.hooks.claude import CLAUDE_EVENTS as CLAUDE_EVENTS
from nyzhi.core.runtime.hooks.claude import load_claude_hooks as load_claude_hooks
from nyzhi.core.runtime.hooks.runner import BLOCKING_EVENTS as BLOCKING_EVENTS
from nyzhi.core.runtime.hooks.runner import HookOutcome as HookOutcome
from nyzhi.core.runtime.hooks.runner import HookResult as HookResult
from nyzhi.core.runtime.hooks.runner import HookRunner as HookRunner
from nyzhi.core.runtime.hooks.runner import payload_paths as payload_paths
from nyzhi.core.runtime.hooks.spec import HOOK_EVENTS as HOOK_EVENTS
from nyzhi.core.runtime.hooks.spec import HookConfigError as HookConfigError
from nyzhi.core.runtime.hooks.spec import HookSpec as HookSpec
from nyzhi.core.runtime.hooks.spec import hooks_from_config as hooks_from_config
