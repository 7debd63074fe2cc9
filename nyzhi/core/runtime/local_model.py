"""The offline default model as a supervised actor.

``LocalModelServer`` owns one llama.cpp server process (``nyzhi.provider.llama_server``) as
long-lived work of its incarnation. Spawned ``PERMANENT``, it is restarted when the process
dies under it (a crash, an OOM kill, someone's ``kill -9``); stopping the actor, its parent or
the whole actor system terminates the process. Callers get the server's OpenAI-compatible base
URL with ``await ref.ask(GetBaseUrl())``, which waits until the server answers; the port is
chosen once per actor (not per incarnation), so a provider built with that URL keeps working
across restarts.

A server that cannot *start* (bad install, port taken, no answer in time) does not crash the
actor: a restart loop would not fix it and, at the top of the tree, escalation would take the
whole runtime down. The actor stays up and answers every ``GetBaseUrl`` with that error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import trio

import actors
from nyzhi import records
from nyzhi.provider.llama_server import (
    DEFAULT_CHAT_FORMAT,
    DEFAULT_MODEL_ALIAS,
    LocalModelCrashed,
    LocalModelError,
    LocalModelStartError,
    LocalModelUnavailable,
    default_threads,
    find_default_model,
    free_loopback_port,
    run_llama_server,
    unavailable_reason,
)

__all__ = [
    "DEFAULT_ACTOR_NAME", "LOCAL_MODEL_NOTICE", "GetBaseUrl", "GetServerInfo",
    "LocalModelConfig", "LocalModelCrashed", "LocalModelError", "LocalModelInfo",
    "LocalModelServer", "LocalModelStartError", "LocalModelUnavailable", "ensure_local_model",
    "wait_base_url",
]  # fmt: skip

#: Said once when nyz falls back to the local model.
LOCAL_MODEL_NOTICE = (
    "No provider configured and no API key found: using the local SmolLM2-135M model "
    "(offline). Configure one with `nyz login` or an API key env var."
)

#: The name ``ensure_local_model`` gives the actor (one per system or parent).
DEFAULT_ACTOR_NAME = "local-model"


@records.frozen
class LocalModelConfig:
    """How to run the server. ``port=None`` means: pick a free one per incarnation;
    ``ensure_local_model`` fixes it up front so restarts keep the same URL."""

    model: Path
    port: int | None = None
    n_ctx: int = 4096
    n_threads: int = attrs.field(factory=default_threads)
    chat_format: str = DEFAULT_CHAT_FORMAT
    model_alias: str = DEFAULT_MODEL_ALIAS
    startup_timeout: float = 60.0
    stop_grace: float = 3.0

    @classmethod
    def default(cls, *, port: int | None = None) -> LocalModelConfig:
        """The bundled SmolLM2 model; ``LocalModelUnavailable`` (saying what to install)
        when llama-cpp-python or the model package is missing."""
        reason = unavailable_reason()
        model = find_default_model()
        if reason is not None or model is None:
            raise LocalModelUnavailable(f"the local model cannot run: {reason}")
        return cls(model=model, port=port)


@records.frozen
class GetBaseUrl:
    """Ask: the server's base URL (``http://127.0.0.1:PORT/v1``), once it answers."""


@records.frozen
class GetServerInfo:
    """Ask: a :class:`LocalModelInfo` for the running server, once it answers."""


@records.frozen
class LocalModelInfo:
    base_url: str
    pid: int
    model: Path
    model_alias: str
    restarts: int


class _Ready:
    """Stands in for trio's ``task_status``: the server calls ``started(url)`` once it
    answers, which is what unblocks waiting asks."""

    def __init__(self, server: LocalModelServer) -> None:
        self._server = server

    def started(self, value: Any = None) -> None:
        self._server._base_url = value
        self._server._ready.set()


