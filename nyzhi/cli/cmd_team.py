"""``nyz team``: start, watch, message, stop, merge and delete teams.

A team is a lead (the agent of the ``nyz team start`` session) and named teammates, kept in
``$XDG_DATA_HOME/nyzhi/teams/<team>`` with its task board in ``…/tasks/<team>``
(``nyzhi.team_files``); ``nyzhi.core.runtime.teams`` runs them. ``nyz teams …`` is accepted as an alias,
as the original spelled it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from nyzhi.config.modes import TeammateMode


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("team", aliases=["teams"],
                       help="run a team of agents: start, status, send, stop, list, delete, merge")
    tsub = p.add_subparsers(dest="team_command", metavar="ACTION")
    p.set_defaults(handler=lambda _a: (p.print_help(), 2)[1])
    _register_start(tsub)

    st = tsub.add_parser("status", help="members, their status and pid; tasks; unread counts")
    st.add_argument("name")
    st.add_argument("--json", action="store_true", help="one JSON object")
    st.set_defaults(handler=status_command)

    se = tsub.add_parser("send", help="put a message in a member's inbox (from 'user')")
    se.add_argument("name")
    se.add_argument("member", help="a member name, or all")
    se.add_argument("text", nargs="+")
    se.set_defaults(handler=send_command)

    sp = tsub.add_parser("stop", help="stop the team's running processes (lead and teammates)")
    sp.add_argument("name")
    sp.set_defaults(handler=stop_command)

    ls = tsub.add_parser("list", help="the teams")
    ls.set_defaults(handler=list_command)

    d = tsub.add_parser("delete", help="delete a team, its task board and its worktrees")
    d.add_argument("name")
    d.set_defaults(handler=delete_command)

    mg = tsub.add_parser("merge", help="merge a member's worktree branch into the current branch")
    mg.add_argument("name")
    mg.add_argument("member")
    mg.set_defaults(handler=merge_command)

    mb = tsub.add_parser("member", help="(internal) run one teammate; started by its lead")
    mb.add_argument("name")
    mb.add_argument("member")
    mb.add_argument("--attached", action="store_true", help="stop when stdin ends")
    mb.add_argument("--interactive", action="store_true", help="approvals go to the lead")
    mb.add_argument("--remote-store", action="store_true",
                    help="the team's store is the lead's, served down the pipe (another host)")
    mb.add_argument("--proxy-model-calls", metavar="MODEL",
                    help="the lead makes this member's model calls (with --remote-store)")
    mb.set_defaults(handler=member_command)


def _register_start(tsub: argparse._SubParsersAction) -> None:
    """``nyz team start``: the team's own options, then every flag ``nyz`` itself takes (the
    lead and its teammates run as ``nyz`` would)."""
    from nyzhi.cli.main import add_global_flags

    s = tsub.add_parser("start", help="start a team: the lead in this terminal, teammates as "
                                      "agents or processes")
    s.add_argument("name", help="the team's name")
    s.add_argument("--members", metavar="SPEC",
                   help="member:role[:model][@node], comma separated "
                        "(alice:worker,bob:reviewer@build1)")
    s.add_argument("--task", metavar="TEXT", help="the lead's first prompt")
    s.add_argument("--detach", action="store_true",
                   help="teammates outlive the lead (process mode; nyz team stop ends them)")
    s.add_argument("--headless", action="store_true",
                   help="no chat: exit 0 when the lead is done and every teammate is idle")
    s.add_argument("--output-format", choices=("text", "json", "stream-json"), default=None,
                   help="with --headless: text (default), json or stream-json")
    s.add_argument("--worktrees", action="store_true",
                   help="each teammate works in its own git worktree (.nyzhi/worktrees/<member>)")
    s.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    add_global_flags(s, suppress=True)  # -p, -m, -y, …, --teammate-mode in-process|process
    s.set_defaults(handler=start_command)


def _fail(message: str) -> int:
    print(f"nyz team: {message}", file=sys.stderr)
    return 1


# ---- start ---------------------------------------------------------------------------------


def parse_members(spec: str | None) -> list[Any]:
    """``alice:worker,bob:reviewer:gpt-5@build1`` → members (role default ``default``; after
    ``@``, the ``[[nodes]]`` entry the member runs on)."""
    from nyzhi.team_files.names import LEAD, TeamError, check_name
    from nyzhi.team_files.store import Member

    members = []
    for item in (spec or "").split(","):
        item = item.strip()
        if not item:
            continue
        head, at, node = item.rpartition("@")
        if at:
            item, node = head, node.strip()
            if not node:
                raise TeamError(f"--members: '{head}@' names no node (member:role@node)")
        else:
            node = ""
        parts = item.split(":", 2)
        name = check_name("member", parts[0].strip())
        if name == LEAD:
            raise TeamError("'lead' is the agent that starts the team; name the teammates")
        role = parts[1].strip() if len(parts) > 1 and parts[1].strip() else "default"
        model = parts[2].strip() if len(parts) > 2 and parts[2].strip() else None
        members.append(Member(name=name, role=role, model=model, node=node or None))
    if len({m.name for m in members}) != len(members):
        raise TeamError(f"--members names a member twice: {spec}")
    return members


def prepare_team(args: argparse.Namespace, cwd: Path) -> Any:
    """Create or update the team's config from the flags; make worktrees if asked."""
    import datetime as dt

    import attrs

    from nyzhi.team_files.names import LEAD, check_name
    from nyzhi.team_files.store import Member, TeamConfig, TeamStore

    name = check_name("team", args.name)
    store = TeamStore()
    members = parse_members(args.members)
    mode = getattr(args, "teammate_mode", None)
    trust = getattr(args, "trust", None)
    if not store.exists(name):
        store.create(TeamConfig(
            name=name, created_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            members=[Member(LEAD, agent_type="leader"), *members],
            teammate_mode=mode or TeammateMode.IN_PROCESS, cwd=str(cwd), worktrees=args.worktrees,
            detach=args.detach, trust=trust,
        ))
    else:
        def change(config: Any) -> None:
            for m in members:
                old = config.member(m.name)
                if old is None:
                    config.members.append(m)
                else:
                    config.members[config.members.index(old)] = attrs.evolve(
                        old, role=m.role, model=m.model or old.model, node=m.node or old.node)
            if mode:
                config.teammate_mode = mode
            config.detach = args.detach
            config.worktrees = config.worktrees or args.worktrees
            config.cwd = str(cwd)
            if trust:
                config.trust = trust

        store.update(name, change)
    config = store.load(name)
    if config.detach and (mode or config.teammate_mode) != TeammateMode.PROCESS:
        from nyzhi.team_files.names import TeamError

        raise TeamError("--detach needs --teammate-mode process (in-process teammates live "
                        "and die with the lead)")
    nodes = check_nodes(config, mode or config.teammate_mode, cwd)
    if config.worktrees:
        config = make_worktrees(store, config, cwd, nodes)
    return config


