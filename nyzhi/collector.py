"""The cyclic garbage collector, paused while a process starts.

Start-up allocates hundreds of thousands of objects that all live on (modules, classes, the
functions attrs generates, the config, the runtime), and every 700 allocations the collector
walks the young ones, every tenth of those the older ones too: measured ~40 ms of collections
(118 young, 11 middle, 1 full) before ``nyz run`` sent its first request, finding next to no
garbage. So the collector is off while the command line is parsed, and for ``nyz run`` until
the runtime is built; then ``gc.freeze()`` moves everything that exists into the permanent
generation (later collections no longer walk it) and the collector is on again for the turns,
which do make cyclic garbage.

A process that opens and closes runtimes one after another (``nyz acp``: a runtime per
session) must not freeze a closed one's garbage with the next: frozen objects are never
collected, and the cycles a shut-down runtime leaves behind (~1 MiB a session, measured by
``benchmarks/acp_sessions_bench.py``) stayed for the process's life. ``freeze_runtime``
therefore collects first when a runtime has shut down since the last freeze
(``runtime_released``).

``pause``/``resume`` only undo what they did: in a process where the collector was already
off (a test that turned it off, an embedding program) they do nothing.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

_paused = False
_released = False  # a runtime shut down since the last ``freeze_runtime``


def pause() -> None:
    """Turn the collector off, if it is on, until ``resume``."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume(*, freeze: bool = False) -> None:
    """Turn the collector back on if ``pause`` turned it off. With ``freeze``, what exists now
    moves to the permanent generation first: a built runtime, which lives as long as the
    process, so that full collections during the turns do not walk it again and again."""
    global _paused
    if _paused:
        _paused = False
        if freeze:
            gc.freeze()
        gc.enable()


def freeze_runtime() -> None:
    """Move everything that exists into the permanent generation (a runtime has just been
    built). If a runtime shut down since the last freeze, what it left unreachable is
    collected first (unfrozen, one full collection), so it is not kept frozen for good."""
    global _released
    if _released:
        _released = False
        gc.unfreeze()
        gc.collect()
    gc.freeze()


def runtime_released() -> None:
    """A frozen runtime has shut down: the next ``freeze_runtime`` collects its garbage."""
    global _released
    _released = True


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """The collector off for a block (and back on after it, also on an error)."""
    pause()
    try:
        yield
    finally:
        resume()
