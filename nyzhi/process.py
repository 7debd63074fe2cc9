"""The process-wide changes only the ``nyz`` command makes, never a library import.

nyz owns its interpreter, so it may tune it: freeze what a built runtime allocated out of the
cyclic collector's view (``gc.freeze()``: full collections no longer walk it), and import
httpcore without its HTTP/2 module (h2, ~10 ms of start-up; no client of nyz's asks for
HTTP/2). A program embedding nyzhi owns its interpreter instead, and must find it as it
left it after ``open_runtime``: its collector's generations untouched, and an
``httpx.AsyncClient(http2=True)`` of its own working. So both happen only once ``nyz``'s
entry point (``nyzhi.cli.main``) has called ``claim()``; this module imports nothing.
"""

from __future__ import annotations

_claimed = False


def claim() -> None:
    """The running program is ``nyz``: the tunings above are allowed from now on."""
    global _claimed
    _claimed = True


def claimed() -> bool:
    return _claimed
