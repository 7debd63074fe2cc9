"""A member on another host: messages per second across the SSH pipe vs a local process pipe.

    python -m benchmarks teams_remote [--json] [--quick]

A member with ``--remote-store`` sends each message as a ``store_call`` line (``inbox.append``)
on its stdout and waits for the lead's ``store_reply`` on its stdin (``nyzhi.team_files.remote``).
Here a child process plays the member, sending N messages that way, and this process plays the
lead, answering each from a real ``TeamStore`` with ``serve``. The child runs twice: as a local
process on plain pipes (the baseline, what a local process member's pipe costs), and through
``ssh`` to an OpenSSH server on loopback started for the run (the transport a remote member
uses; the network itself is not in the figure). Figures:

* messages/s with the store: each message appended to the recipient's inbox (a locked,
  fsynced write on the lead), both ways; the ratio is local over SSH (1.0: SSH costs nothing);
* messages/s of the pipe alone (the lead answers without touching the store): what SSH adds
  to a round trip, without the disk's share.

Needs root and sshd (as the SSH executor's tests do); otherwise it says why and measures
nothing. Timings are the best of several repeats (the machine is shared). Nothing is asserted.
"""

from __future__ import annotations

import importlib.util
import json
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from nyzhi import convert
from nyzhi.team_files.remote import StoreCall, StoreReply, serve
from nyzhi.team_files.store import Member, TeamConfig, TeamStore

REPEATS = 3
CODE = Path(__file__).resolve().parent.parent

MEMBER = """
import json, sys
from nyzhi import convert
from nyzhi.team_files.inbox import Message, new_id
from nyzhi.team_files.remote import StoreCall
print(json.dumps({"go": True}), flush=True)
for i in range(int(sys.argv[1])):
    m = Message(new_id(), "alice", "bob", f"message {i}", "2026-01-01T00:00:00Z")
    call = StoreCall(i + 1, "inbox.append",
                     {"team": "bench", "member": "bob", "messages": convert.unstructure([m])})
    print(json.dumps(convert.unstructure(call)), flush=True)
    if not sys.stdin.readline():
        break
"""


def _sshd() -> Any:
    spec = importlib.util.spec_from_file_location(
        "_sshd", CODE / "tests" / "nyzhi" / "tools" / "_sshd.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _lead(argv: list[str], store: TeamStore | None, n: int, env: dict[str, str] | None) -> float:
    """Answer the child's ``n`` calls; seconds from its "go" to the last reply."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        json.loads(proc.stdout.readline())  # go
        start = time.perf_counter()
        for _ in range(n):
            call = convert.structure(json.loads(proc.stdout.readline()), StoreCall, "bench")
            reply = (serve(store, "bench", "alice", call) if store is not None
                     else StoreReply(call.id))
            proc.stdin.write((json.dumps(convert.unstructure(reply)) + "\n").encode())
            proc.stdin.flush()
        elapsed = time.perf_counter() - start
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    return elapsed


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    n = 100 if quick else 400
    sshd = _sshd()
    reason = sshd.unavailable_reason()
    if reason is not None:
        print(f"skipped: {reason}")
        return
    from nyzhi.tools.executors import SshExecutor

    with tempfile.TemporaryDirectory(prefix="nyz-bench-remote-") as tmp:
        root = Path(tmp)
        (root / "sshd").mkdir()
        server = sshd.start(root / "sshd")
        try:
            store = TeamStore({"XDG_DATA_HOME": str(root / "data")})
            store.create(TeamConfig(name="bench", members=[Member("alice"), Member("bob")]))
            node = SshExecutor("127.0.0.1", user=server.user, port=server.port,
                               identity_file=server.identity_file,
                               known_hosts=server.known_hosts)
            script = [sys.executable, "-c", MEMBER, str(n)]
            env = {"PYTHONPATH": str(CODE), "PATH": "/usr/bin:/bin"}
            remote = node.session_argv(
                f"env PYTHONPATH={shlex.quote(str(CODE))} {shlex.join(script)}", tmp)
            figures: dict[str, float] = {}
            for label, with_store in (("store", store), ("pipe", None)):
                local_s = min(_lead(script, with_store, n, env) for _ in range(REPEATS))
                ssh_s = min(_lead(remote, with_store, n, node.local_env())
                            for _ in range(REPEATS))
                figures[f"{label}_local_per_s"] = n / local_s
                figures[f"{label}_ssh_per_s"] = n / ssh_s
                figures[f"{label}_ratio"] = local_s / ssh_s
        finally:
            sshd.stop(server)
    if "--json" in argv:
        print(json.dumps({k: round(v, 3) for k, v in figures.items()}))
        return
    for label, what in (("store", "messages into the lead's store"),
                        ("pipe", "round trips of the pipe alone")):
        print(f"{what}: local pipe {figures[f'{label}_local_per_s']:.0f}/s, "
              f"ssh pipe {figures[f'{label}_ssh_per_s']:.0f}/s "
              f"(ratio ssh/local {figures[f'{label}_ratio']:.2f}x the rate)")
