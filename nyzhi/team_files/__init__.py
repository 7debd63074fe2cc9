"""Teams on disk: team configs, member inboxes and the shared task board.

Several processes share one team (the lead and its teammate processes, ``nyz team send``), so
every file here is replaced atomically (temp + fsync + rename) and every read-modify-write
happens under an ``fcntl.flock`` on a lock file beside it: a ``kill -9`` at any moment leaves
every file readable, and two members racing for one task cannot both win.

Modules: ``errors`` (the error tree), ``names`` (what a team or member may be called),
``locking`` (the lock and the JSON read/write every module uses), ``store`` (team configs,
member status, where everything lives), ``inbox`` (messages and the FIFO poke), ``board``
(tasks and their dependencies), ``watch`` (a trio wait on the FIFO; the only module that
imports trio). Everything but ``watch`` is blocking: trio callers run it in a worker thread.
The package re-exports the public names of all but ``watch``, lazily: importing it costs no
trio and builds no class.
"""

import importlib
from typing import Any

# Public name -> its module, imported on first use (PEP 562): importing ``nyzhi.team_files.names``
# for a name check must not build every attrs class of the store, board and inbox.
_EXPORTS = {
    "Task": "nyzhi.team_files.board",
    "TaskBoard": "nyzhi.team_files.board",
    "TaskChange": "nyzhi.team_files.board",
    "TaskStatus": "nyzhi.team_files.board",
    "TaskClaimError": "nyzhi.team_files.errors",
    "TeamError": "nyzhi.team_files.errors",
    "TeamNotFound": "nyzhi.team_files.errors",
    "Inbox": "nyzhi.team_files.inbox",
    "Message": "nyzhi.team_files.inbox",
    "deliver": "nyzhi.team_files.inbox",
    "LEAD": "nyzhi.team_files.names",
    "check_name": "nyzhi.team_files.names",
    "Member": "nyzhi.team_files.store",
    "TeamConfig": "nyzhi.team_files.store",
    "TeamStore": "nyzhi.team_files.store",
    "tasks_root": "nyzhi.team_files.store",
    "teams_root": "nyzhi.team_files.store",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'nyzhi.team_files' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
