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
"""

from __future__ import annotations

import functools
import os
import re
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio
import urwid

from nyzhi.core import collector
from nyzhi.core.protocol import Session, ops, status_card, status_line
from nyzhi.core.protocol import events as ev
from nyzhi.core.protocol.activity import Activity
from nyzhi.core.protocol.backlog import EventBacklog
from nyzhi.core.protocol.commands import dispatch, toggle_plan, waits_for_idle
from nyzhi.tui import commands, menu, theme
from nyzhi.tui.conversation import Collapsible, ConsoleRenderer, Expansion, Stream
from nyzhi.tui.history import History
from nyzhi.tui.picker import Choice, Choices, Picker
from nyzhi.tui.widgets import AgentPanel, InputBox, request_overlay

CONTEXT_MARKS = (0.75, 0.90)  # context use said in the conversation as it passes each
STATUS_LINE_EVERY = 0.3  # seconds between two runs of a statusLine command (Claude Code's)

if TYPE_CHECKING:
    from nyzhi.core.runtime import Runtime
    from nyzhi.tui.first_frame import FirstFrame

QUIT_WINDOW_S = 2.0
PANEL_WIDTH = 30
ATTACH_LIMIT = 100_000  # bytes of one @file put into a prompt
_ATTACH = re.compile(r"(?<!\S)@(\S+)")
# A command's kind of line (``nyzhi.core.commands.registry``) -> the palette's name for it.
_STYLES = {"added": "tool_ok", "removed": "tool_err"}
# ``/web``'s server, given by ``nyz`` (``nyzhi.cli.cmd_chat``; front ends import none of each
# other): ``(runtime, nursery, say) -> served``, where ``served.url`` is the page to open and
# ``served.record(event)`` shows one of the runtime's events there.
ServeWeb = Callable[[Any, trio.Nursery, Callable[[str], None]], Awaitable[Any]]


class Console:
    def __init__(self, cwd: Path, *, no_color: bool, web: ServeWeb | None = None) -> None:
        self.rt: Runtime | None = None
        # ``/web``: the server to start (None: not given, /web says so), the one serving this
        # runtime once started, and the events kept until then (the page's backlog).
        self.web = web
        self.served: Any = None
        self.backlog: EventBacklog | None = None
        self._web_lock = trio.Lock()
        self.feed: trio.Nursery | None = None  # the nursery of this runtime's tasks
        self.tui: Any = None  # the [tui] settings, once the config is loaded
        self.loaded: Any = None  # the config in effect and its files (/model, /config)
        self.cwd = cwd
        self.no_color = no_color
        self.theme = theme.detect()  # the first frame's, until [tui] theme is read
        self.busy = False
        self.queue: list[str] = []
        self.pasted: list[Any] = []  # images pasted with Ctrl-V, sent with the next prompt
        self.pending: list[ev.ApprovalRequest | ev.UserQuestion] = []
        self.resume_id: str | None = None
        self.switch: tuple[str, str | None] | None = None  # (provider, model) on the restart
        self.restart: trio.Event | None = None
        self.fatal: BaseException | None = None
        self.session_id = ""  # the last attached runtime's session: how to resume it, at exit
        self._context_warned: set[float] = set()  # the CONTEXT_MARKS already said
        self.last_ctrl_c = -1e9
        self.shell_scope: trio.CancelScope | None = None
        self.nursery: trio.Nursery | None = None
        self.loop: urwid.MainLoop | None = None
        self.streams: dict[str, Stream] = {}
        self.main_path = self.shown = ev.MAIN_AGENT
        self.renderer = ConsoleRenderer(self)
        self.panel_shown = False
        self.following = True  # the view sticks to the end of the conversation
        self.selected: Collapsible | None = None  # a tool card or thinking chosen with Alt-↑↓
        self.panel = AgentPanel(self.show_agent, self.cancel_agent, self.resume_agent,
                                self.act_on_process)
        self.listbox = urwid.ListBox(self.stream(self.main_path).walker)
        self.notice = urwid.Text("")
        self._flash = ""  # what flash() said; shown beside the activity line
        self.activity = Activity()  # the spinner line while the main agent works
        self.input = InputBox(History(), self.submit, self._complete)
        self.status = urwid.Text("", wrap="ellipsis")
        # Claude Code's statusLine (nyzhi.core.status_line): its last output, shown instead
        # of nyz's status text; one run at a time, at most every STATUS_LINE_EVERY seconds.
        self._status_line_text: str | None = None
        self._status_line_busy = False
        self._status_line_at = -1e9
        self._started = time.monotonic()
        self.body = urwid.Columns([self.listbox])
        footer = urwid.Pile([
            urwid.AttrMap(self.notice, "notice"), urwid.Divider("─"),
            urwid.AttrMap(self.input, "input"), urwid.AttrMap(self.status, "status"),
        ])
        footer.focus_position = 2
        self.footer = footer
        # The menu under the input (``/`` commands, ``@`` files): its list, its kind, the
        # files walked for the ``@`` word, and the text Esc closed it on (it stays closed
        # until the text changes).
        self.menu: Choices | None = None
        self.menu_kind = ""
        self._menu_files: list[str] | None = None
        self._menu_closed_on: str | None = None
        urwid.connect_signal(self.input, "postchange", lambda *_: self._update_menu())
        # The conversation area in "body" colours: the terminal's own, or high-contrast's black
        # behind every row, not only behind the characters drawn.
        self.frame = urwid.Frame(urwid.AttrMap(self.body, "body"), footer=footer,
                                 focus_part="footer")
        self.root = _Root(self.frame, self.global_key)  # the frame, or a dialog over it
        self.stream(self.main_path).note(("notice", "nyz · starting…"))
        self.refresh_status()

    def attach(self, rt: Runtime, loaded: Any) -> None:
        """The runtime is open: draw its thread, apply ``[tui]``, send what was queued."""
        self.rt = rt
        self.session_id = rt.session_id
        self.loaded = loaded
        self.tui = loaded.config.tui
        self.input.set_vi(self.tui.input_mode == "vi")
        self.streams.clear()
        self.panel.tree.clear()
        self.panel.shells = rt.tooling.context.shells  # the background shells' table
        self.main_path = self.shown = Session(rt).main_path
        self.listbox.body = self.stream(self.main_path).walker
        wanted = theme.resolve(self.tui.theme)
        if wanted is not None and wanted != self.theme:
            self._apply_theme(wanted)
        self._replay_thread()
        self.refresh_status()
        self._follow()
        self._next_queued()

    # ---- streams and the event side ----------------------------------------------------

    def stream(self, agent: str) -> Stream:
        s = self.streams.get(agent)
        if s is None:
            tui = self.tui
            s = self.streams[agent] = Stream(
                show_thinking=tui.show_thinking if tui else True,
                use_markdown=tui.markdown if tui else True,
                streaming=tui.streaming if tui else True)
            self.panel.agent(agent)
            if self.panel_shown:
                self.panel.refresh(self.shown)
        return s

    def _replay_thread(self) -> None:
        """A resumed session, drawn as it was live: its recorded events through the one
        renderer; its subagents (shut down, resumable) in the tree."""
        assert self.rt is not None
        main = self.stream(self.main_path)
        session = Session(self.rt)
        messages = session.thread_length()
        events, restored = session.replay()
        replayer = ConsoleRenderer(self, replay=True)  # the live renderer, on the log's events
        shown = {self.main_path, *restored}  # the agents this runtime has
        tree = self.panel.tree
        for event in events:
            if event.agent in shown:
                tree.apply(event)  # as live: the one reducer
                replayer.render(event)
        tree.restore(self.main_path, ev.AgentState.IDLE, "")  # nothing runs in a new runtime
        for path, rec in restored.items():  # restored: closed, threads kept
            tree.restore(path, rec.status, "r resumes" if rec.closed else rec.reason[:20])
        self.agents_changed()
        if messages:
            main.note(("notice", f"resumed session {self.rt.session_id[:8]} "
                                 f"({messages} messages)"))
        else:
            main.note(("notice", f"nyz · {self.rt.provider_name}/{self.rt.model} · "
                                 "/help for commands and keys"))
        for notice in self.rt.notices:
            main.note(("notice", notice))
        if theme.resolve(self.tui.theme) is None:
            main.note(("error", f"tui.theme: expected one of {theme.AUTO}, "
                                f"{', '.join(theme.THEMES)}, got {self.tui.theme!r}; "
                                f"using {self.theme}"))

    def on_approval(self, event: ev.ApprovalRequest) -> None:
        self.pending.append(event)
        self._show_modal()

    def on_question(self, event: ev.UserQuestion) -> None:
        self.pending.append(event)
        self._show_modal()

    def agents_changed(self) -> None:
        if self.panel_shown:
            self.panel.refresh(self.shown)
        self.refresh_status()

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
            self.nursery.start_soon(self._command, text)
        elif text.startswith("&") and text[1:].strip() and self.rt is not None:
            self.nursery.start_soon(self._background_prompt, self.rt, text[1:].strip())
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

    async def _command(self, text: str) -> None:
        self.stream(self.shown).command(text)
        try:
            await dispatch(self, text)
        except Exception as exc:  # one failing command must not take the console down
            self.note(("error", f"{text.split()[0]} failed: {exc}"))
        self._follow()

    async def _turn(self, text: str) -> None:
        rt = self.rt
        assert rt is not None
        self.busy = True
        self.activity.start("running the command" if text.startswith("!") else "thinking")
        self._show_queue()
        main = self.stream(self.main_path)
        main.user(text)
        self._follow(force=True)
        try:
            if text.startswith("!"):
                await self._shell(text[1:].strip())
            else:
                images, self.pasted = tuple(self.pasted), []
                handle = await rt.submit(await read_attachments(text, self.cwd), images)
                await handle.wait()
        except Exception as exc:
            main.note(("error", f"error: {exc}"))
        finally:
            self.busy = False
            self.activity.stop()
            self._draw_notice()
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
            await self._command(text)
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
            self.input.set_edit_text(text)
            self.input.set_edit_pos(len(text))
        self._follow()

    def cancel_agent(self, path: str, scope: str) -> None:
        """Cancel one agent's running turn (``scope="turn"``) or it and every agent under it
        (``"subtree"``) from the tree, through ``Runtime.cancel``."""
        if self.rt is None or self.nursery is None:
            return
        self.nursery.start_soon(self._cancel_agent, self.rt, path, scope)

    async def _cancel_agent(self, rt: Runtime, path: str, scope: str) -> None:
        name = path.rsplit("/", 1)[-1]
        what = name if scope == "turn" else f"{name} and its subagents"
        self.flash(f"cancelled {what}" if await rt.cancel(path, scope)
                   else f"{what}: nothing running to cancel")

    async def _background_prompt(self, rt: Runtime, task: str) -> None:
        """``& TASK``: the task on a subagent of the main agent (the default role), as
        ``spawn_agent`` would start it: in the tree (F2) to watch, cancel or resume; its
        summary is posted into the conversation when it finishes."""
        main = self.stream(self.main_path)
        try:
            started = await rt.agents.spawn(rt.main_agent.spec.path, task)
        except Exception as exc:  # the thread or depth limit: say why
            main.note(("error", f"cannot start a background agent: {exc}"))
            self._follow()
            return
        ident, name = started["agent_id"], started["agent_nickname"]
        main.note(("notice", f"& {name} works on it in the background (F2 shows it)"))
        self._follow()
        while True:
            waited = await rt.agents.wait([ident])
            if not waited["timed_out"]:
                break
        [done] = waited["agents"]
        summary = done.get("message") or done.get("reason") or ""
        main.note(("notice", f"& {name} {done['status']}: " + (summary or "(no summary)")))
        self._follow()

    def act_on_process(self, shell_id: str, action: str) -> None:
        """A background process's row in the tree: Enter shows its last lines in the shown
        conversation, ``k`` kills it (its whole group, as ``kill_shell``)."""
        table = self.rt.tooling.context.shells if self.rt is not None else None
        shell = table.shells.get(shell_id) if table is not None else None
        if shell is None or self.nursery is None:
            return
        if action == "kill":
            if shell.kill_now is None:
                self.flash(f"{shell_id} is not running")
            else:
                self.nursery.start_soon(shell.kill_now)
                self.flash(f"killing {shell_id}")
            return
        lines = shell.ring.tail_lines(20)
        self.stream(self.shown).note(("notice", f"{shell_id} ({shell.status()}): "
                                      f"{' '.join(shell.command.split())[:80]}\n"
                                      + ("\n".join(lines) or "(no output yet)")))
        self._follow()

    def resume_agent(self, path: str) -> None:
        """Reopen a closed or interrupted subagent from the tree (``Runtime.agents.resume``):
        it is ``idle`` on its kept thread, and what is typed while it is shown goes to it."""
        if self.rt is None or self.nursery is None:
            return
        if path == self.main_path:
            self.flash("the main agent is always open")
            return
        self.nursery.start_soon(self._resume_agent, self.rt, path)

    async def _resume_agent(self, rt: Runtime, path: str) -> None:
        try:
            await Session(rt).submit(ops.ResumeAgent(path))
        except Exception as exc:  # a parent that is shut down, a broken role file
            self.flash(f"cannot resume {path.rsplit('/', 1)[-1]}: {exc}")
            return
        self.flash(f"resumed {path.rsplit('/', 1)[-1]}: Enter shows it, then type to it")

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

    def _answer_approval(self, event: ev.ApprovalRequest, answer: Any) -> None:
        assert self.nursery is not None and self.rt is not None
        self.nursery.start_soon(self.rt.answer_approval, event.request_id, answer)
        self.stream(event.agent).note(("notice", f"{event.tool}: {answer.value}"))
        self._close_modal(event)

    def _answer_question(self, event: ev.UserQuestion, text: str) -> None:
        assert self.nursery is not None and self.rt is not None
        self.nursery.start_soon(self.rt.answer_question, event.request_id, text)
        self.stream(event.agent).note(("notice", f"answered: {text}"))
        self._close_modal(event)

    def _close_modal(self, event: ev.AnyEvent) -> None:
        if self.pending and self.pending[0] is event:
            self.pending.pop(0)
        self._show_modal()

    def _dismiss_modal(self) -> None:
        """Esc on the open dialog: an approval is answered no, a question is answered that
        the person dismissed it (the agent goes on either way; Esc again cancels the turn)."""
        if not self.pending:
            self._show_modal()
            return
        first = self.pending[0]
        if isinstance(first, ev.ApprovalRequest):
            from nyzhi.core.protocol import ApprovalAnswer  # loaded by the runtime by now

            self._answer_approval(first, ApprovalAnswer.DENY)
        else:
            self._answer_question(first, "(dismissed: no answer)")

    def _show_modal(self) -> None:
        if self.loop is None:
            return
        self.root.original_widget = request_overlay(
            self.pending, self.frame, self._answer_approval, self._answer_question, str(self.cwd))

    # ---- keys ------------------------------------------------------------------------

    def global_key(self, key: str) -> bool:
        """The keys that work everywhere (before any widget sees them); True if ``key`` was
        one. Called by ``_Root`` key by key, so a batch read at once keeps its order."""
        if key == "ctrl c":
            self._ctrl_c()
        elif self.menu is not None and self._on_input() and self._menu_key(key):
            pass
        elif key == "esc" and isinstance(self.root.original_widget, _PickerOverlay):
            self._close_picker()
        elif key == "esc" and self.input.search is not None:
            self.input.end_search()
        elif key == "esc" and self._on_input() and self.input.to_normal():
            pass  # vi mode: Esc leaves insert mode first
        elif key == "esc" and self.selected is not None:
            self.select_block(None)
        elif key in ("meta up", "meta down") and self._on_input():
            self.move_selection(-1 if key == "meta up" else 1)
        elif key == "enter" and self.selected is not None and self._on_input() \
                and not self.input.edit_text.strip():
            self.selected.toggle()
        elif key == "esc" and self.root.original_widget is not self.frame:
            self._dismiss_modal()  # a dialog closes before Esc cancels anything
        elif key == "esc" and self.panel_shown:
            self.toggle_panel()
        elif key == "esc":
            self.cancel_turn()
        elif key == "ctrl l":
            self.clear_screen()
        elif key == "ctrl t":
            self.toggle_theme()
        elif key == "f2":
            self.toggle_panel()
        elif key == "ctrl o":
            self.toggle_expanded()
        elif key in ("page up", "page down", "ctrl end") or (
                key == "end" and self._on_input() and self.input.at_end()):
            self._scroll(key)
        elif key == "shift tab":
            self.toggle_plan()
        elif key == "meta t":
            self.cycle_thinking()
        elif key == "ctrl b":
            self.move_to_background()
        elif key == "ctrl g" and self._on_input():
            self.open_editor()
        elif key == "ctrl v" and self._on_input() and self.nursery is not None:
            self.nursery.start_soon(self._paste_image)
        else:
            return False
        return True

    # ---- the menu under the input and the pickers -----------------------------------

    def _update_menu(self) -> None:
        """After each change of the input: open, refilter or close the menu."""
        text = self.input.edit_text
        query = menu.menu_query(text) if self.input.search is None \
            and not self.input.browsing else None
        if query is None or text == self._menu_closed_on:
            self._close_menu(remember=False)
            return
        self._menu_closed_on = None
        kind, typed = query
        if kind == menu.COMMAND:
            knowledge = self.rt.knowledge if self.rt is not None else None
            choices = menu.command_choices(commands.available(commands.FEATURES),
                                           knowledge.commands if knowledge else {})
            shown = Choices(choices, empty="(no command by that name: Enter sends it as typed)")
            shown.filter("/" + typed)
        else:
            if self._menu_files is None or self.menu_kind != menu.FILE:
                self._menu_files = menu.workspace_files(self.cwd)
            shown = Choices(menu.file_choices(self._menu_files, typed), empty="(no such file)")
        self._show_menu(kind, shown)

    def _show_menu(self, kind: str, shown: Choices) -> None:
        entry = (urwid.AttrMap(shown, "input"), self.footer.options())
        if self.menu is None:
            self.footer.contents.insert(1, entry)
        else:
            self.footer.contents[1] = entry
        self.menu, self.menu_kind = shown, kind
        self.footer.focus_position = 3

    def _close_menu(self, *, remember: bool) -> None:
        if remember:
            self._menu_closed_on = self.input.edit_text
        if self.menu is not None:
            del self.footer.contents[1]
            self.footer.focus_position = 2
        self.menu, self._menu_files = None, None

    def _menu_key(self, key: str) -> bool:
        """↑↓ move in the open menu, Tab puts the choice in the input, Enter too once the
        arrows chose it (and runs a command; before, Enter sends what was typed, as it always
        did), Esc closes it; False: the key is the input's."""
        assert self.menu is not None
        choice = self.menu.current()
        if key in ("up", "down"):
            self.menu.move(-1 if key == "up" else 1)
        elif key == "esc":
            self._close_menu(remember=True)
        elif key in ("tab", "enter") and choice is not None and (
                key == "tab" or self.menu.moved):  # Enter picks only a choice moved to
            kind = self.menu_kind
            done = menu.applied(self.input.edit_text, kind, choice)
            if key == "enter" and kind == menu.COMMAND:  # run it, as if typed whole
                self.input.set_edit_text(done.rstrip())
                self.input.keypress((80,), "enter")
                return True
            self.input.set_edit_text(done)
            self.input.set_edit_pos(len(done))
        else:
            return False
        return True

    def pick(self, title: str, items: list[tuple[str, str, str]]) -> None:
        """A picker over the screen (the ``PICK`` feature): each item is (label, detail, the
        command line picking it runs: ``/resume ID``, ``/model NAME``, ``/theme NAME``)."""
        if self.loop is None or self.pending:
            return
        choices = [Choice(label, detail, line) for label, detail, line in items]
        picker = Picker(title, choices, self._picked, self._close_picker)
        self.root.original_widget = _PickerOverlay(picker, self.frame, "center",
                                                   ("relative", 80), "middle", "pack")

    def _picked(self, choice: Choice) -> None:
        self._close_picker()
        if self.nursery is not None:
            self.nursery.start_soon(self._command, str(choice.value))

    def _close_picker(self) -> None:
        if isinstance(self.root.original_widget, _PickerOverlay):
            self.root.original_widget = self.frame

    async def _paste_image(self) -> None:
        """Ctrl-V: the clipboard's image goes with the next prompt (as ``nyz run -i`` gives
        one); ``[image N]`` in the input marks it."""
        from nyzhi.provider.images import ImageError, image_from_bytes
        from nyzhi.tui.clipboard import ClipboardError, paste_image

        try:
            data = await paste_image()
            image = image_from_bytes(data, f"clipboard-{len(self.pasted) + 1}.png")
        except (ClipboardError, ImageError) as exc:
            self.flash(str(exc))
            return
        self.pasted.append(image)
        self.input.insert_text(f"[image {len(self.pasted)}] ")
        self.flash(f"image {len(self.pasted)} pasted: it goes with the next prompt")

    def open_editor(self) -> None:
        """Ctrl-G and ``/editor``: the input's draft in ``$VISUAL``/``$EDITOR`` (the screen
        handed over and taken back), then what was saved is sent; saved empty: nothing is."""
        if self.loop is None:
            return
        from nyzhi.tui.editor import EditorError, edit_text

        draft = self.input.edit_text
        try:
            text = edit_text(draft, self.loop.paused)
        except EditorError as exc:
            self.flash(str(exc))
            return
        finally:
            self._own_signal_keys()  # the restarted screen put the terminal's back
        if not text.strip():
            self.flash("editor: saved empty, nothing sent")
            return
        self.input.set_edit_text("")
        self.input.history.add(text)
        self.submit(text)

    def _own_signal_keys(self) -> None:
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

    def _on_input(self) -> bool:
        """Whether the input has the keys (no dialog open, the tree not focused)."""
        return self.root.original_widget is self.frame and self.frame.focus_position == "footer"

    def _ctrl_c(self) -> None:
        now = time.monotonic()
        if now - self.last_ctrl_c <= QUIT_WINDOW_S:
            self.quit()
            return
        self.last_ctrl_c = now
        if self.busy:
            self.cancel_turn()
        self.flash("press Ctrl-C again to quit")

    def _complete(self, text: str) -> str | None:
        knowledge = self.rt.knowledge if self.rt is not None else None
        done, candidates = commands.complete(text, self.cwd,
                                             knowledge.commands if knowledge else ())
        if len(candidates) > 1:
            self.flash("  ".join(candidates[:12]))
        return done

    # ---- actions (keys and commands) ---------------------------------------------------

    def note(self, markup: Any) -> None:
        self.stream(self.shown).note(markup)
        self._follow()

    # ---- what the slash commands are given (``CommandHost``) ---------------------------

    features = commands.FEATURES
    cancel_hint = "Esc"
    keys_help = commands.KEYS_HELP

    def show(self, kind: str, text: str) -> None:
        self.note((_STYLES.get(kind, kind), text))

    def show_lines(self, lines: list[tuple[str, str]]) -> None:
        self.note([(_STYLES.get(kind, kind), text + "\n") for kind, text in lines])

    def flash(self, text: str) -> None:
        self._flash = text
        self._draw_notice()

    def _draw_notice(self) -> None:
        """The notice line: the activity line while the main agent works, then the flash."""
        line = self.activity.line(self.cancel_hint + " cancels")
        self.notice.set_text(" │ ".join(p for p in (line, self._flash) if p))

    def _show_queue(self) -> None:
        if self.queue:
            first = " ".join(self.queue[0].split())[:50]
            self.flash(f"queued ({len(self.queue)}): {first} · Esc clears")
        elif self._flash.startswith("queued ("):  # only the queue's own line: a turn ending
            self.flash("")  # must not wipe what a key just said (Ctrl-O's "expanded")

    def clear_screen(self) -> None:
        self.select_block(None)
        self.stream(self.shown).walker[:] = []
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

    def move_selection(self, step: int) -> None:
        """Alt-Up/Alt-Down: choose the previous/next tool card or thinking block of the
        conversation on screen (Enter then expands or collapses just that one); past the last,
        the selection ends and the view follows the conversation again."""
        blocks = self.stream(self.shown).blocks()
        if not blocks:
            self.flash("no tool card or thinking to select here")
            return
        if self.selected in blocks:
            at = blocks.index(self.selected) + step
        else:
            at = len(blocks) - 1
        if at >= len(blocks):
            self.select_block(None)
            return
        self.select_block(blocks[max(0, at)])

    def select_block(self, block: Collapsible | None) -> None:
        if block is None and self.selected is None:
            return
        if self.selected is not None:
            self.selected.select(False)
        self.selected = block
        if block is None:
            self.flash("")
            self._follow(force=True)
            return
        block.select(True)
        self.following = False
        self.listbox.set_focus(self.listbox.body.index(block))
        self.listbox.set_focus_valign("top")
        self.flash("selected: Enter expands or collapses it · Alt-↑↓ another · Esc leaves")

    def toggle_expanded(self) -> None:
        Expansion.expanded = not Expansion.expanded
        for s in self.streams.values():
            s.refresh_blocks()
        self.flash("tool output and thinking " + ("expanded" if Expansion.expanded else "collapsed"))

    def toggle_panel(self) -> None:
        """F2: open the tree with the focus in it, or close it and go back to the main agent."""
        self.panel_shown = not self.panel_shown
        if self.panel_shown:
            self.panel.refresh(self.shown)
            self.body.contents.append((self.panel, self.body.options("given", PANEL_WIDTH)))
            self.body.focus_position = 1
            self.frame.focus_position = "body"
        else:
            del self.body.contents[1:]
            self.show_agent(self.main_path)

    def show_agent(self, path: str) -> None:
        stream = self.stream(path)
        self.select_block(None)
        self.shown = path
        stream.flush()
        self.listbox.body = stream.walker
        self._follow(force=True)
        self.panel.refresh(path)
        self.frame.focus_position = "footer"
        self.flash("" if path == self.main_path else f"showing {path}: input goes to it (F2 back)")

    def cycle_thinking(self) -> None:
        """Alt-T: the next thinking level (off, low, medium, high), as ``/thinking LEVEL``."""
        if self.rt is None:
            return
        from nyzhi.core.thinking import next_level, thinking_command

        self.flash(thinking_command(self.rt, next_level(self.rt.thinking_level)).splitlines()[-1])
        self.refresh_status()

    def toggle_plan(self) -> None:
        """Shift-Tab: ``/plan`` (``nyzhi.core.commands``)."""
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

    def _view_size(self) -> tuple[int, int] | None:
        """The conversation's (columns, rows) on screen now; None before the first frame."""
        if self.loop is None:
            return None
        cols, rows = self.loop.screen.get_cols_rows()
        width = cols - (PANEL_WIDTH if self.panel_shown else 0)
        return width, max(1, rows - self.frame.footer.rows((cols,)))

    def _scroll(self, key: str) -> None:
        """PageUp/PageDown scroll the conversation while the input keeps the focus; End and
        Ctrl-End go to the end. New output stops following the end until the view is back
        at the bottom, of the last block too: an answer taller than the screen is one block,
        and "focus on the last block" was not "at the end" (its first screenful stayed)."""
        size = self._view_size()
        if size is None:
            return
        if key in ("end", "ctrl end"):
            self._follow(force=True)
        else:
            self.listbox.keypress(size, key)
            walker = self.listbox.body
            self.following = not len(walker) or (
                self.listbox.focus_position == len(walker) - 1
                and "bottom" in self.listbox.ends_visible(size))
            if self.following:
                self._follow()
        if self.following:
            if self._flash.startswith("scrolled:"):
                self.flash("")
        else:
            self.flash("scrolled: PageDown or End to the end")

    def _follow(self, *, force: bool = False) -> None:
        if force:
            self.following = True
        if not self.following:
            return
        walker = self.listbox.body
        if not len(walker):
            return
        last = len(walker) - 1
        size = self._view_size()
        if size is None:  # before the first frame: urwid aligns it when it knows the size
            self.listbox.set_focus(last)
            self.listbox.set_focus_valign("bottom")
            return
        # The last block's last row on the view's last row, a block taller than the view
        # included (urwid's "bottom" alignment shows such a block's top).
        rows = walker[last].rows((size[0],), True)
        self.listbox.change_focus(size, last, offset_inset=size[1] - rows)

    # ---- status ----------------------------------------------------------------------

    def status_text(self, *, long: bool = False) -> str:
        """The one status line (``nyzhi.core.protocol.status_line``), or with ``long`` the
        ``/status`` card with the console's theme."""
        if self.rt is None:
            return " starting…"
        if self._status_line_text and not long:  # Claude Code's statusLine command
            return self._status_line_text
        status = Session(self.rt).status()
        if long:
            return status_card(status, extra=(("theme", self.theme),))
        self._warn_context(status)
        width = self.loop.screen.get_cols_rows()[0] - 1 if self.loop is not None else None
        return " " + status_line(status, width=width)

    def _warn_context(self, status: Any) -> None:
        """Say once in the conversation when the main agent's context passes 75% and 90%
        (again after a compaction brought it back under)."""
        if not status.context_window:
            return
        share = status.context_used / status.context_window
        for mark in CONTEXT_MARKS:
            if share >= mark and mark not in self._context_warned:
                self._context_warned.add(mark)
                self.note(("notice", f"context {share:.0%} full ({status.context_used} of "
                                     f"{status.context_window} tokens): /compact [HINT] "
                                     "summarises the older history now"))
            elif share < mark - 0.05:
                self._context_warned.discard(mark)

    def refresh_status(self) -> None:
        self.status.set_text(self.status_text())
        rt = self.rt
        if (rt is not None and getattr(rt, "status_line", None) is not None
                and not self._status_line_busy and self.nursery is not None
                and time.monotonic() - self._status_line_at >= STATUS_LINE_EVERY):
            self._status_line_busy = True
            self.nursery.start_soon(self._run_status_line, rt)

    async def _run_status_line(self, rt: Any) -> None:
        """Run the statusLine command with Claude Code's status JSON; show its line."""
        from nyzhi.core.status_line import run_status_line, status_payload
        from nyzhi.tools.env_policy import child_env

        try:
            cost = self.panel.tree.cost_usd()
            payload = status_payload(rt, Path(self.cwd), cost, self._started)
            env = child_env(rt.main_agent.tooling.context.env_policy, {})
            line = await run_status_line(rt.status_line, payload, str(self.cwd), env)
            if line is not None and rt is self.rt:
                self._status_line_text = line
                self.status.set_text(line)
        finally:
            self._status_line_at = time.monotonic()
            self._status_line_busy = False

    def loaded_config(self) -> Any:
        return self.loaded

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
                for event in self.backlog.drain() if self.backlog is not None else ():
                    served.record(event)  # no checkpoint from here to the pump's next event
                self.served, self.backlog = served, None
        if self.served is None:
            return
        self.note(("notice", "web: this session, live in a browser (closing the page leaves "
                             "the console running; the server stops with it):\n"
                             + self.served.url))

    async def _tick(self) -> None:
        """Elapsed times of running tool cards and the status bar, twice a second while
        something runs, and the activity line's spinner 8 times a second while the main
        agent works (a screen clock, not synchronisation)."""
        ticks = 0
        while True:
            await trio.sleep(0.125 if self.activity.active else 0.5)
            ticks += 1
            if self.activity.active:
                self._draw_notice()
                if ticks % 4:
                    continue
            if self.busy or self.panel.running():
                for s in self.streams.values():
                    for card in s.running_cards():
                        card.refresh()
                self.refresh_status()

    def _flush(self) -> None:
        self.stream(self.shown).flush()

    async def _pump(self, events: trio.MemoryReceiveChannel[ev.Event]) -> None:
        async for event in events:
            if self.served is not None:  # /web: every event goes to the page too
                self.served.record(event)
            elif self.backlog is not None:
                self.backlog.add(event)
            changed = self.panel.tree.apply(event)  # the agent tree's view model
            if self.activity.active and event.agent == self.main_path:
                self.activity.feed(event)
            self.renderer.render(event)
            if changed:
                self.agents_changed()
            if event.agent == self.shown:
                self._follow()

    async def _runtime(self, args: Any) -> None:
        """Open the runtime (again after ``/resume``) and feed its events to the screen; a
        runtime that cannot start ends the console with its error in ``fatal``."""
        def prepare() -> Any:
            from nyzhi.core.flags import runtime_options  # the runtime's imports, off the UI
            from nyzhi.provider import tls

            tls.prewarm()  # the CA bundle loads while the runtime is imported
            return runtime_options(args, interactive=True)

        if getattr(args, "first_prompt", None):  # nyz team start --task: the lead's first
            self.queue.append(args.first_prompt)  # prompt, sent once the runtime attaches
            args.first_prompt = None
        try:
            options = await trio.to_thread.run_sync(prepare)
            from nyzhi.config import load_config
            from nyzhi.core.runtime import open_runtime

            while True:
                loaded = await trio.to_thread.run_sync(load_config, options.cwd)
                self.restart = trio.Event()
                async with open_runtime(options) as rt, rt.subscribe() as events, \
                        trio.open_nursery() as feed:
                    self.feed, self.served = feed, None  # a /web server ends with its runtime
                    self.backlog = EventBacklog() if self.web is not None else None
                    feed.start_soon(self._pump, events)
                    collector.resume(freeze=True)  # paused by ``nyz`` while it started
                    self.attach(rt, loaded)
                    await self.restart.wait()
                    feed.cancel_scope.cancel()
                self.rt = self.feed = self.served = self.backlog = None
                self.refresh_status()
                options.session, options.continue_latest = self.resume_id, False
                if self.switch is not None:
                    options.provider, options.model = self.switch
        except Exception as exc:
            self.fatal = exc
            self.quit()

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
        evl.enter_idle(self._flush)  # before the MainLoop's own idle redraw, so it comes first
        async with trio.open_nursery() as nursery:
            self.nursery = nursery
            nursery.start_soon(self._tick)
            # urwid saves the terminal's own settings, then sets its mode (and drops what
            # is queued: the keys typed at the first frame are taken out before, fed after)
            typed = frame.release() if frame is not None else b""
            with self.loop.start():
                self._own_signal_keys()  # stop() restores the terminal's
                if typed:
                    keys, _raw = screen.parse_input(None, None, list(typed), wait_for_more=False)
                    self.loop.process_input(keys)
                self.loop.draw_screen()  # the input is live before the runtime's imports start
                nursery.start_soon(self._runtime, args)
                await evl.run_async()


