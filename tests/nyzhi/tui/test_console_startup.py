"""The console imports only what it needs on its way to the runtime being open (issue 30 §7).

The real console runs in tmux under a small wrapper that records ``sys.modules`` when the
process ends: opened, then quit with nothing typed, it must not have loaded what it never uses.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from nyzhi.testing.cli import nyz_env
from nyzhi.testing.fake_llm import open_fake_llm
from nyzhi.testing.tmux import INPUT_READY, TmuxPane

WRAPPER = """
import json, runpy, sys
out, sys.argv = sys.argv[1], ["nyz"]
try:
    runpy.run_module("nyzhi", run_name="__main__")
finally:
    with open(out, "w") as fh:
        json.dump(sorted(sys.modules), fh)
"""

# Loaded by nothing the console does: asyncio only by urwid, for an event loop it never uses.
NOT_ON_THE_CONSOLE_PATH = ("asyncio.base_events", "asyncio.events", "asyncio.tasks")


@pytest.mark.skipif(not TmuxPane.available(), reason="tmux is not installed")
async def test_the_console_opens_without_loading_asyncio(workspace, home, configure, tmp_path):
    modules_file = tmp_path / "modules.json"
    async with open_fake_llm(script=[]) as server:
        configure(workspace, server.url_for("openai"))
        pane = TmuxPane(tmp_path / "tmux-startup.sock")
        await pane.start([sys.executable, "-c", WRAPPER, str(modules_file)], cwd=workspace,
                         env=nyz_env(home))
        try:
            await pane.wait_for(INPUT_READY)
            await pane.keys("C-c", "C-c")
            assert await pane.wait_exit() == 0
        finally:
            pane.kill()
    loaded = set(json.loads(modules_file.read_text()))
    assert {"urwid", "nyzhi.tui.app", "nyzhi.core.runtime.runtime"} <= loaded  # the console did run
    assert not loaded & set(NOT_ON_THE_CONSOLE_PATH), sorted(loaded & {*NOT_ON_THE_CONSOLE_PATH})


DEFERRED_ASYNCIO = """
import sys, threading
from nyzhi.tui.launch import defer_asyncio
defer_asyncio()
import urwid
assert "asyncio.events" not in sys.modules, "urwid's import ran asyncio"
import asyncio
assert "asyncio.events" not in sys.modules, "import asyncio alone ran it"
found = []
def use():
    found.append(asyncio.run(asyncio.sleep(0, result=7)))
threads = [threading.Thread(target=use) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
from asyncio import Queue
assert found == [7, 7, 7, 4 + 3] and Queue is sys.modules["asyncio"].Queue, found
assert type(asyncio).__name__ == "module"
print("ok")
"""


def test_a_deferred_asyncio_loads_at_its_first_use_in_any_thread():
    """What does use asyncio after the console deferred it finds it whole: four threads
    reading it for the first time at once each run a loop."""
    done = subprocess.run([sys.executable, "-c", DEFERRED_ASYNCIO], capture_output=True,
                          text=True, check=False, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
