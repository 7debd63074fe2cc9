"""The default TLS context, built in a background thread while the rest of start-up runs.

Creating an HTTP client loads the CA bundle (``load_verify_locations``): ~30 ms on a quiet
machine and over 100 ms of CPU on a busy one, all before the first request. OpenSSL does it
without holding the GIL, so a front end calls ``prewarm()`` first thing and the load overlaps
with importing trio and nyzhi on another core; ``make_client`` then takes the finished context.

The context is the one httpx would build for ``verify=True`` (``SSL_CERT_FILE`` /
``SSL_CERT_DIR`` when set, else certifi's bundle): certificate and host name checks stay on.
"""

from __future__ import annotations

import atexit
import os
import ssl
import threading

_lock = threading.Lock()
_thread: threading.Thread | None = None
_result: list[ssl.SSLContext | BaseException] = []


def build_default_context() -> ssl.SSLContext:
    """What httpx builds for ``verify=True`` with ``trust_env``."""
    if os.environ.get("SSL_CERT_FILE"):
        return ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
    if os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(capath=os.environ["SSL_CERT_DIR"])
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


def _build() -> None:
    try:
        _result.append(build_default_context())
    except BaseException as exc:  # surfaced to the caller of default_context()
        _result.append(exc)


def prewarm() -> None:
    """Start building a context in a daemon thread, unless one is already on its way."""
    global _thread
    with _lock:
        if _thread is None:
            _thread = threading.Thread(target=_build, name="nyzhi-tls-prewarm", daemon=True)
            _thread.start()
            atexit.register(settle)


def settle() -> None:
    """Wait for a prewarm nobody collected (a run that failed before its first request).

    The interpreter must not tear down while the daemon thread is inside OpenSSL loading the
    CA bundle: that ends the process with SIGSEGV instead of the error status it meant to
    return (seen with ``nyz run --output-schema missing.json``)."""
    global _thread
    with _lock:
        thread, _thread = _thread, None
    if thread is not None:
        thread.join()


def default_context() -> ssl.SSLContext | None:
    """The prewarmed context (waiting for it if still loading), or None when ``prewarm`` was
    not called: the caller then lets httpx build its own. Each prewarmed context is handed
    out once, so two clients never share one by accident. The wait (on whatever thread calls
    it) is the rest of a load the caller would otherwise have done itself."""
    global _thread
    with _lock:
        thread, _thread = _thread, None
    if thread is None:
        return None
    thread.join()
    outcome = _result.pop()
    if isinstance(outcome, BaseException):
        return None  # let httpx build it and raise its own error, with its own message
    return outcome
