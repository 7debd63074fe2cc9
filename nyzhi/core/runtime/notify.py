"""Notifications: a main-agent turn that ran longer than ``[notify] after`` ended, or an
approval (or a question) waits for the person.

A bus listener (``Notifier.on_event``) turns those events into a ``Note`` and queues it; a
task of the runtime delivers each note on every configured channel, so a slow webhook never
holds the bus. Leaving the runtime waits a few seconds for notes still queued (the end of a
long ``nyz run`` is exactly when a note is due), then gives up.

Channels:

* the console (an interactive front end on a terminal): the bell (``bell``) and/or a desktop
  notification the terminal shows (``osc``: OSC 9, iTerm2/Windows Terminal/WezTerm/ghostty;
  OSC 777, urxvt/foot/kitty/VTE), written to ``/dev/tty`` so they never mix with the
  front end's output stream;
* ``notify-send`` (``desktop``), where installed and a desktop session is running;
* a webhook (``webhook_url``): a JSON POST with ``text`` (Slack incoming webhooks) and
  ``content`` (Discord webhooks) holding the same line. The URL is a credential: the
  config's secret-named keys (``webhook``) are redacted from logs and the model's view;
* the ``notification`` hooks (``[[agent.hooks]]``, Claude Code's ``Notification``), with
  Claude's ``notification_type``: ``permission_prompt`` (an approval waits),
  ``elicitation_dialog`` (a question waits), ``idle_prompt`` (a long turn ended and nyz waits
  for you). They get every note, whatever ``approvals`` says: a hook is its own opt-in.

Events reach listeners already redacted, so a note carries no known secret. Delivery errors
are dropped (a notification must never break a turn) after one warning on stderr.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import trio

from nyzhi import records
from nyzhi.core import events as ev
from nyzhi.textcut import cut

# A note's kind as Claude Code's Notification hook names it (``notification_type``).
HOOK_TYPES = {"approval_request": "permission_prompt", "user_question": "elicitation_dialog",
              "turn_complete": "idle_prompt"}
DRAIN_SECONDS = 5.0  # how long leaving the runtime waits for queued notes
SEND_TIMEOUT = 10.0
BODY_LIMIT = 300


@records.frozen
class Note:
    kind: str  # "turn_complete", "approval_request", "user_question"
    title: str
    body: str
    session_id: str = ""
    duration_s: float = 0.0

    def line(self) -> str:
        return f"{self.title}: {self.body}"


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class Notifier:
    """See the module docstring. ``console``: deliver to the terminal too (an interactive
    front end whose output is a terminal); ``clock``: seconds, monotonic (a test seam)."""

    def __init__(self, config: Any, *, project: str = "", session_id: str = "",
                 console: bool = False, env: dict[str, str] | None = None,
                 clock: Any = time.monotonic,
                 warn: Callable[[str], Awaitable[None]] | None = None,
                 hooks: Any = None) -> None:
        self.config = config
        self.after = config.after.seconds
        self.project = project
        self.session_id = session_id
        self.console = console and (config.bell or config.osc != "off")
        # nyzhi.core.runtime.hooks.HookRunner: the notification hooks, when any listen
        self.hooks = hooks if hooks is not None and hooks.has("notification") else None
        self.approvals = config.approvals or self.hooks is not None
        self.env = dict(os.environ if env is None else env)
        self._clock = clock
        self._turn_started: float | None = None
        self._turn_error = ""
        self._send, self._receive = trio.open_memory_channel[Note](64)
        self._idle = trio.Event()
        self._idle.set()
        self._pending = 0
        self._warned = False
        self._warn = warn or _to_stderr
        self.delivered: list[Note] = []

    @property
    def enabled(self) -> bool:
        c = self.config
        return self.console or c.desktop or bool(c.webhook_url) or self.hooks is not None

    # ---- events -> notes ------------------------------------------------------------------

    async def on_event(self, event: ev.Event) -> None:
        note = self.note_for(event)
        if note is None:
            return
        try:
            self._send.send_nowait(note)
        except (trio.WouldBlock, trio.ClosedResourceError):
            return  # 64 notes behind: the person has heard enough
        self._pending += 1
        self._idle = trio.Event()

    def note_for(self, event: ev.Event) -> Note | None:
        title = f"nyz · {self.project}" if self.project else "nyz"
        if event.agent != ev.MAIN_AGENT:
            if self.approvals and isinstance(event, ev.ApprovalRequest):
                return Note("approval_request", title, cut(
                    f"{event.agent.rsplit('/', 1)[-1]} asks to run {event.tool}: "
                    f"{event.summary}", BODY_LIMIT), self.session_id)
            return None
        if isinstance(event, ev.TurnStart):
            self._turn_started = self._clock()
            self._turn_error = ""
        elif isinstance(event, ev.Error) and event.kind != "notice":
            self._turn_error = event.message
        elif isinstance(event, ev.TurnComplete) and self._turn_started is not None:
            took = self._clock() - self._turn_started
            self._turn_started = None
            if took < self.after or event.stop_reason == "cancelled":
                return None  # short, or cancelled by the person, who is there
            if self._turn_error:
                body = f"turn failed after {_duration(took)}: {self._turn_error}"
            else:
                body = f"turn finished after {_duration(took)}" + (
                    f": {event.text}" if event.text.strip() else "")
            return Note("turn_complete", title, cut(body, BODY_LIMIT), self.session_id, round(took, 3))
        elif self.approvals and isinstance(event, ev.ApprovalRequest):
            return Note("approval_request", title,
                        cut(f"approval needed to run {event.tool}: {event.summary}", BODY_LIMIT),
                        self.session_id)
        elif self.approvals and isinstance(event, ev.UserQuestion):
            return Note("user_question", title, cut(f"a question waits: {event.question}", BODY_LIMIT),
                        self.session_id)
        return None

    # ---- delivery ---------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Notifier]:
        """Deliver queued notes while the block runs; on leaving, wait up to
        ``DRAIN_SECONDS`` for those still queued."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._deliver_all)
            try:
                yield self
            finally:
                with trio.move_on_after(DRAIN_SECONDS) as scope:
                    scope.shield = True
                    await self._idle.wait()
                nursery.cancel_scope.cancel()

    async def _deliver_all(self) -> None:
        async for note in self._receive:
            try:
                await self.deliver(note)
            finally:
                self._pending -= 1
                if not self._pending:
                    self._idle.set()

    async def deliver(self, note: Note) -> None:
        """``note`` on every configured channel; a channel that fails is reported once."""
        c = self.config
        if self.hooks is not None:
            await self.hooks.fire("notification", {
                "notification_type": HOOK_TYPES[note.kind], "title": note.title,
                "message": note.body, "session_id": note.session_id})
        if note.kind != "turn_complete" and not c.approvals:
            return  # only the hooks asked for approvals and questions
        if self.console:
            self._terminal(note)
        if c.desktop:
            await self._guard("notify-send", self._notify_send(note))
        if c.webhook_url:
            await self._guard("the notification webhook", self._webhook(c.webhook_url, note))
        self.delivered.append(note)

    async def _guard(self, what: str, work: Any) -> None:
        try:
            with trio.fail_after(SEND_TIMEOUT):
                await work
        except Exception as exc:  # noqa: BLE001 - a notification never breaks a turn
            if not self._warned:
                self._warned = True
                await self._warn(f"could not notify through {what}: "
                                 f"{exc or type(exc).__name__}")

    def _terminal(self, note: Note) -> None:
        text = note.line().replace("\x07", "").replace("\x1b", "")
        out = ""
        if self.config.osc == "9":
            out += f"\x1b]9;{text}\x07"
        elif self.config.osc == "777":
            body = note.body.replace(";", ",").replace("\x07", "").replace("\x1b", "")
            out += f"\x1b]777;notify;{note.title};{body}\x07"
        if self.config.bell:
            out += "\x07"
        try:
            fd = os.open("/dev/tty", os.O_WRONLY | os.O_NOCTTY)
        except OSError:
            return  # no controlling terminal: nothing to ring
        try:
            os.write(fd, out.encode())
        except OSError:
            pass
        finally:
            os.close(fd)

    async def _notify_send(self, note: Note) -> None:
        env = self.env
        binary = shutil.which("notify-send", path=env.get("PATH"))
        if binary is None or not (env.get("DISPLAY") or env.get("WAYLAND_DISPLAY")
                                  or env.get("DBUS_SESSION_BUS_ADDRESS")):
            return  # not installed, or no desktop session: nothing to show it on
        from nyzhi.spawn import open_bound_process

        proc = await open_bound_process([binary, "--app-name=nyz", note.title, note.body],
                                        env=env, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        await proc.wait()

    async def _webhook(self, url: str, note: Note) -> None:
        import httpx

        payload = {
            "text": note.line(),  # Slack
            "content": note.line(),  # Discord
            "nyz": {"event": note.kind, "title": note.title, "body": note.body,
                    "session_id": note.session_id, "duration_s": note.duration_s},
        }
        async with httpx.AsyncClient(timeout=SEND_TIMEOUT) as client:
            response = await client.post(url, json=payload)
            if response.status_code >= 300:
                raise RuntimeError(f"the webhook answered HTTP {response.status_code}")


async def _to_stderr(text: str) -> None:
    print(f"nyz: {text}", file=sys.stderr)


def notifier_for(config: Any, options: Any, session_id: str, project: str,
                 publish: Callable[[ev.Event], Awaitable[None]],
                 hooks: Any = None) -> Notifier | None:
    """The runtime's notifier, or None when no channel is on. The console channel is on for
    interactive front ends whose output is a terminal. A failed channel is said on stderr
    headless, and as a notice event in an interactive front end (stderr would scribble
    over a full-screen console)."""
    console = bool(options.interactive) and sys.stdout.isatty()

    async def notice(text: str) -> None:
        await publish(ev.Error(message=text, kind="notice"))

    notifier = Notifier(config.notify, project=project, session_id=session_id,
                        console=console, env={**os.environ, **(options.env or {})},
                        warn=notice if options.interactive else None, hooks=hooks)
    return notifier if notifier.enabled else None
