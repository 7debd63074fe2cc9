"""The console application: layout, keys, and the bridge between urwid and the runtime.

It runs on urwid's ``TrioEventLoop`` with the runtime (``open_runtime``) opened in a task of
the console's own nursery: one task pumps runtime events into ``ConsoleRenderer``, urwid redraws
when trio goes idle, and every person's action becomes a message to the runtime (``submit``,
``cancel``, ``answer_approval``, ``answer_question``) sent from a task of that nursery.

A first frame is on the terminal before this module is even imported (``first_frame``, from
``launch``); urwid takes the keys typed at it. Then the screen is drawn before the runtime
exists: the runtime's imports run in a worker thread and its assembly in a task, so the input
is live at once and what is sent meanwhile waits in the queue (shown) until the runtime
attaches. ``/resume`` closes the runtime and opens another on
the chosen session under the same screen.

``Console`` owns the loop, the runtime, the turn and its queue, and the keys; its jobs are its
parts, each a module: the input (``composer``), the dialogs and pickers (``modals``), the
conversation on screen (``transcript``), the status and notice lines (``status``) and the
agent tree (``agent_tree``). The console is what the renderer and the slash commands are
given (their ``Host`` and ``CommandHost``), so it answers for its parts there.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio
import urwid

from nyzhi import collector
from nyzhi.core.protocol import Session, ops
from nyzhi.core.protocol import events as ev
from nyzhi.core.protocol.commands import dispatch, toggle_plan, waits_for_idle
from nyzhi.core.protocol.prompt import attach_files, read_attachments
from nyzhi.tui import commands, theme
from nyzhi.tui.agent_tree import AgentTree
from nyzhi.tui.composer import Composer
from nyzhi.tui.conversation import ConsoleRenderer, Stream
from nyzhi.tui.modals import Modals
from nyzhi.tui.status import StatusBar
from nyzhi.tui.transcript import Transcript

if TYPE_CHECKING:
    from nyzhi.core.runtime.runtime import Runtime
    from nyzhi.tui.first_frame import FirstFrame

__all__ = ["Console", "ServeWeb", "attach_files", "console_main", "main", "resume_hint"]

QUIT_WINDOW_S = 2.0
# A command's kind of line (``nyzhi.core.runtime.commands.registry``) -> the palette's name for it.
_STYLES = {"added": "tool_ok", "removed": "tool_err"}
# ``/web``'s server, given by ``nyz`` (``nyzhi.cli.cmd_chat``; front ends import none of each
# other): ``(runtime, nursery, say) -> served``, where ``served.url`` is the page to open and
# ``served.record(event)`` shows one of the runtime's events there.
ServeWeb = Callable[[Any, trio.Nursery, Callable[[str], None]], Awaitable[Any]]


class Console:
    """The console: the loop's owner, and its parts' (see the module docstring)."""

    def __init__(self, cwd: Path, *, no_color: bool, web: ServeWeb | None = None) -> None:
        self.rt: Runtime | None = None
        # ``/web``: the server to start (None: not given, /web says so) and the one serving
        # this runtime once started. ``live``: this runtime on its live socket for ``nyz
        # attach`` (a ``DeferredHub``), whose backlog is also the page's until ``/web``.
        self.web = web
        self.served: Any = None
        self.live: Any = None
        self._web_lock = trio.Lock()
        self.feed: trio.Nursery | None = None  # the nursery of this runtime's tasks
        self.tui: Any = None  # the [tui] settings, once the config is loaded
        self.loaded: Any = None  # the config in effect and its files (/model, /config)
        self.cwd = cwd
        self.no_color = no_color
        self.theme = theme.detect()  # the first frame's, until [tui] theme is read
        self.busy = False
        self.queue: list[str] = []
        self.resume_id: str | None = None
        self.switch: tuple[str, str | None] | None = None  # (provider, model) on the restart
        self.restart: trio.Event | None = None
        self.fatal: BaseException | None = None
        self.session_id = ""  # the last attached runtime's session: how to resume it, at exit
        self.last_ctrl_c = -1e9
        self.shell_scope: trio.CancelScope | None = None
        self.nursery: trio.Nursery | None = None
        self.loop: urwid.MainLoop | None = None
        self.main_path = self.shown = ev.MAIN_AGENT
        self.renderer = ConsoleRenderer(self)
        self.agent_tree = AgentTree(self)
        self.transcript = Transcript(self)
        self.status_bar = StatusBar(self)
        self.modals = Modals(self)
        self.composer = Composer(self)
        self._layout()
        self.stream(self.main_path).note(("notice", "nyz · starting…"))
        self.refresh_status()

    def _layout(self) -> None:
        """The frame: the conversation (and the tree, F2) over the notice line, the input
        (and its menu) and the status line; the root shows it, or a dialog over it."""
        self.body = urwid.Columns([self.transcript.listbox])
        footer = urwid.Pile([
            urwid.AttrMap(self.status_bar.notice, "notice"), urwid.Divider("─"),
            urwid.AttrMap(self.composer.input, "input"),
            urwid.AttrMap(self.status_bar.status, "status"),
        ])
        footer.focus_position = 2
        self.footer = footer
        # The conversation area in "body" colours: the terminal's own, or high-contrast's black
        # behind every row, not only behind the characters drawn.
        self.frame = urwid.Frame(urwid.AttrMap(self.body, "body"), footer=footer,
                                 focus_part="footer")
        self.root = _Root(self.frame, self.global_key)  # the frame, or a dialog over it

    @property
    def panel(self) -> Any:
        """The agent tree's widget (its rows, its view model ``panel.tree``)."""
        return self.agent_tree.panel

    @property
    def input(self) -> Any:
        return self.composer.input

    def attach(self, rt: Runtime, loaded: Any) -> None:
        """The runtime is open: draw its thread, apply ``[tui]``, send what was queued."""
        self.rt = rt
        self.session_id = rt.session_id
        self.loaded = loaded
        self.tui = loaded.config.tui
        self.input.set_vi(self.tui.input_mode == "vi")
        self.agent_tree.reset(rt)
        self.main_path = self.shown = Session(rt).main_path
        self.transcript.reset(self.main_path)
        wanted = theme.resolve(self.tui.theme)
        if wanted is not None and wanted != self.theme:
            self._apply_theme(wanted)
        self.transcript.replay(rt)
        self.refresh_status()
        self.transcript.follow()
        self._next_queued()

    # ---- what the renderer is given (its ``Host``) -------------------------------------

    def stream(self, agent: str) -> Stream:
        return self.transcript.stream(agent)

    def on_approval(self, event: ev.ApprovalRequest) -> None:
        self.modals.ask(event)

    def on_question(self, event: ev.UserQuestion) -> None:
        self.modals.ask(event)

    def agents_changed(self) -> None:
        self.agent_tree.changed()

    # ---- the person's side ---------------------------------------------------------------

    def submit(self, text: str) -> None:
        text = text.strip()
        if not text:
            return
        assert self.nursery is not None
        if text.startswith("/") and (self.busy or self.queue) and waits_for_idle(
                text, self.features):
            self.queue.append(text)  # run when the turn ends, in order with queued prompts
            self._show_queue()
        elif text.startswith("/"):
            self.nursery.start_soon(self.command, text)
        elif text.startswith("&") and text[1:].strip() and self.rt is not None:
            self.nursery.start_soon(self.agent_tree.background_prompt, self.rt,
                                    text[1:].strip())
        elif self.shown != self.main_path and self.rt is not None:
            self.nursery.start_soon(self._to_agent, self.shown, text)
        else:
            self.send_main(text)

    def send_main(self, text: str) -> None:
        """A prompt for the main agent: now, or queued behind the running turn."""
        assert self.nursery is not None
        if self.busy or self.rt is None:
            self.queue.append(text)
            self._show_queue()
        else:
            self.busy = True  # from now: a line typed before the task starts queues behind it
            self.nursery.start_soon(self._turn, text)

    async def command(self, text: str) -> None:
        """A slash command line, run against this console (``dispatch``)."""
        self.stream(self.shown).command(text)
        try:
            await dispatch(self, text)
        except Exception as exc:  # one failing command must not take the console down
            self.note(("error", f"{text.split()[0]} failed: {exc}"))
        self.transcript.follow()

    async def _turn(self, text: str) -> None:
        rt = self.rt
        assert rt is not None
        self.busy = True
        activity = self.status_bar.activity
        activity.start("running the command" if text.startswith("!") else "thinking")
        self._show_queue()
        main = self.stream(self.main_path)
        main.user(text)
        self.transcript.follow(force=True)
        try:
            if text.startswith("!"):
                await self._shell(text[1:].strip())
            else:
                images = self.composer.take_images()
                handle = await rt.submit(await read_attachments(text, self.cwd), images)
                await handle.wait()
        except Exception as exc:
            main.note(("error", f"error: {exc}"))
        finally:
            self.busy = False
            activity.stop()
            self.status_bar.draw_notice()
            self.refresh_status()
        self._next_queued()
        self._show_queue()

    def _next_queued(self) -> None:
        """Start what waits in the queue now that the agent is idle: commands that waited
        for the turn to end run first, in the order typed, then the next prompt."""
        if self.queue and not self.busy and self.nursery is not None and self.rt is not None:
            self.nursery.start_soon(self._run_queued)

    async def _run_queued(self) -> None:
        while self.queue and not self.busy and self.rt is not None:
            text = self.queue.pop(0)
            self._show_queue()
            if not text.startswith("/"):
                await self._turn(text)
                return  # the turn's end starts the rest
            rt = self.rt
            await self.command(text)
            if self.rt is not rt:  # the session reopened (/model PROVIDER/MODEL, /resume):
                return  # the new runtime's attach starts the rest

    async def _to_agent(self, path: str, text: str) -> None:
        """Input for the subagent on screen (chosen in the agent tree), through the runtime
        (``Runtime.send``): a new turn of its thread, shown when it starts."""
        assert self.rt is not None
        try:
            await self.rt.send(path, await read_attachments(text, self.cwd))
        except Exception as exc:  # shut down (resume it first), gone: say why, keep the text
            self.stream(path).note(("error", f"not sent: {exc}"))
            self.composer.put_back(text)
        self.transcript.follow()

    async def _shell(self, command: str) -> None:
        """``!cmd``: the ``bash`` tool through the main agent's own gated tool step (trust,
        deny rules, sandbox, hooks, approval), shown as a tool card; not added to the thread."""
        assert self.rt is not None
        with trio.CancelScope() as self.shell_scope:
            await Session(self.rt).submit(ops.RunShell(command))
        self.shell_scope = None

    def cancel_turn(self) -> None:
        assert self.nursery is not None
        dropped = len(self.queue)
        self.queue.clear()
        self._show_queue()
        if self.shell_scope is not None:
            self.shell_scope.cancel()
        if dropped:
            self.note(("notice", f"{dropped} queued message(s) dropped"))
        if self.busy and self.rt is not None:
            self.nursery.start_soon(self.rt.cancel)
            self.flash("cancelling…")

    # ---- keys ------------------------------------------------------------------------

    def global_key(self, key: str) -> bool:
        """The keys that work everywhere (before any widget sees them); True if ``key`` was
        one. Called by ``_Root`` key by key, so a batch read at once keeps its order."""
        on_input = self.composer.on_input
        selected = self.transcript.selected
        if key == "ctrl c":
            self._ctrl_c()
        elif self.composer.menu_key(key):
            pass
        elif key == "esc" and self.modals.picking():
            self.modals.close_picker()
        elif key == "esc" and self.input.search is not None:
            self.input.end_search()
        elif key == "esc" and on_input() and self.input.to_normal():
            pass  # vi mode: Esc leaves insert mode first
        elif key == "esc" and selected is not None:
            self.transcript.select_block(None)
        elif key in ("meta up", "meta down") and on_input():
            self.transcript.move_selection(-1 if key == "meta up" else 1)
        elif key == "enter" and selected is not None and on_input() \
                and not self.input.edit_text.strip():
            selected.toggle()
        elif key == "esc" and self.root.original_widget is not self.frame:
            self.modals.dismiss()  # a dialog closes before Esc cancels anything
        elif key == "esc" and self.agent_tree.shown:
            self.toggle_panel()
        elif key == "esc":
            self.cancel_turn()
        else:
            return self._action_key(key)
        return True

    def _action_key(self, key: str) -> bool:
        """The keys of an action (no dialog or selection to close first); True if one."""
        on_input = self.composer.on_input
        actions: dict[str, Callable[[], Any]] = {
            "ctrl l": self.clear_screen, "ctrl t": self.toggle_theme, "f2": self.toggle_panel,
            "ctrl o": self.transcript.toggle_expanded, "shift tab": self.toggle_plan,
            "meta t": self.cycle_thinking, "ctrl b": self.move_to_background}
        if key in actions:
            actions[key]()
        elif key in ("page up", "page down", "ctrl end") or (
                key == "end" and on_input() and self.input.at_end()):
            self.transcript.scroll(key)
        elif key == "ctrl g" and on_input():
            self.open_editor()
        elif key == "ctrl v" and on_input() and self.nursery is not None:
            self.nursery.start_soon(self.composer.paste_image)
        else:
            return False
        return True

    def own_signal_keys(self) -> None:
        """Ctrl-C, Ctrl-\\, Ctrl-Z, Ctrl-S/Q arrive as keys, not signals (the screen's
        start saves the terminal's own and its stop restores them)."""
        if self.loop is not None:
            self.loop.screen.tty_signal_keys("undefined", "undefined", "undefined",
                                             "undefined", "undefined")

    def move_to_background(self) -> None:
        """Ctrl-B: the shown agent's running ``bash`` goes on in the background; the model
        gets its id as the call's result and the turn goes on."""
        table = self.rt.tooling.context.shells if self.rt is not None else None
        if table is not None:
            self.flash(table.move_to_background(self.shown))

    def _ctrl_c(self) -> None:
        now = time.monotonic()
        if now - self.last_ctrl_c <= QUIT_WINDOW_S:
            self.quit()
            return
        self.last_ctrl_c = now
        if self.busy:
            self.cancel_turn()
        self.flash("press Ctrl-C again to quit")

    # ---- what the slash commands are given (``CommandHost``) ---------------------------

    features = commands.FEATURES
    cancel_hint = "Esc"
    keys_help = commands.KEYS_HELP

    def note(self, markup: Any) -> None:
        self.transcript.note(markup)

    def show(self, kind: str, text: str) -> None:
        self.note((_STYLES.get(kind, kind), text))

    def show_lines(self, lines: list[tuple[str, str]]) -> None:
        self.note([(_STYLES.get(kind, kind), text + "\n") for kind, text in lines])

    def flash(self, text: str) -> None:
        self.status_bar.flash(text)

    def _show_queue(self) -> None:
        self.status_bar.show_queue(self.queue)

    def pick(self, title: str, items: list[tuple[str, str, str]]) -> None:
        self.modals.pick(title, items)

    def open_editor(self) -> None:
        self.composer.open_editor()

    def status_text(self, *, long: bool = False) -> str:
        return self.status_bar.text(long=long)

    def refresh_status(self) -> None:
        self.status_bar.refresh()

    def toggle_panel(self) -> None:
        self.agent_tree.toggle()

    def loaded_config(self) -> Any:
        return self.loaded

    def clear_screen(self) -> None:
        self.transcript.clear()
        if self.loop is not None:
            self.loop.screen.clear()

    def theme_names(self) -> tuple[str, ...]:
        return theme.THEMES

    def set_theme(self, name: str) -> None:
        """``/theme NAME`` (``auto`` too: from the terminal's background)."""
        self.toggle_theme(name)

    def toggle_theme(self, name: str = "") -> None:
        """The next theme (Ctrl-T), or the one named (``/theme NAME``)."""
        wanted = theme.resolve(name) if name else theme.next_theme(self.theme)
        if wanted is None:
            self.note(("error", f"/theme: expected one of {theme.AUTO}, "
                                f"{', '.join(theme.THEMES)}, got {name!r}"))
            return
        self._apply_theme(wanted)
        self.flash(f"theme: {self.theme}")

    def _apply_theme(self, name: str) -> None:
        self.theme = name
        if self.loop is not None:
            self.loop.screen.register_palette(theme.palette(self.theme, no_color=self.no_color))
            self.loop.screen.clear()

    def cycle_thinking(self) -> None:
        """Alt-T: the next thinking level (off, low, medium, high), as ``/thinking LEVEL``."""
        if self.rt is None:
            return
        self.flash(Session(self.rt).next_thinking().splitlines()[-1])
        self.refresh_status()

    def toggle_plan(self) -> None:
        """Shift-Tab: ``/plan`` (``nyzhi.core.runtime.commands``)."""
        toggle_plan(self)

    def restart_on(self, session_id: str, switch: tuple[str, str | None] | None = None) -> None:
        """Close this runtime and open one on ``session_id`` (``/resume``), with ``switch``
        on another (provider, model) (``/model PROVIDER/MODEL``)."""
        self.resume_id = session_id
        self.switch = switch or self.switch
        if self.restart is not None:
            self.restart.set()

    def quit(self) -> None:
        if self.nursery is not None:
            self.nursery.cancel_scope.cancel()

    async def serve_web(self) -> None:
        """``/web``: serve this runtime to a browser (once; again, the same URL), in this
        runtime's nursery, fed by the event pump: first what it kept, then every event."""
        if self.web is None:
            self.note(("error", "/web is unavailable: this console was started without a web "
                                "server (`nyz serve` serves a session to a browser)"))
            return
        async with self._web_lock:
            rt, feed = self.rt, self.feed
            if self.served is None and rt is not None and feed is not None:
                try:
                    served = await self.web(rt, feed, self.flash)
                except Exception as exc:  # no port, say: one line, the console goes on
                    from nyzhi.core.protocol import describe_error

                    self.note(("error", f"/web: cannot serve this session: "
                                        f"{describe_error(exc)}"))
                    return
                if rt is not self.rt:  # reopened meanwhile: that server closed with it
                    return
                for event in self.live.release_backlog() if self.live is not None else ():
                    served.record(event)  # no checkpoint from here to the pump's next event
                self.served = served
        if self.served is None:
            return
        self.note(("notice", "web: this session, live in a browser (closing the page leaves "
                             "the console running; the server stops with it):\n"
                             + self.served.url))

    # ---- the runtime's side ---------------------------------------------------------

    async def _tick(self) -> None:
        """Elapsed times of running tool cards and the status bar, twice a second while
        something runs, and the activity line's spinner 8 times a second while the main
        agent works (a screen clock, not synchronisation)."""
        ticks = 0
        activity = self.status_bar.activity
        while True:
            await trio.sleep(0.125 if activity.active else 0.5)
            ticks += 1
            if activity.active:
                self.status_bar.draw_notice()
                if ticks % 4:
                    continue
            if self.busy or self.panel.running():
                for card in self.transcript.running_cards():
                    card.refresh()
                self.refresh_status()

    async def _pump(self, events: trio.MemoryReceiveChannel[ev.Event]) -> None:
        activity = self.status_bar.activity
        async for event in events:
            if self.served is not None:  # /web: every event goes to the page too
                self.served.record(event)
            if self.live is not None:  # the live socket's viewers, or its backlog
                self.live.record(event)
            changed = self.panel.tree.apply(event)  # the agent tree's view model
            if activity.active and event.agent == self.main_path:
                activity.feed(event)
            self.renderer.render(event)
            if changed:
                self.agents_changed()
            if event.agent == self.shown:
                self.transcript.follow()

    async def _runtime(self, args: Any) -> None:
        """Open the runtime (again after ``/resume``) and feed its events to the screen; a
        runtime that cannot start ends the console with its error in ``fatal``."""
        def prepare() -> Any:
            from nyzhi.core.protocol.start import prewarm_tls
            from nyzhi.front.flags import runtime_options  # the runtime's imports, off the UI

            prewarm_tls()  # the CA bundle loads while the runtime is imported
            return runtime_options(args, interactive=True)

        if getattr(args, "first_prompt", None):  # nyz team start --task: the lead's first
            self.queue.append(args.first_prompt)  # prompt, sent once the runtime attaches
            args.first_prompt = None
        try:
            options = await trio.to_thread.run_sync(prepare)
            from nyzhi.core.protocol.start import trusted_loaded
            from nyzhi.core.runtime.runtime import open_runtime

            while True:  # the view the runtime opens with: unapproved project keys left out
                loaded = await trio.to_thread.run_sync(functools.partial(
                    trusted_loaded, options.cwd, approve=options.approve_project_config))
                self.restart = trio.Event()
                async with open_runtime(options) as rt, rt.subscribe() as events, \
                        trio.open_nursery() as feed:
                    self.feed, self.served = feed, None  # a /web server ends with its runtime
                    self._serve_live(rt, feed)
                    feed.start_soon(self._pump, events)
                    collector.resume(freeze=True)  # paused by ``nyz`` while it started
                    self.attach(rt, loaded)
                    await self.restart.wait()
                    feed.cancel_scope.cancel()
                self.rt = self.feed = self.served = self.live = None
                self.refresh_status()
                options.session, options.continue_latest = self.resume_id, False
                if self.switch is not None:
                    options.provider, options.model = self.switch
        except Exception as exc:
            self.fatal = exc
            self.quit()

    def _serve_live(self, rt: Any, feed: trio.Nursery) -> None:
        """This runtime on its live socket (``nyz attach``) while it is open, as ``nyz run``
        serves its own: the hub made at the first viewer, the backlog kept until then."""
        from nyzhi.core.protocol.live_socket import DeferredHub, serve_live

        self.live = DeferredHub(rt, feed, keep_backlog=self.web is not None,
                                on_hub=self.modals.on_live_hub)
        feed.start_soon(functools.partial(serve_live, rt, hub=self.live,
                                          notice=lambda line: self.note(("notice", line))))

    # ---- running --------------------------------------------------------------------

    async def run(self, args: Any, frame: FirstFrame | None = None) -> None:
        """Draw until the person quits (or the runtime cannot start: ``fatal``); ``frame``:
        the first frame on screen, whose terminal settings urwid takes over."""
        screen = urwid.display.raw.Screen()
        if self.no_color:
            screen.set_terminal_properties(colors=1)
        evl = urwid.TrioEventLoop()
        self.loop = urwid.MainLoop(
            self.root, theme.palette(self.theme, no_color=self.no_color), screen=screen,
            event_loop=evl, handle_mouse=False,
        )
        evl.enter_idle(self.transcript.flush)  # before the MainLoop's own idle redraw, so it comes first
        async with trio.open_nursery() as nursery:
            self.nursery = nursery
            nursery.start_soon(self._tick)
            # urwid saves the terminal's own settings, then sets its mode (and drops what
            # is queued: the keys typed at the first frame are taken out before, fed after)
            typed = frame.release() if frame is not None else b""
            with self.loop.start():
                self.own_signal_keys()  # stop() restores the terminal's
                if typed:
                    keys, _raw = screen.parse_input(None, None, list(typed), wait_for_more=False)
                    self.loop.process_input(keys)
                self.loop.draw_screen()  # the input is live before the runtime's imports start
                nursery.start_soon(self._runtime, args)
                await evl.run_async()


