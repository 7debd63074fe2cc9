"""The MCP pool's cost: a call's round trip, and start-up with a slow server.

* echo round trip: ``echo`` on the npm ``server-everything`` through ``McpPool.call_tool``
  (the pool's supervised connection, result conversion) against the SDK's ``Client`` used
  directly on its own connection to the same server, in the same run. Target: <= 1.2x.
* first prompt with a slow server: a runtime whose only MCP server takes 5 s to start;
  time from ``open_runtime`` to the submitted prompt being accepted and to the model's first
  request, against the same runtime without the server. Target: not held up (ratio ~1,
  far below the 5 s the server takes).
* OAuth connect: time from ``McpPool.open`` to connected (tools listed) for a streamable
  HTTP server that wants OAuth, with a token cached by a login, against the same server
  with the login switched off (``tests/nyzhi/mcp/mcp_oauth_server.py --open``). Target: the
  cached token costs reading mcp-auth.json, a few ms at most.

The npm server is installed by ``make test`` into ``<venv>/node_modules``.
Usage: ``python -m benchmarks mcp [--json] [--quick]``.
"""

from __future__ import annotations

import functools
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import trio

import actors

EVERYTHING = Path(sys.prefix) / "node_modules" / ".bin" / "mcp-server-everything"
SLOW_START = 5.0


async def _sdk_direct(calls: int) -> float:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=str(EVERYTHING))
    # the pool, too, keeps server stderr off the screen
    with open(os.devnull, "w") as quiet:  # noqa: ASYNC230 - opening /dev/null does not block
        return await _timed_echo(Client(stdio_client(params, errlog=quiet)), calls)


async def _timed_echo(client, calls: int) -> float:
    async with client:
        await client.call_tool("echo", {"message": "warm"})
        start = time.perf_counter()
        for i in range(calls):
            await client.call_tool("echo", {"message": f"m{i}"})
        return (time.perf_counter() - start) / calls


async def _through_pool(calls: int, root: Path) -> float:
    from nyzhi.config.mcp_sources import ServerEntry
    from nyzhi.config.schema import McpStdioServer
    from nyzhi.core.runtime.mcp import McpPool
    from nyzhi.tools.registry import ToolRegistry

    entry = ServerEntry("everything", McpStdioServer(str(EVERYTHING)))
    async with actors.open_system(name="bench") as system:
        pool = await McpPool.open(system, ToolRegistry(), [entry], root=root)
        await pool.wait_started()
        result = await pool.call_tool("everything", "echo", {"message": "warm"})
        assert not result.is_error, result.output
        start = time.perf_counter()
        for i in range(calls):
            await pool.call_tool("everything", "echo", {"message": f"m{i}"})
        elapsed = (time.perf_counter() - start) / calls
        await system.shutdown()
        return elapsed


OAUTH_SERVER = Path(__file__).resolve().parents[1] / "tests" / "nyzhi" / "mcp" / "mcp_oauth_server.py"


