"""nodes: the configured ``[[nodes]]``, their mode, and whether each answers now.

Registered only when nodes are configured (``nyzhi.core.runtime.assembly``), like ``web_search``: a
session without nodes pays nothing for it in the prompt. Each node is asked ``true`` over its
own executor (a monitored node's classifier lets it through), all at once, each within
``PROBE_TIMEOUT_S``, so one dead host costs the call seconds, not minutes.
"""

from __future__ import annotations

import time
from typing import Any

from nyzhi.tools.base import Permission, ToolContext, ToolResult
from nyzhi.tools.builtin.common import BuiltinTool, opt_str

PROBE_TIMEOUT_S = 10.0


def _where(executor: Any) -> str:
    ssh = getattr(executor, "inner", executor)
    host = getattr(ssh, "host", "?")
    user = getattr(ssh, "user", None)
    port = getattr(ssh, "port", 22)
    where = f"{user}@{host}" if user else host
    return where if port == 22 else f"{where}:{port}"


async def _probe(executor: Any) -> tuple[bool, str]:
    """(answers, how it went) for one node."""
    started = time.monotonic()
    try:
        res = await executor.run("true", cwd=".", timeout=PROBE_TIMEOUT_S)
    except Exception as exc:  # a refusal or an ssh that could not start: the node does not answer
        return False, str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    took = time.monotonic() - started
    if res.exit_code == 0 and not res.timed_out:
        return True, f"answers ({took:.1f} s)"
    if res.timed_out:
        return False, f"no answer within {PROBE_TIMEOUT_S:.0f} s"
    last = next((ln for ln in reversed(res.output.splitlines()) if ln.strip()), "")
    return False, f"does not answer (exit {res.exit_code}{': ' + last[:200] if last else ''})"


class NodesTool(BuiltinTool):
    name = "nodes"
    description = (
        "List the configured remote nodes (SSH hosts that bash, verify and the git tools can "
        "run on with node=NAME): each one's host, mode (managed: any command; monitored: "
        "read-only commands only) and whether it answers now."
    )
    parameters = {
        "type": "object",
        "properties": {"name": {"type": "string", "description": "Only this node."}},
    }
    permission = Permission.READ_ONLY

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        import trio

        from nyzhi.tools.nodes import NodeError, resolve_node

        nodes = dict(ctx.nodes or {})
        wanted = opt_str(args, "name")
        if wanted:
            try:
                found = resolve_node(nodes, wanted)
            except NodeError as exc:
                return ToolResult(str(exc), is_error=True)
            nodes = {found.name: found.executor}
        if not nodes:
            return ToolResult("no nodes are configured ([[nodes]] in the config)")
        results: dict[str, tuple[bool, str]] = {}

        async def probe(name: str) -> None:
            results[name] = await _probe(nodes[name])

        async with trio.open_nursery() as nursery:
            for name in nodes:
                nursery.start_soon(probe, name)
        lines = []
        for name in sorted(nodes):
            mode = "monitored" if getattr(nodes[name], "monitored", False) else "managed"
            lines.append(f"- {name}: {_where(nodes[name])}, {mode}, {results[name][1]}")
        return ToolResult("\n".join(lines), metadata={
            "nodes": {n: {"mode": "monitored" if getattr(nodes[n], "monitored", False)
                          else "managed", "answers": results[n][0]} for n in nodes}})


TOOLS = (NodesTool,)
