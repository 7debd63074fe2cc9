"""One live session as every front end attached to it sees it: a runtime, the numbered log of
its events, the live agent tree, what waits for an answer, and the viewers watching it.

It is the hub of both the web page (``nyz serve``, over WebSockets) and the live socket
(``nyzhi.core.protocol.live_socket``: ``nyz attach`` to a ``nyz run``, a console, a served
session), so there is one hub, one wire format (``wire``) and one rule for approvals (the
first answer wins; every viewer is told it was answered).

The pump is the runtime's one subscriber for the viewers: it numbers each event (already
redacted by the bus), keeps it for replay, and offers it to every viewer without waiting. A
viewer whose bounded queue is full is dropped, never waited for: a viewer that stops reading
must not stall the agents (the bus would otherwise hold every publisher on its buffer). The
runtime lives as long as its front end: viewers come and go.
"""

from __future__ import annotations

import array
import collections
import contextlib
import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import trio

from nyzhi.core.events import redact_event
from nyzhi.core.protocol import (
    ApprovalAnswer,
    ScreenlessHost,
    Session,
    describe_error,
    ops,
    status_line,
)
from nyzhi.core.protocol import events as ev
from nyzhi.core.protocol import wire as p
from nyzhi.core.protocol.agents import AgentTreeView
from nyzhi.core.protocol.commands import ERROR, NOTICE, available, dispatch

log = logging.getLogger(__name__)

# Events kept in memory for replay; older ones are dropped (``State.first_seq`` says so).
# Bounded by count and by size: the count alone let a long session's history (encoded text
# deltas, ~130 bytes each) grow toward tens of MB, which is the steady growth issue 55 saw
# under load (43.5 -> 55.9 MB over 98 turns): kept history by design, not a leak.
DEFAULT_KEEP = 200_000
DEFAULT_KEEP_BYTES = 16 * 1024 * 1024
# A finished run of deltas (consecutive in the log, one kind, one agent, one tool call) is
# kept as one event holding their joined text, numbered as the run's last: a viewer applies
# deltas by appending, so replaying the one is replaying the many. Each delta's end offset is
# kept (4 bytes each), so a viewer that resumes inside the run gets only the rest of it.
CLAIMED_KEEP = 1024  # answered request ids remembered, to refuse a second answer to one
_RUNS = {ev.TextDelta.type, ev.ThinkingDelta.type, ev.ToolOutputDelta.type}


class Viewer:
    """One connection's outgoing queue. ``offer`` never waits: a full queue drops it.
    ``host_class``: the ``CommandHost`` its slash commands run against when it is not the
    hub's own (``nyz attach`` on a ``nyz serve`` session is not a page: its help and its
    leave hint are the socket's)."""

    def __init__(self, queue_size: int, host_class: type[LiveHost] | None = None) -> None:
        self.host_class = host_class
        self.send, self.receive = trio.open_memory_channel[str](queue_size)
        self.cancel_scope = trio.CancelScope()
        self.dropped = False

    def offer(self, text: str) -> bool:
        if self.dropped:
            return False
        try:
            self.send.send_nowait(text)
        except trio.WouldBlock:
            self.drop()
            return False
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self.dropped = True
            return False
        return True

    def drop(self) -> None:
        """Too slow or gone: end its connection (its tasks see the cancel)."""
        self.dropped = True
        self.send.close()
        self.cancel_scope.cancel()


