"""The console's interactive widgets: the input box, the approval and question dialogs and
the agent tree panel. Each reports what the person chose through a callback; none talks to
the runtime itself."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import urwid

from nyzhi.core.protocol import events as ev
from nyzhi.core.protocol.agents import AgentRow, AgentTreeView
from nyzhi.tui import theme
from nyzhi.tui.history import History

PROMPT = ("prompt", "› ")


class InputBox(urwid.Edit):
    """Multi-line input: Enter submits, Alt-Enter (or Shift-Enter where the terminal reports
    it) adds a line, Up/Down walk the history on the first/last line, Tab completes, Ctrl-R
    searches the history backwards (again: an older match; Enter or Esc: keep the match)."""

    def __init__(self, history: History, on_submit: Callable[[str], None],
                 complete: Callable[[str], str | None]) -> None:
        super().__init__(PROMPT, multiline=True)
        self.history = history
        self.on_submit = on_submit
        self.complete = complete
        self.search: str | None = None  # the Ctrl-R query while searching
        self.search_at = 0
        self.killed = ""  # what Ctrl-U/K/W or Alt-Backspace cut last; Ctrl-Y puts it back
        self.browsing = False  # the text is a history entry just recalled (no menu for it)
        self.vi = False  # ``[tui] input_mode = "vi"``
        self.normal = False  # vi's normal mode (keys are commands, not text)
        self._pending_d = False  # the first d of dd

    def at_end(self) -> bool:
        """The cursor is after the last character (End then scrolls the conversation)."""
        return self.edit_pos >= len(self.edit_text)

    def _word_start(self, pos: int, *, spaces: bool) -> int:
        """Where the word before ``pos`` starts: whitespace-delimited (Ctrl-W) or a run of
        letters and digits (Alt-B, Alt-Backspace), as readline has them."""
        text = self.edit_text
        inside = (lambda c: not c.isspace()) if spaces else str.isalnum
        while pos > 0 and not inside(text[pos - 1]):
            pos -= 1
        while pos > 0 and inside(text[pos - 1]):
            pos -= 1
        return pos

    def _word_end(self, pos: int) -> int:
        text = self.edit_text
        while pos < len(text) and not text[pos].isalnum():
            pos += 1
        while pos < len(text) and text[pos].isalnum():
            pos += 1
        return pos

    def _cut(self, start: int, end: int) -> None:
        if end > start:
            self.killed = self.edit_text[start:end]
            self.set_edit_text(self.edit_text[:start] + self.edit_text[end:])
        self.set_edit_pos(start)

    def _emacs_key(self, key: str) -> bool:
        """The readline/emacs keys people's hands know; True if ``key`` was one. Each works
        on the cursor's line of a multi-line prompt."""
        text, pos = self.edit_text, self.edit_pos
        line_start = text.rfind("\n", 0, pos) + 1
        line_end = text.find("\n", pos)
        line_end = len(text) if line_end < 0 else line_end
        if key == "ctrl a":
            self.set_edit_pos(line_start)
        elif key == "ctrl e":
            self.set_edit_pos(line_end)
        elif key == "ctrl u":
            self._cut(line_start, pos)
        elif key == "ctrl k":
            self._cut(pos, line_end if line_end > pos else min(len(text), pos + 1))
        elif key == "ctrl w":
            self._cut(self._word_start(pos, spaces=True), pos)
        elif key == "meta backspace":
            self._cut(self._word_start(pos, spaces=False), pos)
        elif key == "meta b":
            self.set_edit_pos(self._word_start(pos, spaces=False))
        elif key == "meta f":
            self.set_edit_pos(self._word_end(pos))
        elif key == "ctrl y":
            self.insert_text(self.killed)
        else:
            return False
        return True

    def set_vi(self, on: bool) -> None:
        self.vi, self.normal = on, False
        self.set_caption(PROMPT)

    def to_normal(self) -> bool:
        """Esc in vi's insert mode: normal mode (True); in normal mode, or not in vi mode,
        Esc is not the input's (it cancels the turn)."""
        if not self.vi or self.normal:
            return False
        self.normal = True
        self.set_edit_pos(max(0, self.edit_pos - 1) if self.edit_pos else 0)
        self.set_caption(("prompt", "[N] › "))
        return True

    def _insert_at(self, pos: int) -> None:
        self.normal = False
        self.set_caption(PROMPT)
        self.set_edit_pos(pos)

    def _vi_key(self, size: tuple[int], key: str) -> str | None:
        """A key in vi's normal mode: moves, deletes, back to insert mode; Enter still sends."""
        text, pos = self.edit_text, self.edit_pos
        line_start = text.rfind("\n", 0, pos) + 1
        line_end = text.find("\n", pos)
        line_end = len(text) if line_end < 0 else line_end
        pending, self._pending_d = self._pending_d, False
        if key == "d" and pending:
            self._cut(line_start, line_end)
        elif key == "d":
            self._pending_d = True
        elif key in ("h", "left"):
            self.set_edit_pos(max(line_start, pos - 1))
        elif key in ("l", "right"):
            self.set_edit_pos(min(line_end, pos + 1))
        elif key == "0":
            self.set_edit_pos(line_start)
        elif key == "$":
            self.set_edit_pos(line_end)
        elif key == "w":
            self.set_edit_pos(self._word_end(pos))
        elif key == "b":
            self.set_edit_pos(self._word_start(pos, spaces=False))
        elif key == "x":
            self._cut(pos, min(line_end, pos + 1))
        elif key == "D":
            self._cut(pos, line_end)
        elif key == "p":
            self.set_edit_pos(min(len(text), pos + 1))
            self.insert_text(self.killed)
        elif key == "i":
            self._insert_at(pos)
        elif key == "a":
            self._insert_at(min(line_end, pos + 1))
        elif key == "I":
            self._insert_at(line_start)
        elif key == "A":
            self._insert_at(line_end)
        elif key in ("k", "j"):
            return self.keypress(size, "up" if key == "k" else "down")
        elif key == "enter" or not (len(key) == 1 and key.isprintable()):
            if key == "enter":
                self.normal = False
                self.set_caption(PROMPT)
            return "pass"
        return None

    def end_search(self) -> None:
        self.search = None
        self.set_caption(PROMPT)

    def _search_key(self, key: str) -> bool:
        """Handle ``key`` in search mode; False: the search ended and the key goes on."""
        assert self.search is not None
        if key == "ctrl r":
            start = self.search_at
        elif key == "backspace":
            self.search, start = self.search[:-1], len(self.history.entries)
        elif len(key) == 1 and key.isprintable():
            self.search, start = self.search + key, self.search_at + 1
        else:
            self.end_search()
            return key == "enter"  # Enter keeps the match without sending it
        found = self.history.search(self.search, start) if self.search else None
        if found is not None:
            self.search_at = found
            self.set_edit_text(self.history.entries[found])
            self.set_edit_pos(len(self.edit_text))
        miss = "" if found is not None or not self.search else " (no match)"
        self.set_caption(("prompt", f"(search{miss}: {self.search}) "))
        return True

    def keypress(self, size: tuple[int], key: str) -> str | None:
        self.browsing = key in ("up", "down") and self.browsing
        if self.vi and not self.normal and self.search is None and key.startswith("meta ") \
                and len(key) == 6:  # Esc then a key, typed faster than the terminal tells
            self.to_normal()
            key = key[5:]
        if self.normal and self.search is None:
            if self._vi_key(size, key) is None:
                return None
        if self.search is not None and self._search_key(key):
            return None
        if key == "ctrl r":
            self.search, self.search_at = "", len(self.history.entries)
            self.set_caption(("prompt", "(search: ) "))
            return None
        if key == "enter":
            text = self.edit_text
            if text.strip():
                self.history.add(text)
                self.set_edit_text("")
                self.on_submit(text)
            return None
        if key in ("meta enter", "shift enter"):
            self.insert_text("\n")
            return None
        if self._emacs_key(key):
            return None
        if key == "tab":
            done = self.complete(self.edit_text)
            if done is not None:
                self.set_edit_text(done)
                self.set_edit_pos(len(done))
            return None
        before = self.edit_text[: self.edit_pos]
        if key == "up" and "\n" not in before:
            entry = self.history.older(self.edit_text)
            self.browsing = True
            if entry is not None:
                self.set_edit_text(entry)
                self.set_edit_pos(len(entry))
            return None
        if key == "down" and "\n" not in self.edit_text[self.edit_pos:]:
            entry = self.history.newer()
            self.browsing = True
            if entry is not None:
                self.set_edit_text(entry)
                self.set_edit_pos(len(entry))
            return None
        return super().keypress(size, key)


