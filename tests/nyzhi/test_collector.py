"""The start-up pause of the garbage collector restores what it found; a runtime shut down
in a process that opens another (``nyz acp``) leaves no frozen garbage behind."""

from __future__ import annotations

import gc
import sys
import textwrap
import weakref

import trio

from nyzhi import collector
from nyzhi.testing.cli import nyz_env
from nyzhi.testing.fake_llm import open_fake_llm, reply


def test_paused_turns_the_collector_off_and_back_on() -> None:
    assert gc.isenabled()
    with collector.paused():
        assert not gc.isenabled()
        collector.resume()  # the run path resumes early; the block's end then does nothing
        assert gc.isenabled()
    assert gc.isenabled()


def test_a_collector_already_off_stays_off() -> None:
    gc.disable()
    try:
        with collector.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_resume_can_freeze_what_exists() -> None:
    collector.pause()
    try:
        assert not gc.isenabled()
    finally:
        collector.resume(freeze=True)
    try:
        assert gc.isenabled() and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_a_released_runtime_s_frozen_garbage_is_collected_at_the_next_freeze() -> None:
    class Node:
        pass

    node = Node()
    node.me = node  # a cycle: only the cyclic collector frees it
    ref = weakref.ref(node)
    try:
        collector.freeze_runtime()  # a runtime built: the node is frozen with it
        del node
        gc.collect()
        assert ref() is not None  # frozen garbage: full collections do not see it
        collector.runtime_released()
        collector.freeze_runtime()  # the next runtime built
        assert ref() is None
    finally:
        gc.unfreeze()


SESSIONS = textwrap.dedent("""
    import gc, sys
    import trio
    import nyzhi
    from nyzhi import process

    process.claim()  # as nyz acp: each runtime is frozen when built

    async def session():
        async with nyzhi.open_runtime(nyzhi.RuntimeOptions(cwd=sys.argv[1])) as rt:
            await (await rt.submit("hello")).wait()
            return gc.get_freeze_count()

    async def main():
        print(*[await session() for _ in range(4)])

    trio.run(main)
""")


async def test_nyz_acp_s_closed_session_runtimes_leave_nothing_frozen(
        workspace, home, configure):
    """``nyz acp`` opens a runtime per session in one process and freezes each when built.
    Before ``freeze_runtime`` collected first, what a closed session's runtime left in cycles
    was frozen with the next for good: ~1,000 more frozen objects a session here (55,072,
    56,105, 57,140, 57,868), ~1 MiB of RSS (benchmarks/acp_sessions_bench.py); now the count
    stays level (55,079, 54,959, 55,053, 54,978)."""
    async with open_fake_llm(script=lambda _request: reply("answer")) as server:
        configure(workspace, server.url_for("openai"))
        done = await trio.run_process(
            [sys.executable, "-c", SESSIONS, str(workspace)], cwd=workspace,
            env=nyz_env(home), capture_stdout=True, capture_stderr=True, check=False)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    frozen = [int(n) for n in done.stdout.decode().split()]
    assert len(frozen) == 4 and frozen[0] > 10_000  # the runtimes were frozen
    assert frozen[3] - frozen[1] < 500, frozen  # two sessions' leftovers would be ~2,000
