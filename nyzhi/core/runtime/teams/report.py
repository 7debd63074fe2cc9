"""What ``nyz team status``, the chat's and the console's ``/team`` show of a team: its
members (status, pid, unread), its tasks. Read from the team's files, so it works from any
process, whether the team is running or not."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def alive(pid: Any) -> bool:
    """A live nyz process (not a zombie: a detached member whose lead is gone may linger
    unreaped in a container), so a pid reused by another program is never signalled."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        if Path("/proc/self").exists():
            return False
        try:  # no /proc (macOS): the pid alone
            os.kill(pid, 0)
        except OSError:
            return False
        return True
    return stat.rsplit(")", 1)[1].split()[0] != "Z" and b"nyzhi" in cmdline


def live_status(st: dict[str, Any]) -> str:
    """A member's status word from its status file, checked against its pid: a member whose
    process is gone reads "stopped" (it was idle) or "dead (<what it said>)"."""
    status = st.get("status") or "not started"
    if status not in ("stopped", "not started") and not alive(st.get("pid")):
        status = "stopped" if status in ("idle",) else f"dead ({status})"
    return status


def member_status(member: Any, statuses: dict[str, dict[str, Any]]) -> str:
    """``live_status`` of ``member`` (a ``Member``). A member on another host lives exactly as
    long as its lead's connection and its pid is the node's, so its lead's pid is checked."""
    from nyzhi.team_files.names import LEAD

    st = statuses.get(member.name, {})
    if member.node:
        st = {**st, "pid": statuses.get(LEAD, {}).get("pid")}
    return live_status(st)


def team_status(name: str, env: Any = None) -> dict[str, Any]:
    from nyzhi.core.runtime.teams.worktrees import branch_of
    from nyzhi.team_files.store import TeamStore

    store = TeamStore(env)
    config = store.load(name)
    statuses = store.statuses(name)
    members = []
    for m in config.members:
        st = statuses.get(m.name, {})
        status = member_status(m, statuses)
        pid = st.get("pid")
        members.append({
            "name": m.name, "role": "lead" if m.agent_type == "leader" else m.role,
            "model": m.model or config.default_model, "status": status, "pid": pid,
            "unread": store.inbox(name, m.name).unread_count(),
            "restarts": st.get("restarts", 0), "worktree": m.worktree, "node": m.node,
            # the branch a --worktrees member's work is on (on its node when it has one:
            # left there if the lead died; nyz team merge fetches it)
            "branch": branch_of(name, m.name) if m.worktree else None,
        })
    tasks = [{"id": t.id, "subject": t.subject, "status": str(t.status), "owner": t.owner,
              "blocked_by": list(t.blocked_by)} for t in store.board(name).list()]
    return {"team": name, "mode": config.teammate_mode, "cwd": config.cwd,
            "detach": config.detach, "members": members, "tasks": tasks}


def summary_lines(data: dict[str, Any]) -> list[str]:
    """A short text form of ``team_status``: one line a member, one a task."""
    lines = [f"team {data['team']} ({data['mode']})"]
    lines += [f"  {m['name']:<12} {m['status']:<12} unread {m['unread']}"
              for m in data["members"]]
    lines += [f"  #{t['id']} {t['status']:<11} {t['owner'] or '-':<10} {t['subject']}"
              for t in data["tasks"]]
    return lines
