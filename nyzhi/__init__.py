"""nyzhi: a terminal coding agent and multi-agent runtime on trio.

The package layers flow one way: ``config`` at the bottom; ``auth``, ``provider``,
``tools`` and ``index`` above it; ``core`` above those; front ends (``tui``, web) above
``core``; ``cli`` on top. Importing ``nyzhi`` itself is cheap: heavy modules load on use.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "open_runtime"]


def __getattr__(name: str):  # pragma: no cover - trivial lazy export
    if name == "open_runtime":
        from nyzhi.core.runtime import open_runtime

        return open_runtime
    raise AttributeError(f"module 'nyzhi' has no attribute {name!r}")
