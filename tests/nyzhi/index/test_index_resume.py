"""A real ``nyz index build`` killed with SIGKILL mid-build resumes where it stopped.

The fake LLM's /embeddings endpoint answers only as many file requests as the test allows, so
the kill lands at a known point: after the progress line of the third file, while the fourth
file's request is held. Nothing here waits on time."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import trio

from nyzhi.index.store import IndexStore, index_dir
from nyzhi.testing.fake_llm import open_fake_llm

INDEX_CONFIG = '[index]\nembedding = "fake"\nembedding_model = "fake-embed"\n'
FILES = {f"mod{i}.py": f"def function_{i}():\n    return {i}\n" for i in range(6)}


def file_requests(server, since=0):
    return [req.json["input"][0].split(" ")[0] for req in server.requests[since:]
            if req.path == "/v1/embeddings" and req.json["input"] != ["dimension probe"]]


async def read_until(stream, needle: bytes, seen: bytearray) -> None:
    while needle not in seen:
        chunk = await stream.receive_some(4096)
        assert chunk, f"nyz index build ended before printing {needle!r}: {bytes(seen)!r}"
        seen += chunk


async def test_build_killed_mid_way_resumes_with_the_files_it_had_not_committed(
        workspace, configure):
    for rel, text in FILES.items():
        (workspace / rel).write_text(text)
    allowed = trio.Semaphore(3)

    async def gate(req):
        if req.json["input"] != ["dimension probe"]:
            await allowed.acquire()

    argv = [sys.executable, "-m", "nyzhi", "index", "build"]
    async with open_fake_llm() as server:
        configure(workspace, server.url_for("openai"), extra=INDEX_CONFIG)
        server.embeddings_gate = gate
        proc = await trio.lowlevel.open_process(argv, cwd=workspace, stdout=subprocess.PIPE)
        seen = bytearray()
        try:
            await read_until(proc.stdout, b"3/6 files, 3 embedded", seen)
            await server.wait_for_requests(5)  # probe + 3 answered + the 4th, held
            proc.send_signal(signal.SIGKILL)
            assert await proc.wait() == -signal.SIGKILL
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        store = IndexStore(index_dir(workspace))
        assert sorted(store.files()) == ["mod0.py", "mod1.py", "mod2.py"]
        store.close()

        server.embeddings_gate = None
        mark = len(server.requests)
        done = await trio.run_process(argv, cwd=workspace, capture_stdout=True)
    out = done.stdout.decode()
    assert "6 files: 3 embedded (3 chunks), 3 unchanged" in out, out
    assert sorted(file_requests(server, mark)) == ["mod3.py", "mod4.py", "mod5.py"]
    store = IndexStore(index_dir(workspace))
    assert sorted(store.files()) == sorted(FILES) and store.counts() == (6, 6)
    store.close()
    assert os.environ["HOME"] in str(index_dir(workspace))
