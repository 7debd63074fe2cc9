"""``TeammateProcess``: the lead's actor for one teammate running as its own ``nyz`` process.

The actor starts ``nyz team member <team> <member> --attached`` and owns its pipes:

* **stdout** carries the member's events as stream-json lines. Each is re-tagged from the
  member's own tree (``/agents/main…``) to its place in the lead's (``/team/<team>/<member>…``)
  and published on the lead's bus, so front ends render a process teammate exactly like an
  in-process one;
* **stdin** carries the lead's answers to the member's approval requests and questions, and
  ``cancel``. Closing it is how the lead stops the member: an attached member exits at EOF.
  So a lead that dies, even by ``kill -9``, leaves no teammate behind: the kernel closes the
  pipe.

When the process exits on its own with a failure (or is killed), the actor crashes and its
supervisor (``/team/<team>``) restarts it under the actors' restart intensity; the member
resumes its session and carries on. A member that exits 0 without being asked has finished
(``TRANSIENT``: not restarted).

A member with a ``node`` (a ``[[nodes]]`` entry) runs on that host: the actor starts
``ssh -o BatchMode=yes … <nyz_command> team member <team> <member> --attached --remote-store``
through the node's ``SshExecutor`` (``session_argv``), so the same two pipes are ssh's and
nothing above changes: a lost connection is a failed process (ssh exits 255) and is restarted
like one. The member has no team files there; its store calls arrive as ``store_call`` lines
among its events and are answered from the lead's store down its stdin
(``nyzhi.team_files.remote.serve``), and every poke of its inbox FIFO here (a message from anyone
on this host) is relayed as a ``poke`` line. The ssh client runs under the shell's environment
policy, so no provider key or secret-looking variable reaches it (or, by ``SendEnv``, the
node): a remote member uses the node's own credentials, or, with ``[team]
proxy_model_calls``, its ``model_call`` lines are run on the lead's provider
(``model_proxy``).

With ``--detach`` (``TeamConfig.detach``) the member runs in its own session with no pipes: its
events go to ``teams/<team>/logs/<member>.jsonl``, which this actor follows while the lead
lives; stopping the lead leaves it running, and ``nyz team stop`` ends it.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from typing import Any

import trio

import actors
from nyzhi.core import events as ev
from nyzhi.tools.offload import run_blocking

STOP_GRACE = 5.0
# Event types of the member's own run that mean nothing in the lead's stream.
DROPPED = frozenset({"session_start", "result"})


class TeammateDied(Exception):
    """The member's process ended with a failure; the supervisor restarts the actor."""


def retag(data: dict[str, Any], path: str) -> dict[str, Any]:
    """Move an event of the member's tree (``/agents/main/x``) to ``path`` (``…/x``)."""
    agent = str(data.get("agent") or ev.MAIN_AGENT)
    if agent == ev.MAIN_AGENT or agent.startswith(ev.MAIN_AGENT + "/"):
        data["agent"] = path + agent[len(ev.MAIN_AGENT):]
    return data