APPROVAL_KEYS = {"y": "approve", "a": "always", "n": "deny"}  # ApprovalAnswer values


class ApprovalDialog(urwid.WidgetWrap):
    """Which agent asks to run which tool, with what, and a diff preview: y / a / n."""

    def __init__(self, event: ev.ApprovalRequest, queued: int,
                 on_answer: Callable[[ev.ApprovalRequest, Any], None], cwd: str = "") -> None:
        from nyzhi.tui.conversation import call_summary

        self.event = event
        self.on_answer = on_answer
        preview = event.preview.strip("\n")
        lines = preview.split("\n") if preview else []
        if len(lines) > 12:
            lines = [*lines[:12], f"… {len(lines) - 12} more line(s)"]
        body: list[Any] = [
            urwid.Text(("modal_title", f"Approve {event.tool}?")),
            urwid.Text(f"agent: {event.agent}"),
            urwid.Columns([(7, urwid.Text("call:")), urwid.Text(call_summary(event.summary, cwd))]),
        ]
        if lines:
            body += [urwid.Divider("─"), urwid.Text(_diff_markup(lines))]
        more = f"   ({queued} more waiting)" if queued else ""
        body += [urwid.Divider("─"),
                 urwid.Text(("modal_title", "y yes · a always this session · n or Esc no" + more))]
        super().__init__(urwid.AttrMap(urwid.LineBox(urwid.Pile(body)), theme.IN_MODAL))

    def selectable(self) -> bool:
        return True

    def keypress(self, size: tuple[int, ...], key: str) -> str | None:
        value = APPROVAL_KEYS.get(key.lower() if len(key) == 1 else key)
        if value is not None:
            from nyzhi.core.protocol import ApprovalAnswer  # loaded by the runtime by now

            self.on_answer(self.event, ApprovalAnswer(value))
            return None
        return key if key in ("esc", "ctrl c", "ctrl l", "ctrl t", "f2") else None