def node_executors(cwd: Path) -> dict[str, Any]:
    """The ``[[nodes]]`` of the config at ``cwd``, as SSH executors (the runtime's own)."""
    from nyzhi.config.errors import ConfigError
    from nyzhi.config.project_trust import load_trusted
    from nyzhi.core.runtime.assembly import build_nodes
    from nyzhi.team_files.names import TeamError
    from nyzhi.tools.env_policy import EnvPolicy

    try:
        config = load_trusted(cwd)[0].config  # a project's unapproved [[nodes]] left out
    except ConfigError as exc:
        raise TeamError(str(exc)) from None
    return build_nodes(config, EnvPolicy.from_config(config))


def check_nodes(config: Any, mode: str, cwd: Path) -> dict[str, Any]:
    """Members that name a node: the node exists, and the team runs processes, attached."""
    from nyzhi.core.runtime.teams.control import node_missing
    from nyzhi.team_files.names import TeamError

    remote = [m for m in config.members if m.node]
    if not remote:
        return {}
    names = ", ".join(m.name for m in remote)
    if mode != TeammateMode.PROCESS:
        raise TeamError(f"{names} run on other hosts: that needs --teammate-mode process")
    if config.detach:
        raise TeamError(f"{names} run on other hosts: --detach is local only (a member on "
                        "another host is served its team's store by the lead)")
    nodes = node_executors(cwd)
    for m in remote:
        if m.node not in nodes:
            raise TeamError(node_missing(m.name, m.node, nodes))
    return nodes


