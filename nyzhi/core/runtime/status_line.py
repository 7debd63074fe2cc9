"""Claude Code's ``statusLine``: a command whose first line of output is the console's status
bar.

``.claude/settings.json`` (``settings.local.json`` wins) ``{"statusLine": {"type": "command",
"command": "...", "padding": N}}``. It runs programs, so it is used only once the project is
approved, like the hooks of the same file (``nyzhi.config.project_trust``). The command gets
Claude Code's status JSON on stdin: ``hook_event_name`` ``Status``, ``session_id``,
``transcript_path``, ``cwd``, ``model`` (``id``, ``display_name``), ``workspace``
(``current_dir``, ``project_dir``), ``version``, ``output_style`` (``name``) and ``cost``
(``total_cost_usd``, ``total_duration_ms``, ``total_lines_added``, ``total_lines_removed``:
nyz counts no lines, so those are 0). Its first stdout line (capped) replaces nyz's own status
text; an empty output, a failure or a timeout keeps nyz's. It runs in its own process group,
killed on timeout, with the shell policy's environment.
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import trio

from nyzhi import records

TIMEOUT = 5.0
LINE_CAP = 400


@records.frozen
class StatusLine:
    command: str
    padding: int = 0


def read_status_line(root: Path) -> StatusLine | None:
    """The project's ``statusLine`` (None when unset or not a command)."""
    from nyzhi.config.claude_settings import read_settings

    found = None
    for settings in read_settings(root)[0]:
        data = settings.data if isinstance(settings.data, dict) else {}
        raw = data.get("statusLine")
        if isinstance(raw, dict) and raw.get("type", "command") == "command" and isinstance(
                raw.get("command"), str) and raw["command"].strip():
            padding = raw.get("padding", 0)
            found = StatusLine(raw["command"], padding if isinstance(padding, int) else 0)
    return found


async def run_status_line(line: StatusLine, payload: dict[str, Any], cwd: str,
                          env: dict[str, str]) -> str | None:
    """The command's first output line, or None (failed, timed out, printed nothing)."""
    from nyzhi.config.procgroup import signal_group

    try:
        proc = await trio.lowlevel.open_process(
            ["/bin/sh", "-c", line.command], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, cwd=cwd, env=env, start_new_session=True)
    except OSError:
        return None
    out = bytearray()
    try:
        with trio.move_on_after(TIMEOUT):
            assert proc.stdin is not None and proc.stdout is not None
            try:
                await proc.stdin.send_all(json.dumps(payload).encode())
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass
            await proc.stdin.aclose()
            while len(out) < 64 * 1024 and (chunk := await proc.stdout.receive_some(4096)):
                out += chunk
            await proc.wait()
    finally:
        signal_group(proc.pid, signal.SIGKILL)
        with trio.CancelScope(shield=True):
            await proc.wait()
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    await stream.aclose()
    if proc.returncode != 0:
        return None
    first = out.decode(errors="replace").strip().splitlines()
    return (" " * line.padding + first[0][:LINE_CAP]) if first else None


def status_payload(rt: Any, cwd: Path, cost_usd: float, started: float,
                   style: str = "default") -> dict[str, Any]:
    """Claude Code's status JSON for the runtime ``rt`` now."""
    import time

    from nyzhi import __version__

    model = str(rt.model)
    hooks = rt.hooks
    return {
        "hook_event_name": "Status", "session_id": rt.session_id,
        "transcript_path": getattr(hooks, "transcript_path", "") or "",
        "cwd": str(cwd), "model": {"id": model, "display_name": model},
        "workspace": {"current_dir": str(cwd),
                      "project_dir": str(rt.main_agent.tooling.context.workspace_root)},
        "version": __version__,
        "output_style": {"name": style},
        "cost": {"total_cost_usd": cost_usd,
                 "total_duration_ms": int((time.monotonic() - started) * 1000),
                 "total_lines_added": 0, "total_lines_removed": 0},
    }