def _diff_markup(lines: list[str]) -> list[Any]:
    out: list[Any] = []
    for line in lines:
        attr = "tool_ok" if line.startswith("+") else "tool_err" if line.startswith("-") else "modal"
        out.append((attr, line[:200] + "\n"))
    if out:
        out[-1] = (out[-1][0], out[-1][1].rstrip("\n"))
    return out


class QuestionDialog(urwid.WidgetWrap):
    """``ask_user``: the model's options as a selector, plus a line for a custom answer."""

    def __init__(self, event: ev.UserQuestion,
                 on_answer: Callable[[ev.UserQuestion, str], None]) -> None:
        self.event = event
        self.on_answer = on_answer
        rows: list[Any] = [urwid.Text(("modal_title", event.question)), urwid.Divider()]
        for i, opt in enumerate(event.options, 1):
            label = f"{i}. {opt.get('label', opt.get('value', ''))}"
            button = urwid.Button(label, on_press=self._pick, user_data=opt.get("value", label))
            rows.append(urwid.AttrMap(button, "modal", focus_map="selected"))
        self.custom: urwid.Edit | None = None
        if event.allow_custom or not event.options:
            self.custom = urwid.Edit("answer: ")
            rows.append(urwid.AttrMap(self.custom, "modal", focus_map="selected"))
        rows += [urwid.Divider(), urwid.Text("↑↓ choose · Enter answer · digits pick · Esc dismiss")]
        self.pile = urwid.Pile(rows)
        super().__init__(urwid.AttrMap(urwid.LineBox(self.pile), "modal"))

    def _pick(self, _button: urwid.Button, value: str) -> None:
        self.on_answer(self.event, value)

    def keypress(self, size: tuple[int, ...], key: str) -> str | None:
        focus = self.pile.focus
        if key == "enter" and self.custom is not None and focus is not None \
                and focus.base_widget is self.custom:
            if self.custom.edit_text.strip():
                self.on_answer(self.event, self.custom.edit_text.strip())
            return None
        on_custom = self.custom is not None and focus is not None \
            and focus.base_widget is self.custom
        if len(key) == 1 and key.isdigit() and not on_custom:
            n = int(key)
            if 1 <= n <= len(self.event.options):
                self.on_answer(self.event, self.event.options[n - 1].get("value", ""))
            return None
        return super().keypress(size, key)


def request_overlay(pending: list[Any], frame: urwid.Widget, on_approval: Any, on_question: Any,
                    cwd: str) -> urwid.Widget:
    """The screen with the first waiting request over it (an approval or a question; the
    others wait behind it, counted in the approval's dialog), or ``frame`` when none waits:
    one drawing for the console and for ``nyz attach``."""
    if not pending:
        return frame
    first = pending[0]
    dialog: urwid.Widget
    if isinstance(first, ev.ApprovalRequest):
        dialog = ApprovalDialog(first, len(pending) - 1, on_approval, cwd=cwd)
    else:
        dialog = QuestionDialog(first, on_question)
    return urwid.Overlay(dialog, frame, "center", ("relative", 90), "middle", "pack")


