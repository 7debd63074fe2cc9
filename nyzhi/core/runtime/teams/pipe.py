"""An attached member's stdin: the lead's control lines, store replies and pokes.

The pipe of a process teammate carries, lead → member, one JSON object per line with an
``op``: ``approval``, ``answer`` and ``cancel`` (applied to the member's runtime),
``store_reply`` (the answer to a ``StoreCall`` of a member with ``--remote-store``),
``poke`` (its inbox changed) and ``model_event``/``model_end``/``model_error`` (a model call
the lead makes for it, ``model_proxy``). Member → lead, its stdout carries its events and,
with ``--remote-store``, its ``StoreCall`` lines (``nyzhi.team_files.remote``) and its
``model_call``/``model_cancel`` lines.

``LeadPipe.call`` is what a ``RemoteTeamStore`` calls from a worker thread: it writes the
request from the trio thread (so it never interleaves with an event line) and blocks until
the reader hands it the reply. End of file on stdin means the lead has gone: every waiting
call and every later one fails with ``TeamError``, and the control channel closes, which
stops the member.
"""

from __future__ import annotations

import json
import math
import os
import sys
from typing import Any, TextIO

import trio

from nyzhi import convert
from nyzhi.team_files.errors import TeamError
from nyzhi.team_files.remote import ERRORS, StoreCall, StoreReply
from nyzhi.team_files.watch import PokeWatcher

LEAD_GONE = "the lead has gone (its pipe is closed)"


class _Slot:
    def __init__(self) -> None:
        self.done = trio.Event()
        self.reply: StoreReply | None = None


class LeadPipe:
    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self.token = trio.lowlevel.current_trio_token()
        self.pending: dict[int, _Slot] = {}
        self.next_id = 0
        self.closed = False
        self.watchers: list[PokeWatcher] = []
        self.control_send, self.control = trio.open_memory_channel[dict[str, Any]](64)
        # proxied model calls (``model_proxy``): id -> where their ``model_*`` lines go
        self.model_calls: dict[int, trio.MemorySendChannel[dict[str, Any]]] = {}
        self.next_model_id = 0

    def write(self, data: dict[str, Any]) -> None:
        """One line to the lead, from the trio thread (so never inside another line)."""
        self.out.write(json.dumps(data, ensure_ascii=False) + "\n")
        self.out.flush()

    def open_model_call(self) -> tuple[int, trio.MemoryReceiveChannel[dict[str, Any]]]:
        self.next_model_id += 1
        # unbounded: the reader must never wait on one call (a response is finite)
        send, receive = trio.open_memory_channel[dict[str, Any]](math.inf)
        if self.closed:
            send.close()
        else:
            self.model_calls[self.next_model_id] = send
        return self.next_model_id, receive

    def close_model_call(self, call_id: int) -> None:
        send = self.model_calls.pop(call_id, None)
        if send is not None:
            send.close()

    # ---- the store's side (worker threads) ---------------------------------------------

    def call(self, name: str, args: dict[str, Any]) -> Any:
        """Blocking, from a worker thread: the lead's answer to store call ``name``."""
        return trio.from_thread.run(self._call, name, args, trio_token=self.token)

    async def _call(self, name: str, args: dict[str, Any]) -> Any:
        if self.closed:
            raise TeamError(LEAD_GONE)
        self.next_id += 1
        slot = self.pending[self.next_id] = _Slot()
        self.write(convert.unstructure(StoreCall(self.next_id, name, args)))
        await slot.done.wait()
        reply = slot.reply
        if reply is None:
            raise TeamError(LEAD_GONE)
        if reply.error is not None:
            raise ERRORS.get(reply.error_type or "", TeamError)(reply.error)
        return reply.result

    def watcher(self, fallback: float) -> PokeWatcher:
        watcher = PokeWatcher(fallback)
        self.watchers.append(watcher)
        return watcher

    # ---- the reader ----------------------------------------------------------------------

    async def read(self, fd: int | None = None) -> None:
        """Read stdin until it ends: replies and pokes handled here, the rest queued on
        ``control``."""
        stream = trio.lowlevel.FdStream(os.dup(sys.stdin.fileno() if fd is None else fd))
        buf = b""
        try:
            async with stream:
                while True:
                    try:
                        chunk = await stream.receive_some(65536)
                    except (trio.BrokenResourceError, OSError):
                        chunk = b""
                    if not chunk:
                        return
                    buf += chunk
                    *lines, buf = buf.split(b"\n")
                    for line in lines:
                        await self._line(line)
        finally:
            self._close()

    async def _line(self, line: bytes) -> None:
        try:
            op = json.loads(line)
        except ValueError:
            return
        if not isinstance(op, dict):
            return
        if op.get("op") == "store_reply":
            try:
                reply = convert.structure(op, StoreReply, "store_reply", TeamError)
            except TeamError:
                return
            slot = self.pending.pop(reply.id, None)
            if slot is not None:
                slot.reply = reply
                slot.done.set()
        elif op.get("op") == "poke":
            for watcher in self.watchers:
                watcher.poke()
        elif op.get("op") in ("model_event", "model_end", "model_error"):
            send = self.model_calls.get(op.get("id"))  # type: ignore[arg-type]
            if send is not None:
                send.send_nowait(op)
        else:
            await self.control_send.send(op)

    def _close(self) -> None:
        self.closed = True
        for slot in self.pending.values():
            slot.done.set()
        self.pending.clear()
        for send in self.model_calls.values():
            send.close()
        self.model_calls.clear()
        self.control_send.close()
