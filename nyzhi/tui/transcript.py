"""The console's conversation on screen: one ``Stream`` per agent, the one shown, and where the
view is in it.

Its own part because every other job of the console writes into the conversation (a turn, a
command's output, a notice, a dialog's answer) and only this one decides how the view moves:
it sticks to the end while new output comes (``follow``), stops when the person scrolls or
selects a tool card, and comes back with End. A resumed session is drawn here too, through
the live renderer, so a replayed thread looks as it did live.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import urwid

from nyzhi.core.protocol import Session
from nyzhi.core.protocol import events as ev
from nyzhi.tui import theme
from nyzhi.tui.conversation import Collapsible, ConsoleRenderer, Expansion, Stream

if TYPE_CHECKING:
    from nyzhi.tui.app import Console

PANEL_WIDTH = 30  # columns of the agent tree (F2) beside the conversation


class Transcript:
    """The streams of the console's agents, the list box showing one, following and
    selection."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.streams: dict[str, Stream] = {}
        self.following = True  # the view sticks to the end of the conversation
        self.selected: Collapsible | None = None  # a tool card or thinking chosen with Alt-↑↓
        self.listbox = urwid.ListBox(self.stream(console.main_path).walker)

    def stream(self, agent: str) -> Stream:
        s = self.streams.get(agent)
        if s is None:
            tui = self.console.tui
            s = self.streams[agent] = Stream(
                show_thinking=tui.show_thinking if tui else True,
                use_markdown=tui.markdown if tui else True,
                streaming=tui.streaming if tui else True)
            self.console.agent_tree.added(agent)
        return s

    def reset(self, main_path: str) -> None:
        """A new runtime: no streams but its main agent's, shown."""
        self.streams.clear()
        self.listbox.body = self.stream(main_path).walker

    def note(self, markup: Any) -> None:
        self.stream(self.console.shown).note(markup)
        self.follow()

    def flush(self) -> None:
        self.stream(self.console.shown).flush()

    def running_cards(self) -> list[Any]:
        return [card for s in self.streams.values() for card in s.running_cards()]

    def replay(self, rt: Any) -> None:
        """A resumed session, drawn as it was live: its recorded events through the one
        renderer; its subagents (shut down, resumable) in the tree."""
        console = self.console
        main = self.stream(console.main_path)
        session = Session(rt)
        messages = session.thread_length()
        events, restored = session.replay()
        replayer = ConsoleRenderer(console, replay=True)  # the live renderer, on the log's events
        shown = {console.main_path, *restored}  # the agents this runtime has
        tree = console.panel.tree
        for event in events:
            if event.agent in shown:
                tree.apply(event)  # as live: the one reducer
                replayer.render(event)
        tree.restore(console.main_path, ev.AgentState.IDLE, "")  # nothing runs in a new runtime
        for path, rec in restored.items():  # restored: closed, threads kept
            tree.restore(path, rec.status, "r resumes" if rec.closed else rec.reason[:20])
        console.agents_changed()
        if messages:
            main.note(("notice", f"resumed session {rt.session_id[:8]} ({messages} messages)"))
        else:
            main.note(("notice", f"nyz · {rt.provider_name}/{rt.model} · "
                                 "/help for commands and keys"))
        for notice in rt.notices:
            main.note(("notice", notice))
        if theme.resolve(console.tui.theme) is None:
            main.note(("error", f"tui.theme: expected one of {theme.AUTO}, "
                                f"{', '.join(theme.THEMES)}, got {console.tui.theme!r}; "
                                f"using {console.theme}"))

    def show(self, path: str) -> None:
        """The conversation of ``path`` on screen, at its end."""
        stream = self.stream(path)
        self.select_block(None)
        stream.flush()
        self.listbox.body = stream.walker
        self.follow(force=True)

    def clear(self) -> None:
        self.select_block(None)
        self.stream(self.console.shown).walker[:] = []

    def move_selection(self, step: int) -> None:
        """Alt-Up/Alt-Down: choose the previous/next tool card or thinking block of the
        conversation on screen (Enter then expands or collapses just that one); past the last,
        the selection ends and the view follows the conversation again."""
        blocks = self.stream(self.console.shown).blocks()
        if not blocks:
            self.console.flash("no tool card or thinking to select here")
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
            self.console.flash("")
            self.follow(force=True)
            return
        block.select(True)
        self.following = False
        self.listbox.set_focus(self.listbox.body.index(block))
        self.listbox.set_focus_valign("top")
        self.console.flash("selected: Enter expands or collapses it · Alt-↑↓ another · "
                           "Esc leaves")

    def toggle_expanded(self) -> None:
        Expansion.expanded = not Expansion.expanded
        for s in self.streams.values():
            s.refresh_blocks()
        self.console.flash("tool output and thinking "
                           + ("expanded" if Expansion.expanded else "collapsed"))

    def view_size(self) -> tuple[int, int] | None:
        """The conversation's (columns, rows) on screen now; None before the first frame."""
        console = self.console
        if console.loop is None:
            return None
        cols, rows = console.loop.screen.get_cols_rows()
        width = cols - (PANEL_WIDTH if console.agent_tree.shown else 0)
        return width, max(1, rows - console.frame.footer.rows((cols,)))

    def scroll(self, key: str) -> None:
        """PageUp/PageDown scroll the conversation while the input keeps the focus; End and
        Ctrl-End go to the end. New output stops following the end until the view is back
        at the bottom, of the last block too: an answer taller than the screen is one block,
        and "focus on the last block" was not "at the end" (its first screenful stayed)."""
        size = self.view_size()
        if size is None:
            return
        if key in ("end", "ctrl end"):
            self.follow(force=True)
        else:
            self.listbox.keypress(size, key)
            walker = self.listbox.body
            self.following = not len(walker) or (
                self.listbox.focus_position == len(walker) - 1
                and "bottom" in self.listbox.ends_visible(size))
            if self.following:
                self.follow()
        status = self.console.status_bar
        if self.following:
            if status.flashed.startswith("scrolled:"):
                self.console.flash("")
        else:
            self.console.flash("scrolled: PageDown or End to the end")

    def follow(self, *, force: bool = False) -> None:
        if force:
            self.following = True
        if not self.following:
            return
        walker = self.listbox.body
        if not len(walker):
            return
        last = len(walker) - 1
        size = self.view_size()
        if size is None:  # before the first frame: urwid aligns it when it knows the size
            self.listbox.set_focus(last)
            self.listbox.set_focus_valign("bottom")
            return
        # The last block's last row on the view's last row, a block taller than the view
        # included (urwid's "bottom" alignment shows such a block's top).
        rows = walker[last].rows((size[0],), True)
        self.listbox.change_focus(size, last, offset_inset=size[1] - rows)