class AgentPanel(urwid.WidgetWrap):
    """The agent tree: every agent seen on the event stream (and a resumed session's), indented
    by its path, with its status, current step, tokens and cost: the rows of ``tree``, the
    one view model (``nyzhi.core.protocol.agents``, as the web console's). Enter on a row shows that
    agent's stream (and what is typed then goes to it); ``c`` cancels its running turn, ``C``
    it and its subagents; ``r`` resumes a closed or interrupted one."""

    def __init__(self, on_select: Callable[[str], None],
                 on_cancel: Callable[[str, str], None], on_resume: Callable[[str], None],
                 on_process: Callable[[str, str], None] | None = None) -> None:
        self.on_select = on_select
        self.on_cancel = on_cancel
        self.on_resume = on_resume
        # (shell id, "view" | "kill") for a background process's row
        self.on_process = on_process
        # The agent tree's background shells (nyzhi.tools.background.ShellTable), each shown
        # under the agent that started it; None: none in this run.
        self.shells: Any = None
        self.paths: list[str] = []
        self.tree = AgentTreeView()  # fed by the console's event pump (and its replay)
        self.walker = urwid.SimpleFocusListWalker([])
        self.title = urwid.Text([("heading", "Agents"),
                                 ("dim", "\n⏎ view · r resume\nc cancel · C with subtree\n"
                                  "k kill a process\nEsc or F2 close")])
        super().__init__(urwid.AttrMap(urwid.LineBox(
            urwid.Frame(urwid.ListBox(self.walker), header=self.title)), "panel"))
    def agent(self, path: str) -> AgentRow:
        """The agent's row (a new one for an agent shown before any of its events)."""
        return self.tree.row(path)

    def running(self) -> int:
        return self.tree.running()

    def refresh(self, shown: str) -> None:
        focus = self.walker.focus
        rows = []
        self.paths = []
        shells = list(self.shells.shells.values()) if self.shells is not None else []
        for row in self.tree.sorted():
            path = row.path
            depth = max(0, path.count("/") - 2)
            mark = "▶ " if path == shown else "  "
            text = (f"{mark}{'  ' * depth}{row.name} [{row.status}]\n"
                    f"    {'  ' * depth}{row.tokens} tok ${row.cost_usd:.3f} {row.activity}")
            self.paths.append(path)
            rows.append(urwid.AttrMap(_Row(text, path, self.on_select), "panel",
                                      focus_map="selected"))
            for shell in (s for s in shells if s.owner == path):
                self.paths.append(f"{path}/tools/{shell.id}")
                rows.append(urwid.AttrMap(_Row(process_row(shell, depth + 1),
                                               shell.id, self._view), "panel",
                                          focus_map="selected"))
        self.walker[:] = rows
        if rows and focus is not None:
            self.walker.set_focus(min(focus, len(rows) - 1))

    def _view(self, shell_id: str) -> None:
        if self.on_process is not None:
            self.on_process(shell_id, "view")

    def keypress(self, size: tuple[int, ...], key: str) -> str | None:
        focus = self.walker.focus
        process = focus is not None and focus < len(self.paths) and "/tools/" in self.paths[focus]
        if process and key == "k" and self.on_process is not None:
            self.on_process(self.paths[focus].rsplit("/", 1)[-1], "kill")
            return None
        if process and key in ("c", "C", "r"):
            return None  # an agent's keys: nothing to do on a process
        if key in ("c", "C", "r") and focus is not None and focus < len(self.paths):
            path = self.paths[focus]
            if key == "r":
                self.on_resume(path)
            else:
                self.on_cancel(path, "turn" if key == "c" else "subtree")
            return None
        return super().keypress(size, key)


def process_row(shell: Any, depth: int) -> str:
    """A background process in the tree: id, state, uptime, command, then its last line."""
    state = "running" if shell.state == "running" else (
        "killed" if shell.state == "killed" else f"exit {shell.exit_code}")
    command = " ".join(shell.command.split())
    last = shell.last_line
    return (f"  {'  ' * depth}⚙ {shell.id} [{state} {shell.uptime:.0f}s] {command[:40]}"
            + (f"\n    {'  ' * depth}{last[:60]}" if last else ""))


class _Row(urwid.SelectableIcon):
    """One agent of the tree: selectable, Enter chooses it."""

    def __init__(self, text: str, path: str, on_select: Callable[[str], None]) -> None:
        super().__init__(text, cursor_position=0)
        self.path = path
        self.on_select = on_select

    def keypress(self, size: tuple[int], key: str) -> str | None:
        if key == "enter":
            self.on_select(self.path)
            return None
        return key
