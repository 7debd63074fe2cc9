"""Signalling a whole process group: the one copy of "kill the child and everything it started".

Every child nyz runs for a tool, a hook, a helper program or the local model server starts
with ``start_new_session=True``, so it leads a process group whose id is its pid, and what it
spawns (``sleep 1000 &``) shares the group. Signalling the group, not the pid, is what makes
"nothing outlives the call" true. The group may already be gone (everything exited and was
reaped) or, after pid reuse, belong to someone else we may not signal: both are "nothing to
do", never an error. It lives here, at the bottom layer, because the provider (the llama.cpp
server), the tools and the core (hooks) all need it.
"""

from __future__ import annotations

import os
import signal


def signal_group(pgid: int, sig: int = signal.SIGKILL) -> bool:
    """Send ``sig`` to every process of group ``pgid``; False when there was none to signal."""
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False
