"""kill -9 of ``nyz run`` at random moments never leaves a session that fails to load, nor one
whose loaded thread has a tool call without its result."""

from __future__ import annotations

import random
import signal
import subprocess
import sys

import trio

from nyzhi.core.runtime.sessions.store import SessionStore
from nyzhi.testing.fake_llm import Reply, open_fake_llm, tool_call

KILLS = 50
PARALLEL = 5


def endless_tool_use(request):
    # think, think, ... then an answer: every step writes messages and events to the session
    if len(request.tool_results()) < 6:
        return Reply(tool_calls=[tool_call("think", {"thought": "step"})], delay=0.002)
    return Reply(text="finished " * 20, delay=0.002)


class FirstRequests:
    """A dynamic script that also signals each run's first request (runs differ by prompt),
    so kill moments are drawn from the run itself, not from a loaded machine's start-up."""

    def __init__(self) -> None:
        self.seen: dict[str, trio.Event] = {}

    def event(self, prompt: str) -> trio.Event:
        return self.seen.setdefault(prompt, trio.Event())

    def __call__(self, request):
        self.event(request.last_user_text()).set()
        return endless_tool_use(request)


async def test_sigkill_at_random_points_leaves_loadable_sessions(workspace, home, configure):
    rng = random.Random(1234)
    env = {**__import__("os").environ, "HOME": str(home)}
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        env.pop(var, None)
    script = FirstRequests()
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))

        async def one(n: int, delay: float) -> None:
            prompt = f"go {n}"
            proc = await trio.lowlevel.open_process(
                [sys.executable, "-m", "nyzhi", "run", "--trust", "full", prompt],
                cwd=workspace, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            try:
                with trio.fail_after(120):
                    await script.event(prompt).wait()  # its session exists; it is running
                # fault injection at a random moment of the run (not synchronisation)
                await trio.sleep(delay)
            finally:
                proc.send_signal(signal.SIGKILL)
                await proc.wait()

        for batch in range(KILLS // PARALLEL):
            async with trio.open_nursery() as nursery:
                for k in range(PARALLEL):
                    nursery.start_soon(one, batch * PARALLEL + k, rng.uniform(0.0, 0.6))
    store = SessionStore(home / ".local" / "share" / "nyzhi" / "sessions")
    metas = store.list()
    assert metas, "no session was ever created"
    loaded = 0
    for meta in metas:
        session = store.load(meta.id)
        # a valid thread: each call is answered right after its message, once, in order
        messages = session.messages
        i = 0
        while i < len(messages):
            m = messages[i]
            i += 1
            assert m.role != "tool", "a tool result answers no call"
            if m.tool_calls:
                results = messages[i : i + len(m.tool_calls)]
                assert [r.tool_call_id for r in results] == [c.id for c in m.tool_calls]
                i += len(m.tool_calls)
        loaded += 1
    assert loaded == len(metas)