def make_worktrees(store: Any, config: Any, cwd: Path, nodes: dict[str, Any] | None = None) -> Any:
    import attrs

    from nyzhi.core.runtime.teams import worktrees
    from nyzhi.team_files.names import LEAD

    for m in config.members:
        if m.name == LEAD:
            continue
        if m.node:  # a clone on its node (made over SSH), not a worktree here
            path = worktrees.create_remote(cwd, config.name, m.name, (nodes or {})[m.node])
            if m.worktree != path:
                store.add_member(config.name, attrs.evolve(m, worktree=path))
                fire_hook(cwd, "worktree_create", {
                    "team": config.name, "member": m.name, "path": path, "node": m.node,
                    "branch": worktrees.branch_of(config.name, m.name)})
            continue
        path = worktrees.create(cwd, config.name, m.name)
        if m.worktree != str(path):
            store.add_member(config.name, attrs.evolve(m, worktree=str(path)))
            fire_hook(cwd, "worktree_create", {"team": config.name, "member": m.name,
                                               "path": str(path),
                                               "branch": worktrees.branch_of(config.name, m.name)})
    return store.load(config.name)


def fire_hook(cwd: Path, event: str, payload: dict[str, Any]) -> None:
    """Fire one hook event outside a runtime (worktrees made or removed by ``nyz team``)."""
    import trio

    from nyzhi.config.project_trust import load_trusted
    from nyzhi.core.runtime.assembly import build_hooks

    loaded, verdict = load_trusted(cwd)  # a project's unapproved hooks do not run
    hooks, _notes = build_hooks(loaded.config, loaded.workspace, cwd,
                                claude=verdict.claude_hooks)
    if hooks.matching(event, payload):
        trio.run(hooks.fire, event, payload)


def start_command(args: argparse.Namespace) -> int:
    from nyzhi.team_files.lead_lease import take_lead_lease
    from nyzhi.team_files.names import TeamError, check_name
    from nyzhi.team_files.store import TeamStore

    cwd = Path.cwd()
    try:
        # first: a second start of a running team refuses here, before it touches anything
        take_lead_lease(args.name, TeamStore().team_dir(check_name("team", args.name)))
        config = prepare_team(args, cwd)
    except TeamError as exc:
        return _fail(str(exc))
    args.team_name = config.name
    args.teammate_mode = getattr(args, "teammate_mode", None) or config.teammate_mode
    if args.headless:
        from nyzhi.headless.run import run_and_exit
        from nyzhi.headless.team import run_team_headless

        return run_and_exit(run_team_headless, args, args.task or "",
                            args.output_format or "text")
    if args.task:
        args.first_prompt = args.task
    from nyzhi.cli.cmd_chat import run_chat

    return run_chat(args)


# ---- status, send, list --------------------------------------------------------------------


def status_command(args: argparse.Namespace) -> int:
    from nyzhi.core.runtime.teams.report import team_status
    from nyzhi.team_files.names import TeamError

    try:
        data = team_status(args.name)
    except TeamError as exc:
        return _fail(str(exc))
    if args.json:
        print(json.dumps(data, ensure_ascii=False, indent=2))
        return 0
    out = sys.stdout
    out.write(f"team {data['team']} ({data['mode']}) in {data['cwd']}\n\n")
    rows = [("MEMBER", "ROLE", "STATUS", "PID", "UNREAD")] + [
        (m["name"], m["role"], m["status"] + (f" ({m['restarts']} restarts)"
                                              if m["restarts"] else ""),
         str(m["pid"] or "-"), str(m["unread"])) for m in data["members"]]
    _table(out, rows)
    out.write("\n")
    remote = [m for m in data["members"] if m.get("node") and m.get("branch")]
    if remote:
        rows = [("MEMBER", "NODE", "CHECKOUT", "BRANCH")] + [
            (m["name"], m["node"], m["worktree"], m["branch"]) for m in remote]
        _table(out, rows)
        out.write("(branches on other hosts: nyz team merge NAME MEMBER fetches one)\n\n")
    if not data["tasks"]:
        out.write("no tasks\n")
        return 0
    rows = [("TASK", "STATUS", "OWNER", "SUBJECT")] + [
        (f"#{t['id']}", t["status"], t["owner"] or "-",
         t["subject"] + (f" (blocked by {', '.join('#' + b for b in t['blocked_by'])})"
                         if t["blocked_by"] else "")) for t in data["tasks"]]
    _table(out, rows)
    return 0


