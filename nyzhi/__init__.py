"""nyzhi: a terminal coding agent and multi-agent runtime on trio.

The package layers flow one way, bottom to top: ``records`` (the attrs conventions),
``convert`` (the one converter), ``spawn`` (child processes whose forking thread outlives
them), ``codecache`` (attrs' generated methods kept compiled, installed by ``nyz``),
``process`` (the interpreter tunings only ``nyz`` makes, never an embedding program),
``jsonrpc`` (the one JSON-RPC peer: ACP's wire and the language servers'), ``signals``
(how every front end stops on SIGINT, SIGTERM or SIGHUP), ``textcut`` (the one way a text is
cut to fit), ``loopback`` (which hosts are this machine, and the headers of every loopback
HTTP answer), ``prompt_input`` (a prompt's bytes from argv, stdin or a line, as text),
``collector`` (the garbage collector paused while a process starts, frozen once a runtime is
built), ``jsonbound`` (someone else's JSON parsed within bounds) and ``oserror`` (a failed OS
call as one line: ``StorageError``);
``config``; ``auth``, ``provider``, ``tools``, ``index``, ``knowledge`` and ``team_files``
(one layer: they may import each other, never in a circle); ``core`` (and this package's lazy
exports); ``front`` (what the front ends share); front ends (``tui``, ``acp`` the editors'
Agent Client Protocol, ``web`` the browser console, ``headless`` ``nyz run`` and a team's
process member, ``linechat``), each on the session protocol alone; ``cli`` (argument parsing
and the commands that run no agent); ``testing`` (helpers for tests). A module imports only its own
layer and those below, and a private module (``_name.py``) only inside its own package:
``tests/nyzhi/test_nyzhi_layering.py`` checks every import.

An embedding program needs only what is exported here::

    import nyzhi

    async with nyzhi.open_runtime(nyzhi.RuntimeOptions(cwd=path)) as rt:
        async with rt.subscribe() as events:
            ...  # instances of the classes in nyzhi.events

Importing ``nyzhi`` itself is cheap: each export loads its module on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# name -> (module, attribute); attribute None means the module itself.
_EXPORTS: dict[str, tuple[str, str | None]] = {
    "open_runtime": ("nyzhi.core.runtime.runtime", "open_runtime"),
    "RuntimeOptions": ("nyzhi.core.runtime.runtime", "RuntimeOptions"),
    "Runtime": ("nyzhi.core.runtime.runtime", "Runtime"),
    "AgentSpec": ("nyzhi.core.runtime.agent_factory", "AgentSpec"),
    "ApprovalAnswer": ("nyzhi.core.loop.tool_step", "ApprovalAnswer"),
    "events": ("nyzhi.core.events", None),
}

__all__ = ["__version__", *_EXPORTS]

if TYPE_CHECKING:
    from nyzhi.core import events as events
    from nyzhi.core.loop.tool_step import ApprovalAnswer as ApprovalAnswer
    from nyzhi.core.runtime.agent_factory import AgentSpec as AgentSpec
    from nyzhi.core.runtime.runtime import Runtime as Runtime
    from nyzhi.core.runtime.runtime import RuntimeOptions as RuntimeOptions
    from nyzhi.core.runtime.runtime import open_runtime as open_runtime


def __getattr__(name: str) -> Any:
    try:
        module_name, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'nyzhi' has no attribute {name!r}") from None
    module = importlib.import_module(module_name)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