class TeammateProcess(actors.Actor):
    def __init__(self, teams: Any, team: str, member: str, path: str) -> None:
        self.teams = teams
        self.team = team
        self.member = member
        self.path = path
        self.proc: Any = None  # a BoundProcess (attached) or trio.Process (detached)
        self.stopping_now = False
        self.node: Any = None  # the SshExecutor of a member on another host
        self.model: str | None = None  # its model, when the lead makes its model calls
        self.model_calls: Any = None  # model_proxy.ModelCalls, then
        self._send_lock = trio.Lock()

    async def started(self) -> None:
        self.teams.processes[self.path] = self
        self.context.start_soon(self._run, name=f"{self.path}:process")

    def _argv(self, detach: bool, worktree: str | None = None) -> list[str]:
        if self.node is not None:
            command = (f"{self.node.nyz_command} team member {shlex.quote(self.team)} "
                       f"{shlex.quote(self.member)} --attached --remote-store")
            if self.teams.interactive:
                command += " --interactive"
            if self.model is not None:
                command += f" --proxy-model-calls {shlex.quote(self.model)}"
            return self.node.session_argv(command, worktree)
        base = self.teams.member_command or [sys.executable, "-m", "nyzhi"]
        argv = [*base, "team", "member", self.team, self.member]
        if not detach:
            argv.append("--attached")
            if self.teams.interactive:
                argv.append("--interactive")
        return argv

    async def _run(self) -> None:
        store = self.teams.store
        config = await run_blocking(store.load, self.team)
        logs = store.team_dir(self.team) / "logs"
        await run_blocking(lambda: logs.mkdir(parents=True, exist_ok=True))
        env = dict(os.environ if self.teams.env is None else self.teams.env)
        cwd = config.cwd or None
        member = config.member(self.member)
        worktree = None
        if member is not None and member.node:
            self.node = self.teams.nodes[member.node]
            env, cwd, worktree = self.node.local_env(), None, member.worktree
            if self.teams.proxy_model_calls:
                from nyzhi.core.runtime.teams.model_proxy import ModelCalls

                self.model_calls = ModelCalls()
                self.model = (member.model or config.default_model
                              or self.teams.factory.provider.model)
        if self.context.restarts:
            await run_blocking(lambda: store.set_status(
                self.team, self.member, restarts=self.context.restarts))
        err = await run_blocking(open, logs / f"{self.member}.log", "ab")
        try:
            if config.detach:
                await self._run_detached(config, env, cwd, err, logs)
            else:
                await self._run_attached(env, cwd, err, worktree)
        finally:
            err.close()

    async def _run_attached(self, env: dict[str, str], cwd: str | None, err: Any,
                            worktree: str | None = None) -> None:
        from nyzhi.spawn import open_bound_process

        # an attached teammate dies with its lead, SIGKILL included (nyzhi.spawn); a detached
        # one (below) is started to outlive it
        proc = await open_bound_process(
            self._argv(False, worktree), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=err, env=env, cwd=cwd,
        )
        self.proc = proc
        assert proc.stdout is not None
        buf = b""
        relay = trio.CancelScope()
        if self.node is not None:
            self.context.start_soon(self._relay_pokes, relay, name=f"{self.path}:pokes")
        try:
            while True:
                chunk = await proc.stdout.receive_some(65536)
                if not chunk:
                    break
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    await self._publish(line)
            code = await proc.wait()
        finally:
            relay.cancel()
            if proc.returncode is None:
                with trio.CancelScope(shield=True):
                    await self._end(proc)
        if self.stopping_now:
            return
        if code != 0:
            await self._died(f"exited with status {code}")

    async def _run_detached(self, config: Any, env: dict[str, str], cwd: str | None, err: Any,
                            logs: Any) -> None:
        events_path = logs / f"{self.member}.jsonl"
        out = await run_blocking(open, events_path, "ab")
        try:
            proc = await trio.lowlevel.open_process(
                self._argv(True), stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env,
                cwd=cwd, start_new_session=True,
            )
        finally:
            out.close()
        self.proc = proc
        offset = events_path.stat().st_size
        fh = await run_blocking(open, events_path, "rb")
        with fh:
            fh.seek(offset)
            buf = b""
            while proc.poll() is None:
                chunk = await run_blocking(fh.read, 65536)
                if not chunk:
                    await trio.sleep(0.05)  # following a file: nothing to wait on but time
                    continue
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    await self._publish(line)
        if not self.stopping_now and proc.returncode not in (0, -signal.SIGTERM):
            await self._died(f"exited with status {proc.returncode}")

    async def _died(self, why: str) -> None:
        """Crash the actor so its supervisor restarts it; the last restart it will get marks
        the member ``failed`` (a headless lead then exits 1)."""
        from nyzhi.core.runtime.teams.control import MAX_RESTARTS

        message = f"teammate {self.member} of team {self.team} {why}"
        if self.context.restarts >= MAX_RESTARTS:
            await run_blocking(lambda: self.teams.store.set_status(
                self.team, self.member, status="failed", detail=message))
            await self.teams.emit(ev.Error(agent=self.path, message=message + "; given up",
                                           kind="team"))
        raise TeammateDied(message)

    async def _relay_pokes(self, scope: trio.CancelScope) -> None:
        """A remote member's inbox FIFO is here, on the lead's host: whoever delivers to it
        pokes it, and each poke goes down the member's pipe as a ``poke`` line."""
        with scope:
            async with self.teams.store.watcher(self.team, self.member, 60.0) as watch:
                while True:
                    if await watch.wait():
                        await self.control({"op": "poke"})

    async def _serve(self, data: dict[str, Any]) -> None:
        """Answer a remote member's store call from this host's store."""
        from nyzhi import convert
        from nyzhi.team_files.errors import TeamError
        from nyzhi.team_files.remote import StoreCall, StoreReply, serve

        try:
            call = convert.structure(data, StoreCall, "store_call", TeamError)
        except TeamError:
            return  # not a call we can answer; its id is unknown
        try:
            reply = await run_blocking(serve, self.teams.store, self.team, self.member, call)
        except Exception as exc:  # the lead's disk: the member's tool gets the error
            reply = StoreReply(call.id, error=f"the lead's store: {exc}",
                               error_type="TeamError")
        await self.control(convert.unstructure(reply))

    async def _model_call(self, data: dict[str, Any]) -> None:
        """A remote member's model call, made here with the lead's provider when the team
        proxies them; refused (the member's turn fails, saying why) when it does not."""
        from nyzhi.core.runtime.teams.model_proxy import NOT_PROXIED

        call_id = data.get("id")
        if data["type"] == "model_cancel":
            if self.model_calls is not None:
                self.model_calls.cancel(call_id)
            return
        if not isinstance(call_id, int):
            return
        if self.model_calls is None:
            await self.control({"op": "model_error", "id": call_id, "kind": "ProviderError",
                                "message": NOT_PROXIED})
            return
        try:
            self.context.start_soon(self.model_calls.run, self.teams.factory.provider, call_id,
                                    data.get("request"), self.control,
                                    name=f"{self.path}:model")
        except actors.SystemClosed:
            pass

    async def _publish(self, line: bytes) -> None:
        line = line.strip()
        if not line:
            return
        try:
            data = json.loads(line)
        except ValueError:
            return  # not an event (a stray print): the log has it
        if not isinstance(data, dict):
            return
        if data.get("type") in ("model_call", "model_cancel"):
            if self.node is not None:
                await self._model_call(data)
            return
        if data.get("type") == "store_call":
            if self.node is not None:  # a local member has its own store
                # beside the reading, not in it: this loop keeps draining the member's stdout
                # while a reply waits for room in its stdin (two full pipes never wait on
                # each other); each of the member's threads waits for its reply, so its own
                # calls stay in order
                try:
                    self.context.start_soon(self._serve, data, name=f"{self.path}:store")
                except actors.SystemClosed:
                    pass  # stopping: nobody will read the reply
            return
        if data.get("type") in DROPPED:
            return
        try:
            event = ev.from_json(retag(data, self.path))
        except ev.EventDecodeError:
            return
        await self.teams.emit(event)
        if isinstance(event, ev.Usage):
            if self.teams.tree.budget_of(self.path).over():
                await self.control({"op": "cancel"})

    async def control(self, payload: dict[str, Any]) -> None:
        """Send one control line (an answer, ``cancel``) to the member's stdin."""
        proc = self.proc
        if proc is None or proc.stdin is None or proc.returncode is not None:
            return
        try:
            async with self._send_lock:  # replies, pokes and answers from several tasks
                await proc.stdin.send_all((json.dumps(payload) + "\n").encode())
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    async def _end(self, proc: Any) -> None:
        """Close stdin (the member's signal to finish), then SIGTERM, then SIGKILL."""
        if proc.stdin is not None:
            try:
                await proc.stdin.aclose()
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                pass
        for sig, wait in ((None, STOP_GRACE), (signal.SIGTERM, STOP_GRACE), (signal.SIGKILL, 5)):
            if sig is not None and proc.returncode is None:
                proc.send_signal(sig)
            with trio.move_on_after(wait):
                await proc.wait()
            if proc.returncode is not None:
                return

    async def stopping(self) -> None:
        self.stopping_now = True
        self.teams.processes.pop(self.path, None)
        proc = self.proc
        if proc is None or proc.returncode is not None:
            return
        if proc.stdin is None:  # detached: it outlives the lead
            return
        with trio.CancelScope(shield=True):
            await self._end(proc)
