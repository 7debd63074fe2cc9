"""kill -9 a real writer process at random moments; every session must still load."""

import random
import signal
import subprocess
import sys

from nyzhi.core.runtime.sessions import SessionStore
from nyzhi.core.runtime.sessions.pairing import INTERRUPTED_TEXT

CHILD = r'''
import random, sys
from nyzhi.core import events as ev
from nyzhi.core.runtime.sessions import SessionStore
from nyzhi.provider.types import Message, ToolCall

root, resume, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = random.Random(seed)
store = SessionStore(root)
if resume != "-":
    w = store.open(resume)
    n = store.load(resume).meta.message_count
else:
    w = store.create(cwd="/p", provider="fake", model="m")
    n = 0
print(w.id, flush=True)
while True:
    pad = "x" * rng.choice([0, 10, 1000, 20_000, 200_000])
    k = n % 3
    if k == 0:
        msg = Message("user", f"m{n} {pad}")
    elif k == 1:
        msg = Message("assistant", f"m{n}", tool_calls=(ToolCall(f"c{n}", "bash", '{"a": 1}'),))
    else:
        msg = Message("tool", f"m{n} {pad}", tool_call_id=f"c{n - 1}")
    w.append_event(ev.ToolStart(f"c{n}", "bash", pad))
    w.append_message(msg)
    n += 1
    if n % 7 == 0:
        w.append_event(ev.TurnComplete(f"t{n}", "done", 1))
'''


def _check(store, sid):
    s = store.load(sid)  # must not raise
    assert s.skipped_lines <= 1
    # no message lost or garbled in the middle: contents are m0, m1, ... in order, except
    # a result a resume recorded for a call killed before its result (it takes that slot)
    for i, m in enumerate(s.history):
        if m.content == INTERRUPTED_TEXT:
            assert i % 3 == 2 and m.tool_call_id == f"c{i - 1}", (sid, i)
            continue
        assert m.content.split(" ")[0] == f"m{i}", (sid, i, m.content[:20])
    assert s.interrupted == ([s.history[-1].tool_calls[0]] if len(s.history) % 3 == 2 else [])
    assert store.meta(sid).message_count == len(s.history)
    return s


def test_sigkill_at_random_points_leaves_loadable_sessions(tmp_path):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    root = tmp_path / "sessions"
    rng = random.Random(1234)
    ids: list[str] = []
    iterations = 50
    i = 0
    while i < iterations:
        # two children at a time (the machine has 2 cores)
        batch = []
        for _ in range(min(2, iterations - i)):
            resume = rng.choice(ids) if ids and rng.random() < 0.3 else "-"
            if resume in [b[1] for b in batch]:
                resume = "-"
            p = subprocess.Popen(
                [sys.executable, str(script), str(root), resume, str(i)],
                stdout=subprocess.PIPE, text=True,
            )
            batch.append((p, resume))
            i += 1
        for p, resume in batch:
            sid = p.stdout.readline().strip()
            assert sid, "child did not start"
            if resume == "-":
                ids.append(sid)
        # a random kill point: anywhere from right after start to a few dozen writes in
        for p, _ in batch:
            try:
                p.wait(timeout=rng.uniform(0, 0.03))
            except subprocess.TimeoutExpired:
                pass
            p.send_signal(signal.SIGKILL)
            p.wait()
            p.stdout.close()
            assert p.returncode == -signal.SIGKILL
    store = SessionStore(root)
    total = 0
    for sid in ids:
        total += len(_check(store, sid).history)
    assert {m.id for m in store.list()} == set(ids)
    assert total > 0
