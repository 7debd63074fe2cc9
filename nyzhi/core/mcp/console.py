"""``/mcp`` in the line chat and the console: servers, resources and prompts of the runtime's
MCP pool, as text lines (front-end neutral, so both front ends run this one implementation).

    /mcp                              each server's status and tools, resources, prompts
    /mcp read SERVER URI              print a resource
    /mcp prompt SERVER NAME [K=V ...] send a server prompt as the next user message
"""

from __future__ import annotations

import shlex
from typing import Any, TextIO

USAGE = "usage: /mcp · /mcp read SERVER URI · /mcp prompt SERVER NAME [K=V ...]"


async def mcp_command(rt: Any, line: str, out: TextIO) -> str | None:
    """Run one ``/mcp`` line; returns a prompt to submit, or None."""
    try:
        words = shlex.split(line)[1:]
    except ValueError as exc:
        out.write(f"{exc}\n{USAGE}\n")
        return None
    try:
        if not words:
            await _overview(rt, out)
            return None
        if words[0] == "read" and len(words) == 3:
            text = await rt.mcp_read_resource(words[1], words[2])
            out.write(text[:4000] + ("\n[…]" if len(text) > 4000 else "") + "\n")
            return None
        if words[0] == "prompt" and len(words) >= 3:
            args = dict(w.split("=", 1) for w in words[3:] if "=" in w)
            text = await rt.mcp_prompt_text(words[1], words[2], args)
            out.write(f"[sending prompt {words[1]}/{words[2]}]\n")
            return text
    except Exception as exc:  # an unknown server, a server error: say so, keep chatting
        out.write(f"mcp: {exc}\n")
        return None
    out.write(USAGE + "\n")
    return None


async def _overview(rt: Any, out: TextIO) -> None:
    statuses = rt.mcp_status()
    if not statuses:
        out.write("no MCP servers (nyz mcp add NAME -- COMMAND)\n")
        return
    for s in statuses:
        detail = f"{s.tools} tools" if s.status == "connected" else s.reason
        out.write(f"{s.name}: {s.status} · {detail}\n")
    for r in await rt.mcp_resources():
        out.write(f"  resource {r.server} {r.uri}" + (f" ({r.name})" if r.name else "") + "\n")
    for p in await rt.mcp_prompts():
        args = f" {' '.join(a + '=' for a in p.arguments)}" if p.arguments else ""
        out.write(f"  prompt {p.server} {p.name}{args}\n")
