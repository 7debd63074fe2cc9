"""``nyz`` on a terminal: the first frame at once (``first_frame``), then the console.

This module imports nothing heavy: ``nyzhi.tui.app`` (urwid, trio) is imported only after the
first frame is on the screen.
"""

from __future__ import annotations

import os
import sys
import threading
import types
from typing import Any


def main(args: Any, web: Any = None) -> int:
    """``web``: what the console's ``/web`` serves its session with (``nyzhi.tui.app.ServeWeb``)."""
    from nyzhi.tui.first_frame import paint

    no_color = bool(os.environ.get("NO_COLOR"))
    frame = paint(no_color=no_color)
    try:
        defer_asyncio()
        from nyzhi.tui.app import main as console_main

        return console_main(args, frame=frame, no_color=no_color, web=web)
    finally:
        if frame is not None and frame.saved is not None:  # urwid never took the terminal
            frame.abandon()


def defer_asyncio() -> None:
    """Put ``asyncio`` in ``sys.modules`` unexecuted, to run at its first use (if not loaded).

    urwid imports asyncio for its ``AsyncioEventLoop`` (~7 ms, on the path to the runtime
    being open); the console runs on trio and never uses it. urwid's ``import asyncio`` (and
    any later one) gets this module object, which runs asyncio's code the first time anyone
    reads an attribute that is not there yet (``_Deferred``), so whatever does use asyncio
    finds it as usual, only later. The standard library's ``LazyLoader`` cannot do this: on
    3.11 the ``import`` statement itself reads ``__spec__`` and so loads it at once.
    """
    if "asyncio" in sys.modules:
        return
    import importlib.util

    spec = importlib.util.find_spec("asyncio")
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)  # __spec__, __path__...: no code run
    module.__class__ = _Deferred
    sys.modules["asyncio"] = module


class _Deferred(types.ModuleType):
    """A package whose code runs at the first read of an attribute it does not have yet.

    The load holds a lock, so a second thread asking meanwhile waits for it; inside the load
    (the package's own code asking for what it has not defined yet) a missing name is missing,
    as in any module being imported."""

    _lock = threading.RLock()
    _loading = False

    def __getattr__(self, name: str) -> Any:
        cls = _Deferred
        with cls._lock:
            if type(self) is cls and not cls._loading:
                cls._loading = True
                try:
                    self.__spec__.loader.exec_module(self)  # type: ignore[union-attr]
                    self.__class__ = types.ModuleType
                finally:
                    cls._loading = False
        if type(self) is cls:
            raise AttributeError(f"partially initialized module {self.__name__!r} has no "
                                 f"attribute {name!r}")
        return getattr(self, name)