class _Root(urwid.WidgetPlaceholder):
    """The screen's top widget: global keys first, then the frame or the open dialog."""

    def __init__(self, widget: urwid.Widget, global_key: Any) -> None:
        super().__init__(widget)
        self.global_key = global_key

    def keypress(self, size: tuple[int, ...], key: str) -> str | None:
        if self.global_key(key):
            return None
        return super().keypress(size, key)


async def console_main(args: Any, frame: FirstFrame | None = None, *,
                       no_color: bool = False, web: ServeWeb | None = None) -> int:
    console = Console(Path.cwd(), no_color=no_color, web=web)
    await console.run(args, frame)
    if console.fatal is not None:
        raise console.fatal
    if (hint := resume_hint(console.session_id)) is not None:
        print(hint, file=sys.stderr)
    return 0


def resume_hint(session_id: str) -> str | None:
    """The line said as the console closes, so the session is not lost on the terminal's
    history: how to come back to it (None when nothing was kept: a session that never took a
    turn is not)."""
    from nyzhi.core.protocol import session_kept

    if not session_kept(session_id):
        return None
    return (f"nyz: session {session_id} saved; resume it with `nyz --continue` (the latest) or "
            f"`nyz --session {session_id[:8]}`")


def main(args: Any, *, frame: FirstFrame | None = None, no_color: bool | None = None,
         web: ServeWeb | None = None) -> int:
    """The console until the person quits; ``frame``: the first frame already drawn
    (``nyzhi.tui.launch``), whose terminal urwid takes over; ``web``: what ``/web`` serves
    the session with (None: ``/web`` says it is unavailable)."""
    if no_color is None:
        no_color = bool(os.environ.get("NO_COLOR"))
    try:
        return trio.run(functools.partial(console_main, args, frame, no_color=no_color,
                                          web=web))
    except Exception as exc:
        from nyzhi.core.protocol import describe_error

        if frame is not None and frame.saved is not None:
            frame.abandon()  # failed before urwid took the screen: leave the first frame
        print(f"nyz: {describe_error(exc)}", file=sys.stderr)
        return 1
