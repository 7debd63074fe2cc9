"""The index inside the runtime and on the command line, over real loopback HTTP: the
``semantic_search`` tool, ``[index] auto_context`` in the model's request, the service under
``/services``, and ``nyz index build|status|search|clear`` as subprocesses."""

from __future__ import annotations

import sys

import trio

from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime
from nyzhi.index.store import index_dir
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call
from nyzhi.testing.runtime import run_turn

INDEX_CONFIG = '[index]\nembedding = "fake"\nembedding_model = "fake-embed"\n'
FILES = {
    "retry.py": "def retry_with_backoff(call):\n    \"\"\"Retry with exponential backoff.\"\"\"\n    return call()\n",
    "colors.py": "def hex_to_rgb(value):\n    return value\n",
}


def nyz(*args):
    return [sys.executable, "-m", "nyzhi", *args]



async def test_semantic_search_tool_and_auto_context_in_a_runtime(workspace, configure):
    for rel, text in FILES.items():
        (workspace / rel).write_text(text)
    script = [
        reply(tool_calls=[tool_call("semantic_search", {"query": "retry with backoff",
                                                        "max_results": 1})]),
        reply("It is retry_with_backoff."),
    ]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"), extra=INDEX_CONFIG)
        built = await trio.run_process(nyz("index", "build"), cwd=workspace, capture_stdout=True)
        assert b"2 files: 2 embedded" in built.stdout
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            assert rt.system.lookup("/services/index") is not None
            assert "semantic_search" in rt.main_agent.tooling.registry.names()
            events = (await run_turn(rt, "where do we retry with backoff?"))[1]
    done = next(e for e in events if e.type == "tool_done")
    assert not done.is_error and done.output.startswith("retry.py:1-3 (retry_with_backoff)")
    chat = [r for r in server.requests if r.path == "/v1/chat/completions"]
    first_user = chat[0].last_user_text()
    assert first_user.startswith("where do we retry with backoff?\n\n")
    assert "semantic index (auto_context)" in first_user and "retry.py:1-3" in first_user


async def test_without_an_index_the_tool_says_how_to_build_one(workspace, configure):
    script = [reply(tool_calls=[tool_call("semantic_search", {"query": "anything"})]),
              reply("ok")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"), extra=INDEX_CONFIG)
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            events = (await run_turn(rt, "find it"))[1]
    done = next(e for e in events if e.type == "tool_done")
    assert done.is_error and "nyz index build" in done.output
    chat = [r for r in server.requests if r.path == "/v1/chat/completions"]
    assert chat[0].last_user_text() == "find it"  # no auto context without an index
    assert not index_dir(workspace).exists()  # nothing was built implicitly


async def test_index_disabled_registers_no_tool(workspace, configure):
    async with open_fake_llm(script=[reply("hi")]) as server:
        configure(workspace, server.url_for("openai"), extra="[index]\nenabled = false\n")
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            assert "semantic_search" not in rt.main_agent.tooling.registry.names()
            assert rt.system.lookup("/services/index") is None


async def test_nyz_index_commands(workspace, configure):
    for rel, text in FILES.items():
        (workspace / rel).write_text(text)
    async with open_fake_llm() as server:
        configure(workspace, server.url_for("openai"), extra=INDEX_CONFIG)

        async def run(*args):
            done = await trio.run_process(nyz("index", *args), cwd=workspace,
                                          capture_stdout=True, capture_stderr=True, check=False)
            return done.returncode, done.stdout.decode(), done.stderr.decode()

        code, out, _ = await run("status")
        assert code == 0 and "not built" in out
        code, _, err = await run("search", "retry")
        assert code == 1 and "nyz index build" in err
        code, out, _ = await run("build")
        assert code == 0 and "1/2 files, 1 embedded" in out and "indexed 2 files" in out
        code, out, _ = await run("status")
        assert "files:     2" in out and "model:     remote:fake-embed" in out
        code, out, _ = await run("search", "hex", "to", "rgb", "-k", "1")
        assert code == 0 and out.startswith("colors.py:1-2 (hex_to_rgb)")
        code, out, _ = await run("search", "backoff", "--mode", "keyword")
        assert out.startswith("retry.py:1-3")
        configure(workspace, server.url_for("openai"), extra='[index]\nembedding = "local"\n')
        code, _, err = await run("search", "backoff")
        assert code == 1 and "built with remote:fake-embed" in err and "nyz index build" in err
        code, out, _ = await run("clear")
        assert code == 0 and "removed" in out and not index_dir(workspace).exists()


async def test_a_runtime_refreshes_an_existing_index_in_the_background(workspace, configure):
    from nyzhi.index.service import Build, Status

    for rel, text in FILES.items():
        (workspace / rel).write_text(text)
    release = trio.Event()

    async def gate(_req):
        await release.wait()

    async with open_fake_llm(script=[reply("hi")]) as server:
        configure(workspace, server.url_for("openai"), extra=INDEX_CONFIG)
        await trio.run_process(nyz("index", "build"), cwd=workspace, capture_stdout=True)
        (workspace / "colors.py").write_text("def rgb_to_hex(rgb):\n    return rgb\n")
        server.embeddings_gate = gate  # the refresh cannot finish before we look
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            service = rt.system.lookup("/services/index")
            status = await service.ask(Status())
            assert status.exists and status.building
            handle = await service.ask(Build())  # joins the running refresh
            release.set()
            report = await handle.wait()
            assert (report.files, report.embedded, report.unchanged) == (2, 1, 1)
            assert not (await service.ask(Status())).building