def _table(out: Any, rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        out.write("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() + "\n")


def send_command(args: argparse.Namespace) -> int:
    from nyzhi.team_files.inbox import deliver
    from nyzhi.team_files.names import TeamError
    from nyzhi.team_files.store import TeamStore

    try:
        sent = deliver(TeamStore(), args.name, "user", args.member, " ".join(args.text))
    except TeamError as exc:
        return _fail(str(exc))
    print(f"sent to {', '.join(m.to for m in sent)}")
    return 0


def list_command(args: argparse.Namespace) -> int:
    from nyzhi.team_files.store import TeamStore

    store = TeamStore()
    names = store.list()
    if not names:
        print("no teams (nyz team start NAME --members alice:worker makes one)")
        return 0
    for name in names:
        try:
            config = store.load(name)
            others = [m.name for m in config.members if m.agent_type != "leader"]
            print(f"{name}  {config.teammate_mode}  {', '.join(others) or '(no teammates)'}")
        except Exception as exc:  # a damaged team still lists, with why
            print(f"{name}  (unreadable: {exc})")
    return 0


# ---- stop, delete, merge -------------------------------------------------------------------


def stop_team(name: str, grace: float = 10.0) -> list[str]:
    """SIGTERM every live process of the team (teammates first, then the lead), SIGKILL what
    is still there after ``grace`` seconds. Returns the members stopped."""
    import signal
    import time

    from nyzhi.core.runtime.teams.report import alive
    from nyzhi.team_files.names import LEAD
    from nyzhi.team_files.store import TeamStore

    store = TeamStore()
    config = store.load(name)  # TeamNotFound
    statuses = store.statuses(name)
    # a member on another host has the node's pid, not ours: it ends with its lead's ssh
    remote = {m.name for m in config.members if m.node}
    order = sorted((n for n in statuses if n not in remote), key=lambda n: n == LEAD)
    live = {n: statuses[n]["pid"] for n in order
            if alive(statuses[n].get("pid")) and statuses[n].get("pid") != os.getpid()}
    for pid in live.values():
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    deadline = time.monotonic() + grace
    for member, pid in live.items():
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)  # another process's exit: nothing to wait on but its pid
        if alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        store.set_status(name, member, status="stopped")
    return list(live)


def stop_command(args: argparse.Namespace) -> int:
    from nyzhi.team_files.names import TeamError

    try:
        stopped = stop_team(args.name)
    except TeamError as exc:
        return _fail(str(exc))
    print(f"stopped {', '.join(stopped)}" if stopped else f"team {args.name}: nothing running")
    return 0


def delete_command(args: argparse.Namespace) -> int:
    from nyzhi.core.runtime.teams import worktrees
    from nyzhi.team_files.names import TeamError
    from nyzhi.team_files.store import TeamStore

    store = TeamStore()
    try:
        config = store.load(args.name)
        stop_team(args.name)
        for m in config.members:
            if m.worktree and not m.node:  # a clone on a node stays there, with its branch
                cwd = Path(config.cwd or ".")
                if worktrees.remove(cwd, Path(m.worktree)):
                    fire_hook(cwd, "worktree_remove", {"team": config.name, "member": m.name,
                                                       "path": m.worktree})
        store.delete(args.name)
    except TeamError as exc:
        return _fail(str(exc))
    print(f"deleted team {args.name}")
    return 0


def merge_command(args: argparse.Namespace) -> int:
    from nyzhi.core.runtime.teams import worktrees
    from nyzhi.team_files.names import TeamError
    from nyzhi.team_files.store import TeamStore

    try:
        config = TeamStore().load(args.name)
        m = config.member(args.member)
        if m is None:
            raise TeamError(f"team {args.name} has no member {args.member!r}")
        if not m.worktree:
            raise TeamError(f"{args.member} has no worktree (start the team with --worktrees)")
        cwd = Path(config.cwd or ".")
        if m.node:
            nodes = node_executors(cwd)
            if m.node not in nodes:
                from nyzhi.core.runtime.teams.control import node_missing

                raise TeamError(node_missing(m.name, m.node, nodes))
            summary = worktrees.merge_remote(cwd, config.name, m.name, nodes[m.node], m.worktree)
        else:
            summary = worktrees.merge(cwd, config.name, m.name, Path(m.worktree))
    except TeamError as exc:
        return _fail(str(exc))
    print(summary or f"merged {worktrees.branch_of(args.name, args.member)}")
    return 0


def member_command(args: argparse.Namespace) -> int:
    import trio

    from nyzhi.headless.member import run_member
    from nyzhi.team_files.names import TeamError

    try:
        return trio.run(lambda: run_member(args.name, args.member, attached=args.attached,
                                           interactive=args.interactive,
                                           remote_store=args.remote_store,
                                           proxy_model=args.proxy_model_calls))
    except TeamError as exc:
        return _fail(str(exc))