class LocalModelServer(actors.Actor):
    """One llama.cpp server process, restarted with the actor. Spawn it with
    ``restart=actors.Restart.PERMANENT`` (``ensure_local_model`` does)."""

    # A failed start is reported to the asker; it must not crash the actor (module docstring).
    crash_on_ask_error = False

    def __init__(self, config: LocalModelConfig | None = None) -> None:
        self._config = config if config is not None else LocalModelConfig.default()
        self._ready = trio.Event()
        self._base_url: str | None = None
        self._pid: int | None = None
        self._failure: LocalModelError | None = None

    async def started(self) -> None:
        self.context.start_soon(self._serve, name=f"{self.context.path}:llama-server")

    async def _serve(self) -> None:
        cfg = self._config
        try:
            await run_llama_server(
                cfg.model,
                port=cfg.port,
                n_ctx=cfg.n_ctx,
                n_threads=cfg.n_threads,
                chat_format=cfg.chat_format,
                model_alias=cfg.model_alias,
                startup_timeout=cfg.startup_timeout,
                stop_grace=cfg.stop_grace,
                on_spawn=self._spawned,
                task_status=_Ready(self),  # type: ignore[arg-type]
            )
        except (LocalModelStartError, LocalModelUnavailable) as exc:
            # Not a crash (see the module docstring): remember it for every asker.
            self._failure = exc
            self._ready.set()
        # LocalModelCrashed propagates: the actor crashes and its supervisor restarts it.

    def _spawned(self, pid: int) -> None:
        self._pid = pid

    async def _wait_ready(self) -> str:
        await self._ready.wait()
        if self._failure is not None:
            raise self._failure
        assert self._base_url is not None
        return self._base_url

    async def receive(self, message: Any) -> Any:
        if isinstance(message, GetBaseUrl):
            return await self._wait_ready()
        if isinstance(message, GetServerInfo):
            base_url = await self._wait_ready()
            assert self._pid is not None
            cfg = self._config
            return LocalModelInfo(
                base_url, self._pid, cfg.model, cfg.model_alias, self.context.restarts
            )
        return await super().receive(message)


async def wait_base_url(ref: actors.ActorRef, *, timeout: float = 90.0) -> str:  # noqa: ASYNC109 (passed on to ask, which names the actor on expiry)
    """``GetBaseUrl``, riding out restarts: an ask that was in flight when the server
    crashed fails with ``ActorDead`` although the actor lives on (it is restarting); ask
    again then, a few times. Raises the start error, ``ActorDead`` if the actor is gone for
    good, or ``AskTimeout``."""
    for _ in range(5):
        try:
            return await ref.ask(GetBaseUrl(), timeout=timeout)
        except actors.ActorDead:
            if ref.outcome is not None:
                raise
    return await ref.ask(GetBaseUrl(), timeout=timeout)


async def ensure_local_model(
    system_or_context: actors.ActorSystem | actors.Context,
    *,
    config: LocalModelConfig | None = None,
    name: str = DEFAULT_ACTOR_NAME,
) -> tuple[actors.ActorRef, str]:
    """The local model actor under ``system_or_context`` (spawned ``PERMANENT`` if it is not
    running yet) and its base URL, once the server answers.

    Raises ``LocalModelUnavailable`` when llama-cpp-python or the model is not installed, and
    ``LocalModelStartError`` when the server could not start (with the end of its log).
    """
    if isinstance(system_or_context, actors.Context):
        system = system_or_context.system
        path = f"{system_or_context.path.rstrip('/')}/{name}"
    else:
        system = system_or_context
        path = f"/{name}"
    ref = system.lookup(path)
    if ref is None:
        if config is None:
            config = LocalModelConfig.default()
        if config.port is None:
            config = attrs.evolve(config, port=free_loopback_port())
        ref = system_or_context.spawn(
            LocalModelServer, config, name=name, restart=actors.Restart.PERMANENT
        )
    timeout = (config.startup_timeout if config is not None else 60.0) + 30.0
    return ref, await wait_base_url(ref, timeout=timeout)
