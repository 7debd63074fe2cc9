"""A program embedding nyzhi finds its interpreter as it left it (issue 50, item 6): after
``open_runtime`` its collector is as it was (enabled, nothing frozen) and its own
``httpx.AsyncClient(http2=True)`` has HTTP/2; ``nyz`` itself still makes both tunings
(``nyzhi.process``). Each side runs in a fresh interpreter: the program below, and ``nyz``."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from nyzhi.testing.cli import nyz_env
from nyzhi.testing.fake_llm import open_fake_llm, reply

EMBEDDER = textwrap.dedent("""
    import gc, json, sys
    import trio
    import nyzhi

    def snapshot():
        import httpcore, httpx
        client = httpx.AsyncClient(http2=True)  # raises when h2 is hidden from httpx
        return {"enabled": gc.isenabled(), "frozen": gc.get_freeze_count(),
                # httpcore's stub when it was imported without h2 has no such method
                "h2": hasattr(httpcore.AsyncHTTP2Connection, "handle_async_request")}

    async def main():
        before = {"enabled": gc.isenabled(), "frozen": gc.get_freeze_count()}
        async with nyzhi.open_runtime(nyzhi.RuntimeOptions(cwd=sys.argv[1])) as rt:
            outcome = await (await rt.submit("hello")).wait()
            inside = snapshot()
        print(json.dumps({"before": before, "inside": inside, "after": snapshot(),
                          "answer": outcome.text}))

    trio.run(main)
""")


async def test_open_runtime_leaves_the_collector_and_http2_as_the_program_had_them(
        workspace, home, configure):
    async with open_fake_llm(script=[reply("embedded answer")]) as server:
        configure(workspace, server.url_for("openai"))
        import trio

        done = await trio.run_process(
            [sys.executable, "-c", EMBEDDER, str(workspace)], cwd=workspace,
            env=nyz_env(home), capture_stdout=True, capture_stderr=True, check=False)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    seen = json.loads(done.stdout.decode().splitlines()[-1])
    assert seen["answer"] == "embedded answer"  # the runtime did run
    assert seen["before"] == {"enabled": True, "frozen": 0}
    for when in ("inside", "after"):
        assert seen[when] == {"enabled": True, "frozen": 0, "h2": True}


def test_nyz_itself_still_freezes_and_skips_h2() -> None:
    """The entry point claims the process: ``nyz`` keeps both start-up wins."""
    code = textwrap.dedent("""
        import gc, sys
        import nyzhi.cli.main  # the nyz entry point: claims the process
        from nyzhi import process
        from nyzhi.provider.http import _import_httpcore
        _import_httpcore()
        import httpcore
        print(process.claimed(), "h2" in sys.modules,
              hasattr(httpcore.AsyncHTTP2Connection, "handle_async_request"))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split() == ["True", "False", "False"]