async def _serve_oauth(nursery, *extra: str) -> str:
    import subprocess

    from nyzhi.provider.llama_server import free_loopback_port

    port = free_loopback_port()
    proc = await nursery.start(functools.partial(
        trio.run_process, [sys.executable, str(OAUTH_SERVER), "--port", str(port), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False))
    async for chunk in proc.stdout:
        if b"ready" in chunk:
            break
    return f"http://127.0.0.1:{port}/mcp"


async def _connect_time(url: str, root: Path) -> float:
    from nyzhi.config.mcp_sources import ServerEntry
    from nyzhi.config.schema import McpHttpServer
    from nyzhi.core.runtime.mcp import McpPool
    from nyzhi.tools.registry import ToolRegistry

    async with actors.open_system(name="bench") as system:
        start = time.perf_counter()
        pool = await McpPool.open(system, ToolRegistry(), [ServerEntry("oa", McpHttpServer(url))],
                                  root=root)
        await pool.wait_started()
        elapsed = time.perf_counter() - start
        [status] = pool.statuses()
        assert status.status == "connected", status.reason
        await system.shutdown()
    return elapsed


async def _oauth_connects(root: Path, rounds: int) -> tuple[float, float]:
    import httpx

    from nyzhi.config.mcp_sources import ServerEntry
    from nyzhi.config.schema import McpHttpServer
    from nyzhi.core.runtime.mcp.login import login

    def approve(url: str) -> bool:
        httpx.get(url, follow_redirects=True, timeout=30)
        return True

    async with trio.open_nursery() as nursery:
        oauth_url = await _serve_oauth(nursery)
        plain_url = await _serve_oauth(nursery, "--open")
        await login(ServerEntry("oa", McpHttpServer(oauth_url)), say=lambda line: None,
                    open_url=approve)
        await _connect_time(plain_url, root)  # warm-up: the SDK's imports
        cached, plain = [], []
        for _ in range(rounds):
            cached.append(await _connect_time(oauth_url, root))
            plain.append(await _connect_time(plain_url, root))
        nursery.cancel_scope.cancel()
    return statistics.median(cached), statistics.median(plain)


class InstantModel:
    """Answers at once and records when its first request arrived."""

    name = "bench"
    model = "bench-model"

    def __init__(self) -> None:
        self.first_request: float | None = None

    async def stream(self, request):
        from nyzhi.provider import types as pt

        if self.first_request is None:
            self.first_request = time.perf_counter()
        yield pt.TextDelta("ok")
        yield pt.Stop("end_turn")


async def _first_prompt(workspace: Path, env: dict[str, str]) -> tuple[float, float]:
    from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime

    model = InstantModel()
    start = time.perf_counter()
    options = RuntimeOptions(cwd=workspace, provider_instance=model, ephemeral=True,
                             interactive=True, env=env)
    async with open_runtime(options) as rt:
        handle = await rt.submit("hello")
        accepted = time.perf_counter() - start
        await handle.wait()
        assert model.first_request is not None
        first_request = model.first_request - start
    return accepted, first_request


def _workspace(root: Path, with_slow_server: bool) -> Path:
    ws = root / ("slow" if with_slow_server else "plain")
    (ws / ".nyzhi").mkdir(parents=True)
    (ws / ".git").mkdir()
    if with_slow_server:
        (ws / ".nyzhi" / "config.toml").write_text(
            "[mcp.servers.slow]\ncommand = \"sh\"\n"
            f"args = [\"-c\", \"sleep {SLOW_START:g}; exec {EVERYTHING}\"]\n")
    return ws


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    if not EVERYTHING.exists():
        print(f"mcp: skipped ({EVERYTHING} missing: `make test` installs the npm MCP servers)")
        return
    calls = 100 if quick else 300
    rounds = 2 if quick else 3
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")}
        env["HOME"] = str(root / "home")
        direct, pooled = [], []
        for _ in range(rounds):  # alternate, so machine noise hits both alike
            direct.append(trio.run(_sdk_direct, calls))
            pooled.append(trio.run(_through_pool, calls, root))
        base, pool = min(direct), min(pooled)
        plain_ws, slow_ws = _workspace(root, False), _workspace(root, True)
        trio.run(_first_prompt, plain_ws, env)  # warm-up: imports and caches for both
        plain = [trio.run(_first_prompt, plain_ws, env) for _ in range(rounds)]
        slow = [trio.run(_first_prompt, slow_ws, env) for _ in range(rounds)]
        os.environ["XDG_DATA_HOME"] = str(root / "data")  # the login's mcp-auth.json
        oauth_cached, oauth_plain = trio.run(_oauth_connects, root, rounds * 3)
    p_acc = statistics.median(a for a, _ in plain)
    s_acc = statistics.median(a for a, _ in slow)
    p_req = statistics.median(r for _, r in plain)
    s_req = statistics.median(r for _, r in slow)
    figures = {
        "echo_sdk_direct_ms": round(base * 1000, 3),
        "echo_pool_ms": round(pool * 1000, 3),
        "echo_ratio": round(pool / base, 3),
        "echo_target": 1.2,
        "prompt_accepted_plain_ms": round(p_acc * 1000, 1),
        "prompt_accepted_slow_server_ms": round(s_acc * 1000, 1),
        "first_request_plain_ms": round(p_req * 1000, 1),
        "first_request_slow_server_ms": round(s_req * 1000, 1),
        "slow_server_start_s": SLOW_START,
        "connect_oauth_cached_token_ms": round(oauth_cached * 1000, 1),
        "connect_plain_http_ms": round(oauth_plain * 1000, 1),
    }
    if "--json" in argv:
        print(json.dumps(figures))
        return
    print(f"echo round trip: SDK direct {base * 1000:.3f} ms, through the pool "
          f"{pool * 1000:.3f} ms -> {pool / base:.2f}x (target <= 1.2x)")
    print(f"first prompt accepted: {p_acc * 1000:.0f} ms without MCP, {s_acc * 1000:.0f} ms with "
          f"a server taking {SLOW_START:g} s to start -> {s_acc / p_acc:.2f}x")
    print(f"first model request: {p_req * 1000:.0f} ms without MCP, {s_req * 1000:.0f} ms with "
          f"the slow server: {(s_req - p_req) * 1000:+.0f} ms, against the server's "
          f"{SLOW_START * 1000:.0f} ms start (target: not held up, i.e. far below it)")
    print(f"http connect: {oauth_cached * 1000:.1f} ms with a cached OAuth token, "
          f"{oauth_plain * 1000:.1f} ms for the same server without OAuth "
          f"({(oauth_cached - oauth_plain) * 1000:+.1f} ms)")