class _PickerOverlay(urwid.Overlay):
    """A picker over the frame (told apart from the approval and question dialogs)."""


class _Root(urwid.WidgetPlaceholder):
    """The screen's top widget: global keys first, then the frame or the open dialog."""

    def __init__(self, widget: urwid.Widget, global_key: Any) -> None:
        super().__init__(widget)
        self.global_key = global_key

    def keypress(self, size: tuple[int, ...], key: str) -> str | None:
        if self.global_key(key):
            return None
        return super().keypress(size, key)


async def read_attachments(text: str, cwd: Path) -> str:
    """``attach_files`` with its reads in a worker thread, as the file tools read: a large
    file or a slow disk must not freeze the console's event loop (the screen, the other
    agents' streams)."""
    if "@" not in text:
        return text
    from nyzhi.tools.offload import run_blocking

    return await run_blocking(attach_files, text, cwd)


def attach_files(text: str, cwd: Path) -> str:
    """The prompt with each ``@path`` that exists followed by the file's contents (or the
    directory's listing); other ``@words`` (e-mail addresses, handles) are left alone. An
    ``@image`` is left to ``Runtime.submit``, which sends it as an image.
    Blocking: the console calls it through ``read_attachments``.

    A file is read like every prompt file (``config.prompt_files``): one resolving outside
    the workspace and nyz's config folders, or into /proc, /sys or /dev, is not attached and
    the prompt says so instead."""
    from nyzhi.config.prompt_files import prompt_roots, read_prompt_bytes
    from nyzhi.config.workspace import find_root
    from nyzhi.provider.images import sniff

    roots = prompt_roots(find_root(cwd))
    blocks = []
    for m in _ATTACH.finditer(text):
        name = m.group(1)
        if not (cwd / name).exists():
            name = name.rstrip(".,;:!?)'\"")  # "see @notes.md." ends a sentence
        path = (cwd / name).resolve()
        if path.is_file():
            try:
                raw = read_prompt_bytes(cwd / name, roots, ATTACH_LIMIT)
            except OSError as exc:  # refused (or unreadable): the reason, not the file
                blocks.append(f'<file path="{name}" not-attached="{exc}"/>')
                continue
            if sniff(raw[:16]):
                continue  # an image goes to the model as an image (Runtime.submit)
            data = raw.decode("utf-8", errors="replace")
            blocks.append(f'<file path="{name}">\n{data}\n</file>')
        elif path.is_dir():
            names = sorted(p.name + ("/" if p.is_dir() else "") for p in path.iterdir())
            blocks.append(f'<directory path="{name}">\n' + "\n".join(names[:500])
                          + "\n</directory>")
    return text if not blocks else text + "\n\n" + "\n\n".join(blocks)


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