class LiveSession:
    """The hub of one live session (see the module docstring); ``host_class`` is the
    ``CommandHost`` a viewer's slash commands run against."""

    host_class: type[LiveHost]  # set below, once LiveHost is defined

    def __init__(self, rt: Any, nursery: trio.Nursery, keep: int = DEFAULT_KEEP,
                 keep_bytes: int = DEFAULT_KEEP_BYTES) -> None:
        self.rt = rt
        self.nursery = nursery
        self.redactor = Session(rt).redactor  # the one every event was redacted with
        self.log: collections.deque[tuple[int, str]] = collections.deque()
        self.keep, self.keep_bytes, self.log_bytes = keep, keep_bytes, 0
        # a kept coalesced run, by its last number: its first number and its deltas' ends
        self.runs: dict[int, tuple[int, array.array[int]]] = {}
        # the run of deltas at the log's end, not yet coalesced: its key, data and texts
        self._run_key: tuple[str, str, str] | None = None
        self._run: list[tuple[int, str]] = []
        self._run_data: dict[str, Any] = {}
        self.seq = 0
        self.busy = False
        self.tree = AgentTreeView()  # the one view model, as the console's (state.agents)
        self.pending: dict[str, dict[str, Any]] = {}
        # the requests answered through this hub, newest last (bounded): the first answer
        # wins against these, not against ``pending``, which may never have seen a request
        # (one asked before the first viewer whose event the bounded backlog dropped)
        self.claimed: collections.deque[str] = collections.deque(maxlen=CLAIMED_KEEP)
        self.viewers: set[Viewer] = set()
        self.cwd = Path(rt.session_start.cwd or ".")
        self.team: Any = None  # the web's TeamView with ``nyz serve --team``
        # where a notice about a viewer goes: the log for ``nyz serve``; the console's notice
        # line for ``/web`` (nothing may write over the console's screen)
        self.say: Callable[[str], None] = log.warning
        # told the id of each approval or question a viewer answered first: the front end
        # that runs the session stops asking it (the console's dialog, the line chat's prompt)
        self.answered: Callable[[str], None] = lambda _request_id: None

    @property
    def session_id(self) -> str:
        return self.rt.session_id

    # ---- events in -------------------------------------------------------------------

    async def pump(self, events: trio.MemoryReceiveChannel[ev.Event]) -> None:
        async for event in events:
            self.record(event)

    def record(self, event: ev.AnyEvent) -> None:
        data = ev.to_json(event)
        self.seq += 1
        self._track(event, data)
        text = p.encode(p.EventMessage(self.seq, data))
        key = ((event.type, event.agent, getattr(event, "call_id", ""))
               if event.type in _RUNS and isinstance(data.get("text"), str) else None)
        if key != self._run_key or key is None:
            self._coalesce()
            self._run_key, self._run_data = key, data
        if key is not None:
            self._run.append((self.seq, data["text"]))
        self.log.append((self.seq, text))
        self.log_bytes += len(text)
        self._trim()
        for viewer in list(self.viewers):
            if not viewer.offer(text):
                self.viewers.discard(viewer)
                self.say("nyz serve: dropped a viewer that stopped reading")

    def _trim(self) -> None:
        while len(self.log) > 1 and (len(self.log) > self.keep or self.log_bytes > self.keep_bytes):
            seq, text = self.log.popleft()
            self.log_bytes -= len(text)
            run = self.runs.pop(seq, None)
            if run is not None:
                self.log_bytes -= 4 * len(run[1])

    def _coalesce(self) -> None:
        """The run of deltas at the log's end is finished: keep it as one event."""
        kept = [(seq, piece) for seq, piece in self._run if seq >= self.log[0][0]]
        base = self._run_data
        self._run_key, self._run, self._run_data = None, [], {}
        if len(kept) < 2:
            return
        first, last = kept[0][0], kept[-1][0]
        ends, at = array.array("I"), 0
        for _, piece in kept:
            at += len(piece)
            ends.append(at)
        for _ in kept:
            self.log_bytes -= len(self.log.pop()[1])
        data = {**base, "text": "".join(piece for _, piece in kept)}
        text = p.encode(p.EventMessage(last, data))
        self.log.append((last, text))
        self.runs[last] = (first, ends)
        self.log_bytes += len(text) + 4 * len(ends)
        self._trim()

    def _track(self, event: ev.AnyEvent, data: dict[str, Any]) -> None:
        """The tree, the pending answers and the busy flag, from the event stream alone."""
        path = event.agent
        self.tree.apply(event)
        if isinstance(event, ev.TurnStart | ev.TurnComplete):
            running = isinstance(event, ev.TurnStart)
            if path == ev.MAIN_AGENT:
                self.busy = running
            if not running:
                for rid, ask in list(self.pending.items()):
                    if ask.get("agent") == path:
                        del self.pending[rid]
        elif isinstance(event, ev.ApprovalRequest | ev.UserQuestion):
            self.pending[event.request_id] = data
        elif isinstance(event, ev.ToolDone):  # an approval its call no longer waits for
            for rid, ask in list(self.pending.items()):
                if ask.get("call_id") == event.call_id:
                    del self.pending[rid]

    # ---- viewers ---------------------------------------------------------------------

    def first_kept(self) -> int:
        """The number of the oldest event the kept log still stands for."""
        if not self.log:
            return self.seq + 1
        seq = self.log[0][0]
        run = self.runs.get(seq)
        return run[0] if run is not None else seq

    def backlog(self, since: int) -> list[str]:
        """Every kept event after ``since``; a coalesced run ``since`` falls inside is sent
        as its rest only (what the viewer has not had), numbered as the run's last."""
        out = []
        for seq, text in self.log:
            if seq <= since:
                continue
            run = self.runs.get(seq)
            if run is not None and run[0] <= since:
                first, ends = run
                message = json.loads(text)
                event = message["event"]
                event["text"] = event["text"][ends[since - first]:]
                text = p.encode(p.EventMessage(seq, event))
            out.append(text)
        return out

    def state(self) -> p.State:
        first = self.first_kept()
        return p.State(
            session_id=self.session_id, seq=self.seq, first_seq=first, busy=self.busy,
            status=self.redactor.redact(self.status_text(usage=False)), provider=self.rt.provider_name,
            model=self.rt.model, cwd=str(self.cwd),
            agents=tuple(p.AgentNode(r.path, r.status, r.detail, r.step, r.tokens, r.cost_usd)
                         for r in self.tree.rows.values()),
            pending=tuple(self.redactor.redact_value(dict(v)) for v in self.pending.values()))

    @contextlib.contextmanager
    def attach(self, viewer: Viewer, since: int) -> Iterator[tuple[p.State, list[str]]]:
        """Register ``viewer`` for live events and give it, as of the same instant, the
        state and every kept event after ``since`` (so nothing is missed or sent twice)."""
        backlog = self.backlog(since)
        self.viewers.add(viewer)
        try:
            yield self.state(), backlog
        finally:
            self.viewers.discard(viewer)

    def broadcast(self, message: p.Message) -> None:
        text = p.encode(message)
        for viewer in list(self.viewers):
            if not viewer.offer(text):
                self.viewers.discard(viewer)

    def commands(self) -> list[dict[str, str]]:
        table = available(self.host_class.features)
        return [{"name": f"/{name}", "summary": cmd.summary} for name, cmd in sorted(table.items())]

    # ---- client messages -------------------------------------------------------------

    async def handle(self, viewer: Viewer, message: p.Message) -> None:
        """Serve one client message; a failure is told to that client in one line."""
        try:
            await self._handle(viewer, message)
        except Exception as exc:  # one bad request must not end the connection or the run
            log.debug("live request failed", exc_info=exc)
            self.tell(viewer, p.ErrorMessage(f"{message.type}: {describe_error(exc)}"))

    def tell(self, viewer: Viewer, message: p.Message) -> None:
        """Send one viewer a message the runtime did not already redact."""
        if isinstance(message, p.ErrorMessage):
            message = p.ErrorMessage(self.redactor.redact(message.message))
        elif isinstance(message, p.Output):
            message = p.Output(message.kind, self.redactor.redact(message.text))
        viewer.offer(p.encode(message))

    async def _handle(self, viewer: Viewer, message: p.Message) -> None:
        """One client message as the session protocol's op (``nyzhi.core.protocol``)."""
        session = Session(self.rt, self.host(viewer))
        if isinstance(message, p.SendMessage):
            text = message.text.strip()
            if not text:
                raise p.ProtocolError("the message is empty")
            if message.agent == ev.MAIN_AGENT:
                if not self.start_turn(self.rt.knowledge.expand(text)):
                    raise p.ProtocolError("a turn is running; cancel it first")
            elif self.team is not None and self.team.owns(message.agent):
                sent = await self.team.send(message.agent, text)
                self.record(redact_event(self.redactor, sent))
            else:
                await session.submit(ops.MessageAgent(message.agent, text))
        elif isinstance(message, p.Cancel):
            if self.team is not None and self.team.owns(message.agent):
                raise p.ProtocolError(f"{message.agent} runs under its own lead; `nyz team "
                                      f"stop {self.team.team}` stops the team")
            scope = "subtree" if message.scope == "subtree" else "turn"
            await session.submit(ops.Interrupt(message.agent, scope))
        elif isinstance(message, p.KillShell):
            table = self.rt.tooling.context.shells
            shell = table.shells.get(message.id) if table is not None else None
            if shell is None:
                raise p.ProtocolError(f"unknown background shell {message.id!r}")
            if shell.kill_now is not None:
                await shell.kill_now()
        elif isinstance(message, p.Approve):
            answer = ApprovalAnswer.parse(message.answer)  # a typo is refused, never a deny
            self._claim(message.request_id)
            await session.submit(ops.Approve(message.request_id, answer.value))
        elif isinstance(message, p.Answer):
            self._claim(message.request_id)
            await session.submit(ops.Answer(message.request_id, message.text))
        elif isinstance(message, p.Command):
            line = message.line.strip()
            if not line.startswith("/"):
                raise p.ProtocolError("a command starts with /")
            # in a task: a command may wait for what this same viewer sends next (the
            # approval /init-deep's commands need), and its messages are read one by one
            self.nursery.start_soon(self._command, viewer, line)
        elif isinstance(message, p.SetTrust | p.SetPlanMode):
            op = (ops.SetTrust(message.mode) if isinstance(message, p.SetTrust)
                  else ops.SetPlanMode(message.on))
            applied = session.apply(op)
            self.tell(viewer, p.Output(NOTICE, applied.notice))
            if applied.follow_up and not self.start_turn(applied.follow_up):
                self.tell(viewer, p.Output(ERROR, "a turn is running: the plan was not sent"))
        else:
            raise p.ProtocolError(f"{message.type} is only the first message")

    def host(self, viewer: Viewer) -> LiveHost:
        """The ``CommandHost`` of ``viewer``: its own kind's, else this hub's."""
        return (viewer.host_class or self.host_class)(self, viewer)

    async def _command(self, viewer: Viewer, line: str) -> None:
        try:
            await dispatch(self.host(viewer), line)
        except Exception as exc:  # one failing command must not end the connection or run
            log.debug("live command failed", exc_info=exc)
            self.tell(viewer, p.ErrorMessage(f"command: {describe_error(exc)}"))

    def claim(self, request_id: str) -> bool:
        """The first answer wins: True for it, and every viewer is told it was answered;
        False for a later one. The session's own front end (the console's dialog) claims
        here too before it answers, so its viewers' dialogs close; a request this hub never
        saw is still its to answer (False would leave the agent waiting for ever)."""
        if request_id in self.claimed:
            return False
        self.claimed.append(request_id)
        self.pending.pop(request_id, None)
        self.broadcast(p.Resolved(request_id))
        return True

    def _claim(self, request_id: str) -> None:
        """A viewer's answer: refused unless it answers a request the viewer was shown and
        is the first; the front end that runs the session is told (``answered``) so it
        stops asking."""
        if request_id not in self.pending or not self.claim(request_id):
            raise p.ProtocolError(f"no pending request {request_id!r} (already answered?)")
        self.answered(request_id)

    def start_turn(self, text: str) -> bool:
        if self.busy:
            return False
        self.busy = True  # at once: a second message must see it
        self.nursery.start_soon(self._run_turn, text)
        return True

    async def _run_turn(self, text: str) -> None:
        try:
            handle = await self.rt.submit(text)
            await handle.wait()
        except Exception as exc:
            log.debug("turn failed", exc_info=exc)
            self.broadcast(p.ErrorMessage(self.redactor.redact(describe_error(exc))))
        finally:
            self.busy = False

    def status_text(self, *, usage: bool = True) -> str:
        """The one status line (``nyzhi.core.protocol.status_line``); without ``usage`` for
        the page, which counts tokens from the ``usage`` events itself."""
        return status_line(Session(self.rt).status(), usage=usage)


class LiveHost(ScreenlessHost):
    """A viewer as the slash commands' ``CommandHost``: what a command shows goes to the
    viewer that ran it; a prompt it sends starts a turn every viewer sees. A viewer has no
    screen to clear or runtime to reopen in place, so the commands needing those features are
    not offered. Front ends say their own keys (``nyzhi.web.session.WebHost``)."""

    features: frozenset[str] = frozenset()
    cancel_hint = "/cancel"
    keys_help = "Enter sends; approvals: approve, always (this session), deny."
    leave_hint = "detach to leave; the session goes on where it was started"

    def __init__(self, session: LiveSession, viewer: Viewer) -> None:
        self.session = session
        self.viewer = viewer
        self.rt = session.rt
        self.cwd = session.cwd
        self.busy = session.busy

    def show(self, kind: str, text: str) -> None:
        self.session.tell(self.viewer, p.Output(kind, text))


    def send_main(self, text: str) -> None:
        if not self.session.start_turn(text):
            self.show(ERROR, "a turn is running; cancel it first")

    def cancel_turn(self) -> None:
        self.session.nursery.start_soon(self.rt.cancel)

    def quit(self) -> None:
        self.show(NOTICE, self.leave_hint)



LiveSession.host_class = LiveHost
