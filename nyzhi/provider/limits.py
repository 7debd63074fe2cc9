"""The context window and output limit of a model, and where each figure came from.

A model nyz's table does not know (a vLLM, LM Studio or llama.cpp model under its own name, a
model newer than the table, a provider's alias) used to get an 8,192-token guess, smaller
than nyz's own system prompt and tools: compaction ran every few steps. The figures are now
resolved in this order, the first that knows winning:

1. ``config``: ``[provider.NAME.models."MODEL"] context_window`` / ``max_output_tokens``, then
   ``[provider.NAME] context_window`` / ``max_output_tokens``;
2. ``server``: what the server reports, asked for models the table does not know and for every
   model on a loopback server (a local server's context size is set when it starts, whatever
   the model was trained for). OpenRouter, vLLM, LM Studio and Groq list it with the models
   (``context_length``, ``max_model_len``, ``max_context_length``, ``context_window``);
   llama.cpp in ``GET /props`` (``default_generation_settings.n_ctx``); LM Studio in
   ``GET /api/v0/models/MODEL``; Ollama in ``POST /api/show`` (``num_ctx``, else the model's
   ``*.context_length``); Gemini in ``models.get`` (``inputTokenLimit``). Answers are kept
   under ``$XDG_CACHE_HOME/nyzhi/models/`` with their age. A kept answer is used at once; a
   loopback server's (its model can change between starts) and one older than a day are asked
   again behind it, so the next start has the new figure and this one's first request waits
   for nothing (a question to a local server that cannot tell cost ~50 ms of every start);
3. ``table``: the built-in table (``nyzhi.provider.models``);
4. ``default``: ``DEFAULT_CONTEXT_WINDOW``, with a notice naming the model and the key to
   set, shown once per (server, model) until the answer changes (remembered in
   ``nyzhi.config.notices_seen`` when the resolver is given the environment).

``ContextLimits.source`` records where the window came from (``output_source`` the output
limit), so a listing of models can say it.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import quote

import attrs

from nyzhi import records
from nyzhi.loopback import is_loopback_url
from nyzhi.provider.models import DEFAULT_CONTEXT_WINDOW, model_info

if TYPE_CHECKING:
    import httpx

    from nyzhi.provider.spec import ProviderSpec

Source = Literal["config", "server", "table", "default"]

# DEFAULT_CONTEXT_WINDOW (128k tokens) is assumed for a model nobody can tell us about. Models
# used for coding agents today have 128k tokens or more (GPT-4o, DeepSeek, Llama 3.x, Qwen 2.5
# at full context); a smaller guess makes every run compact early and often, and when the real
# window is smaller the provider says so ("prompt is too long"): nyz compacts then, learns the
# figure from the error, and goes on.
#: The output limit assumed when nothing is known (only used as room left for the answer).
DEFAULT_MAX_OUTPUT = 4096
#: How long a kept server answer counts as fresh (loopback servers' are refreshed at every start).
CACHE_TTL_S = 24 * 3600
#: Seconds one question to the server may take; it is asked at start-up.
ASK_TIMEOUT_S = 5.0


@records.frozen
class ContextLimits:
    """A model's figures and their origin (``Source``); ``key`` is the config key that sets
    the window for this model."""

    model: str
    context_window: int
    max_output: int
    source: Source
    output_source: Source
    key: str = ""


@records.frozen
class ConfiguredLimits:
    """What the configuration says for one provider: its own keys and per-model tables
    (``{model: (context_window, max_output_tokens)}``, either may be None)."""

    provider: str = ""
    context_window: int | None = None
    max_output: int | None = None
    models: Mapping[str, tuple[int | None, int | None]] = attrs.field(factory=dict)

    @classmethod
    def from_entry(cls, provider: str, entry: Any) -> ConfiguredLimits:
        """From a ``[provider.NAME]`` entry (``nyzhi.config.schema.ProviderEntry``)."""
        models = {
            name: (limits.context_window, limits.max_output_tokens)
            for name, limits in (getattr(entry, "models", None) or {}).items()
        }
        return cls(provider, getattr(entry, "context_window", None),
                   getattr(entry, "max_output_tokens", None), models)

    def for_model(self, model: str) -> tuple[int | None, int | None, str]:
        """(window, output limit, the key that set the window or would set it)."""
        window, output = self.models.get(model, (None, None))
        per_model = f'[provider.{self.provider}.models."{model}"] context_window'
        if window is not None:
            return window, output if output is not None else self.max_output, per_model
        key = f"[provider.{self.provider}] context_window"
        return self.context_window, output if output is not None else self.max_output, key


class LimitsResolver:
    """Resolves and remembers each model's limits for one provider (one per runtime).

    ``known(model)`` answers without the network (config, cache, table, default);
    ``resolve(model)`` asks the server first when that is worth it. ``notice(limits)`` is the
    one-time notice for a default window (then None for that model).

    ``write_behind``: a nursery's ``start_soon``. Given one, ``resolve`` returns as soon as the
    server answered and the cache is written by a task of that nursery: a runtime's first
    request then waits for the answer only, not for the cache file's two fsyncs (measured
    1-30 ms on a shared machine). Without one, ``resolve`` returns after the write."""

    def __init__(
        self, spec: ProviderSpec | None, configured: ConfiguredLimits | None = None, *,
        cache_dir: Path | None = None, client: httpx.AsyncClient | None = None,
        write_behind: Callable[..., Any] | None = None,
        notices_env: Mapping[str, str] | None = None,
    ) -> None:
        self.spec = spec
        self.configured = configured or ConfiguredLimits(spec.name if spec else "")
        self.cache_dir = cache_dir
        self._client = client
        self._write_behind = write_behind
        self._store_lock = threading.Lock()  # two writes behind never lose each other's models
        self._resolved: dict[str, ContextLimits] = {}
        self._noticed: set[str] = set()
        self._notices_env = notices_env
        self._refreshes: set[Any] = set()  # the cancel scopes of questions behind kept answers
        self._stopped = False

    # ---- answers --------------------------------------------------------------------------

    def known(self, model: str) -> ContextLimits:
        if model in self._resolved:
            return self._resolved[model]
        cached = self._cached(model)
        return self._combine(model, cached)

    async def resolve(self, model: str) -> ContextLimits:
        if model in self._resolved:
            return self._resolved[model]
        window, _output, _key = self.configured.for_model(model)
        server: tuple[int | None, int | None] | None = None
        if window is None and self.spec is not None and self._worth_asking(model):
            server = self._cached(model)
            if server is None:  # never asked: the answer is worth waiting for, once
                server = await self._ask(model)
            elif self._write_behind is not None and not self._fresh(model):
                self._write_behind(self._refresh, model)
            elif not self._fresh(model):
                server = await self._ask(model) or server  # the server is down: the kept one
        limits = self._combine(model, server)
        self._resolved[model] = limits
        return limits

    async def _refresh(self, model: str) -> None:
        """Ask again behind a kept answer; the next start uses what the server says now."""
        import trio

        if self._stopped:
            return
        with trio.CancelScope() as scope:
            self._refreshes.add(scope)
            try:
                await self._ask(model)
            finally:
                self._refreshes.discard(scope)

    def stop_refreshing(self) -> None:
        """Cancel the questions still out behind kept answers (a runtime that closes does not
        wait up to ``ASK_TIMEOUT_S`` for a server to answer what only a next start needs)."""
        self._stopped = True
        for scope in tuple(self._refreshes):
            scope.cancel()

    def notice(self, limits: ContextLimits) -> str | None:
        """Said once per (server, model) while the answer stays the same: the window is a
        default, and which key sets the real one."""
        if limits.source != "default" or limits.model in self._noticed:
            return None
        self._noticed.add(limits.model)
        text = (
            f"nyz: the context window of model {limits.model!r} is unknown (not in nyz's table, "
            f"and the server does not report it); assuming {limits.context_window} tokens. "
            f"Set {limits.key} = N in your config if the model's window is different."
        )
        if self._notices_env is None or self.spec is None:
            return text
        from nyzhi.config.notices_seen import unseen_key

        key = f"context-window\n{self.spec.name}\n{self.spec.base_url}\n{limits.model}"
        shown = unseen_key(key, str(limits.context_window), [text], self._notices_env)
        return shown[0] if shown else None

    def learned(self, model: str, window: int) -> ContextLimits:
        """The provider named the real window (in a "prompt is too long" error): use it."""
        old = self._resolved.get(model) or self.known(model)
        if old.source == "config" or window <= 0:
            return old
        new = attrs.evolve(old, context_window=window, source="server")
        self._resolved[model] = new
        return new

    # ---- combining ------------------------------------------------------------------------

    def _combine(
        self, model: str, server: tuple[int | None, int | None] | None
    ) -> ContextLimits:
        window, output, key = self.configured.for_model(model)
        info = model_info(model)
        table_window = info.context_window if info.known else None
        table_output = info.max_output if info.known else None
        source: Source
        if window is not None:
            source = "config"
        elif server is not None and server[0]:
            window, source = server[0], "server"
        elif table_window is not None:
            window, source = table_window, "table"
        else:
            window, source = DEFAULT_CONTEXT_WINDOW, "default"
        output_source: Source
        if output is not None:
            output_source = "config"
        elif server is not None and server[1]:
            output, output_source = server[1], "server"
        elif table_output is not None:
            output, output_source = table_output, "table"
        else:
            output, output_source = DEFAULT_MAX_OUTPUT, "default"
        return ContextLimits(model, window, output, source, output_source, key)

    def _worth_asking(self, model: str) -> bool:
        assert self.spec is not None
        return is_loopback_url(self.spec.base_url) or not model_info(model).known

    # ---- the cache ------------------------------------------------------------------------

    def _cache_path(self) -> Path | None:
        if self.cache_dir is None or self.spec is None:
            return None
        digest = hashlib.sha256(f"{self.spec.name}\n{self.spec.base_url}".encode()).hexdigest()
        return self.cache_dir / "models" / f"{digest[:16]}.json"

    def _load_cache(self) -> dict[str, Any]:
        path = self._cache_path()
        try:
            data = json.loads(path.read_text(encoding="utf-8")) if path else {}
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _entry(self, model: str) -> dict[str, Any] | None:
        entry = (self._load_cache().get("models") or {}).get(model)
        return entry if isinstance(entry, dict) else None

    def _fresh(self, model: str) -> bool:
        """A kept answer that need not be asked again: a day old at most, and not a loopback
        server's (whose model may have changed since the last start)."""
        entry = self._entry(model)
        if entry is None or is_loopback_url(self.spec.base_url if self.spec else ""):
            return False
        try:
            age = time.time() - float(entry.get("fetched") or 0)
        except (TypeError, ValueError):
            return False
        return age <= CACHE_TTL_S

    def _cached(self, model: str) -> tuple[int | None, int | None] | None:
        """The kept answer for ``model``, whatever its age (None: never asked)."""
        entry = self._entry(model)
        if entry is None:
            return None
        window, output = entry.get("context_window"), entry.get("max_output")
        return (window if isinstance(window, int) and window > 0 else None,
                output if isinstance(output, int) and output > 0 else None)

    def _store(self, found: Mapping[str, tuple[int | None, int | None]]) -> None:
        """Add what the server said (the model list's figures) to the cache; best effort."""
        path = self._cache_path()
        if path is None or self.spec is None:
            return
        with self._store_lock:
            self._store_locked(path, found)

    def _store_locked(self, path: Path, found: Mapping[str, tuple[int | None, int | None]]
                      ) -> None:
        from nyzhi.config.fsutil import atomic_write
        from nyzhi.oserror import StorageError

        assert self.spec is not None
        data = self._load_cache()
        models = data.get("models") if isinstance(data.get("models"), dict) else {}
        now = time.time()
        for name, (window, output) in found.items():
            models[name] = {"context_window": window, "max_output": output, "fetched": now}
        data = {"provider": self.spec.name, "base_url": self.spec.base_url, "models": models}
        try:
            atomic_write(path, json.dumps(data, indent=1).encode(), what="the model cache")
        except StorageError:
            pass  # a cache: next start asks again

    # ---- asking the server ----------------------------------------------------------------

    async def _ask(self, model: str) -> tuple[int | None, int | None] | None:
        """The server's figures for ``model`` (None for either it does not give), or None
        when it could not be asked. Never raises: a server that cannot tell is not an error."""
        import httpx
        import trio

        from nyzhi.provider.http import make_client

        assert self.spec is not None
        own = self._client is None
        client = self._client or make_client(self.spec)
        found: dict[str, tuple[int | None, int | None]] = {}
        asked = False
        try:
            with trio.move_on_after(ASK_TIMEOUT_S):
                asked = await _ask_server(client, self.spec, model, found)
        except (httpx.HTTPError, OSError, ValueError, TypeError, AttributeError):
            asked = bool(found)
        finally:
            if own:
                await client.aclose()
        if not asked:
            return None
        found.setdefault(model, (None, None))  # asked, and it cannot tell: remembered too
        # An atomic write (two fsyncs) in a worker thread: the event loop goes on meanwhile.
        if self._write_behind is not None:
            self._write_behind(trio.to_thread.run_sync, self._store, found)
        else:
            await trio.to_thread.run_sync(self._store, found)
        return found[model]


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def listed_limits(entry: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """Window and output limit from one entry of an OpenAI-style model list, whichever
    server wrote it: OpenRouter (``context_length``, ``top_provider``), vLLM
    (``max_model_len``), LM Studio (``loaded_context_length``, ``max_context_length``), Groq
    (``context_window``)."""
    top = entry.get("top_provider") if isinstance(entry.get("top_provider"), dict) else {}
    window = None
    for key in ("context_length", "max_model_len", "loaded_context_length",
                "max_context_length", "context_window"):
        window = _positive(entry.get(key))
        if window:
            break
    window = window or _positive(top.get("context_length"))
    output = (_positive(top.get("max_completion_tokens"))
              or _positive(entry.get("max_completion_tokens")))
    return window, output


async def _get_json(client: httpx.AsyncClient, url: str, headers: dict[str, str],
                    body: Any = None) -> Any:
    if body is None:
        response = await client.get(url, headers=headers)
    else:
        response = await client.post(url, headers=headers, json=body)
    if response.status_code != 200:
        return None
    return response.json()


async def _ask_server(
    client: httpx.AsyncClient, spec: ProviderSpec, model: str,
    found: dict[str, tuple[int | None, int | None]],
) -> bool:
    """Fill ``found`` with what the server says; False when no endpoint answered at all."""
    from nyzhi.provider.spec import auth_headers

    headers = auth_headers(spec)
    base = spec.base_url
    style = spec.api_style
    root = base[: -len("/v1")] if base.endswith("/v1") else base
    answered = False
    if style == "anthropic":
        return False  # its model list carries no limits: the table knows its models
    if style == "gemini":
        name = model if model.startswith(("models/", "tunedModels/")) else f"models/{model}"
        data = await _get_json(client, f"{base}/{name}", headers)
        if isinstance(data, dict):
            found[model] = (_positive(data.get("inputTokenLimit")),
                            _positive(data.get("outputTokenLimit")))
            return True
        return False
    if style == "ollama":
        data = await _get_json(client, f"{base}/api/show", headers, {"model": model})
        if isinstance(data, dict):
            found[model] = (_ollama_window(data), None)
            return True
        return False
    local = is_loopback_url(base)
    asks_props = style == "llama-cpp" or local
    # The questions go out together: each is a round trip the first request waits for, and
    # in turn they were three. The answers are read in the order they always were: llama.cpp's
    # /props, the model list, LM Studio's own REST API.
    urls = {"models": f"{base}/models"}
    if asks_props:
        urls["props"] = f"{root}/props"
    if local:
        urls["lmstudio"] = f"{root}/api/v0/models/{quote(model, safe='')}"
    answers = await _get_all(client, urls, headers)
    if asks_props:
        window = _props_window(answers.get("props"))
        if window:
            found[model] = (window, None)
            return True
    data = answers.get("models")
    if isinstance(data, dict) and isinstance(data.get("data"), list):
        answered = True
        for entry in data["data"]:
            if isinstance(entry, dict) and isinstance(entry.get("id"), str):
                window, output = listed_limits(entry)
                if window or output:
                    found[entry["id"]] = (window, output)
    if found.get(model, (None, None))[0] is None and local:
        entry = answers.get("lmstudio")
        if isinstance(entry, dict):
            answered = True
            window, output = listed_limits(entry)
            if window:
                found[model] = (window, output)
    return answered


async def _get_all(client: httpx.AsyncClient, urls: Mapping[str, str],
                   headers: dict[str, str]) -> dict[str, Any]:
    """``GET`` each URL at once; an answer that is not JSON, or a request that failed, is
    left out (the others still count)."""
    import httpx
    import trio

    answers: dict[str, Any] = {}

    async def get(name: str, url: str) -> None:
        try:
            answers[name] = await _get_json(client, url, headers)
        except (httpx.HTTPError, OSError, ValueError):
            pass

    async with trio.open_nursery() as nursery:
        for name, url in urls.items():
            nursery.start_soon(get, name, url)
    return answers


def _props_window(data: Any) -> int | None:
    """llama.cpp's ``GET /props``: the context size the server runs with (per slot)."""
    if not isinstance(data, dict):
        return None
    settings = data.get("default_generation_settings")
    window = _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None
    return window or _positive(data.get("n_ctx"))


def _ollama_window(data: Mapping[str, Any]) -> int | None:
    """Ollama's ``/api/show``: ``num_ctx`` in the model's parameters (what it runs with) when
    set, else the model's trained ``<arch>.context_length``."""
    params = data.get("parameters")
    if isinstance(params, str):
        for line in params.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == "num_ctx" and parts[1].isdigit():
                return int(parts[1]) or None
    info = data.get("model_info")
    if isinstance(info, dict):
        for key, value in info.items():
            if key.endswith(".context_length") and _positive(value):
                return int(value)
    return None
