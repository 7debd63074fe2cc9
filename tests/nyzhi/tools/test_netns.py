"""The session's shared loopback network (``nyzhi.tools.netns``): two sandboxed commands meet
on 127.0.0.1, the host's own loopback and the outside stay out of reach, and the namespace's
holder ends with the session. Real bwrap, real unshare/nsenter, real sockets."""

from __future__ import annotations

import os

import trio

from nyzhi.tools.executors import LocalExecutor
from nyzhi.tools.netns import LoopbackNetwork
from nyzhi.tools.sandbox import SandboxPolicy


def alive(pid: int) -> bool:
    return os.path.exists(f"/proc/{pid}")


def policy(ws, loopback: LoopbackNetwork) -> SandboxPolicy:
    return SandboxPolicy(level="workspace-write", workspace_root=ws, allow_temp=False,
                         loopback=loopback)


async def test_two_commands_share_a_loopback_that_reaches_nothing_else(tmp_path):
    loopback = LoopbackNetwork()
    sandbox = policy(tmp_path, loopback)
    executor = LocalExecutor()
    host = await trio.open_tcp_listeners(0, host="127.0.0.1")  # nyz's own loopback
    host_port = host[0].socket.getsockname()[1]
    serve = ("python3 -c \"import socket;s=socket.socket();s.bind(('127.0.0.1',7001));"
             "s.listen();open('up','w').close();c,_=s.accept();c.sendall(b'hello-peer');"
             "c.close()\"")
    probe = ("until [ -e up ]; do sleep 0.02; done; exec 3<>/dev/tcp/127.0.0.1/7001 && cat <&3; echo; "
             f"(exec 4<>/dev/tcp/127.0.0.1/{host_port}) 2>/dev/null && echo host-reached; "
             "ip -o link | cut -d: -f2 | tr -d ' '")
    results = {}

    async def run(name: str, command: str) -> None:
        results[name] = await executor.run(command, cwd=tmp_path, sandbox=sandbox, timeout=60)

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run, "server", serve)
            nursery.start_soon(run, "client", probe)
        holder = loopback.pid
        assert holder is not None and loopback.failure is None
    finally:
        await loopback.aclose()
        for listener in host:
            await listener.aclose()
    assert results["server"].exit_code == 0 and results["server"].sandboxed
    out = results["client"].output
    assert "hello-peer" in out  # the server's command and the client's met
    assert "host-reached" not in out  # the host's loopback is another namespace
    assert out.split()[-1] == "lo" and len(out.split()) == 2  # no interface but lo
    assert not alive(holder)  # the holder ended with the session


async def test_a_policy_with_the_network_on_does_not_join(tmp_path):
    loopback = LoopbackNetwork()
    sandbox = SandboxPolicy(level="workspace-write", workspace_root=tmp_path, network=True,
                            loopback=loopback)
    assert await sandbox.joined() is sandbox and loopback.pid is None
    joined = await policy(tmp_path, loopback).joined()
    try:
        assert joined.netns[0].endswith("nsenter") and "--unshare-net" not in joined.wrap_command(
            "true", tmp_path)
    finally:
        await loopback.aclose()
