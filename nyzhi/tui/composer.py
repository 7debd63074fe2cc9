"""The console's input: what the person writes before it is sent.

Its own part because writing a prompt has jobs of its own before anything reaches the runtime:
the input box with its history, vi or emacs keys and search (``InputBox``), completion (Tab),
the menu under the input (``/`` commands, ``@`` files), images pasted with Ctrl-V (sent with
the next prompt), the draft in ``$EDITOR`` (Ctrl-G), and ``@path`` attachments read into the
prompt (``nyzhi.core.protocol.prompt``: in a worker thread and only from where a prompt file
may come from).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import urwid

from nyzhi.tui import commands, menu
from nyzhi.tui.history import History
from nyzhi.tui.picker import Choices
from nyzhi.tui.widgets import InputBox

if TYPE_CHECKING:
    from nyzhi.tui.app import Console

class Composer:
    """The input box, the menu under it, pasted images, the editor and completion."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.pasted: list[Any] = []  # images pasted with Ctrl-V, sent with the next prompt
        self.input = InputBox(History(), console.submit, self.complete)
        # The menu under the input (``/`` commands, ``@`` files): its list, its kind, the
        # files walked for the ``@`` word, and the text Esc closed it on (it stays closed
        # until the text changes).
        self.menu: Choices | None = None
        self.menu_kind = ""
        self._menu_files: list[str] | None = None
        self._menu_closed_on: str | None = None
        urwid.connect_signal(self.input, "postchange", lambda *_: self.update_menu())

    def on_input(self) -> bool:
        """Whether the input has the keys (no dialog open, the tree not focused)."""
        console = self.console
        return (console.root.original_widget is console.frame
                and console.frame.focus_position == "footer")

    def take_images(self) -> tuple[Any, ...]:
        """The pasted images, for the prompt being sent (then none are left)."""
        images, self.pasted = tuple(self.pasted), []
        return images

    def put_back(self, text: str) -> None:
        """``text`` in the input again (it was not sent), the cursor at its end."""
        self.input.set_edit_text(text)
        self.input.set_edit_pos(len(text))

    # ---- the menu under the input ----------------------------------------------------

    def update_menu(self) -> None:
        """After each change of the input: open, refilter or close the menu."""
        text = self.input.edit_text
        query = menu.menu_query(text) if self.input.search is None \
            and not self.input.browsing else None
        if query is None or text == self._menu_closed_on:
            self.close_menu(remember=False)
            return
        self._menu_closed_on = None
        kind, typed = query
        if kind == menu.COMMAND:
            rt = self.console.rt
            knowledge = rt.knowledge if rt is not None else None
            choices = menu.command_choices(commands.available(commands.FEATURES),
                                           knowledge.commands if knowledge else {})
            shown = Choices(choices, empty="(no command by that name: Enter sends it as typed)")
            shown.filter("/" + typed)
        else:
            if self._menu_files is None or self.menu_kind != menu.FILE:
                self._menu_files = menu.workspace_files(self.console.cwd)
            shown = Choices(menu.file_choices(self._menu_files, typed), empty="(no such file)")
        self._show_menu(kind, shown)

    def _show_menu(self, kind: str, shown: Choices) -> None:
        footer = self.console.footer
        entry = (urwid.AttrMap(shown, "input"), footer.options())
        if self.menu is None:
            footer.contents.insert(1, entry)
        else:
            footer.contents[1] = entry
        self.menu, self.menu_kind = shown, kind
        footer.focus_position = 3

    def close_menu(self, *, remember: bool) -> None:
        if remember:
            self._menu_closed_on = self.input.edit_text
        if self.menu is not None:
            footer = self.console.footer
            del footer.contents[1]
            footer.focus_position = 2
        self.menu, self._menu_files = None, None

    def menu_key(self, key: str) -> bool:
        """With the menu open and the keys on the input: ↑↓ move in the menu, Tab puts the
        choice in the input, Enter too once the arrows chose it (and runs a command; before,
        Enter sends what was typed, as it always did), Esc closes it; False: the key is the
        input's."""
        if self.menu is None or not self.on_input():
            return False
        choice = self.menu.current()
        if key in ("up", "down"):
            self.menu.move(-1 if key == "up" else 1)
        elif key == "esc":
            self.close_menu(remember=True)
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

    # ---- completion, images, the editor ----------------------------------------------

    def complete(self, text: str) -> str | None:
        rt = self.console.rt
        knowledge = rt.knowledge if rt is not None else None
        done, candidates = commands.complete(text, self.console.cwd,
                                             knowledge.commands if knowledge else ())
        if len(candidates) > 1:
            self.console.flash("  ".join(candidates[:12]))
        return done

    async def paste_image(self) -> None:
        """Ctrl-V: the clipboard's image goes with the next prompt (as ``nyz run -i`` gives
        one); ``[image N]`` in the input marks it."""
        from nyzhi.core.protocol.prompt import ImageError, pasted_image
        from nyzhi.tui.clipboard import ClipboardError, paste_image

        try:
            data = await paste_image()
            image = pasted_image(data, f"clipboard-{len(self.pasted) + 1}.png")
        except (ClipboardError, ImageError) as exc:
            self.console.flash(str(exc))
            return
        self.pasted.append(image)
        self.input.insert_text(f"[image {len(self.pasted)}] ")
        self.console.flash(f"image {len(self.pasted)} pasted: it goes with the next prompt")

    def open_editor(self) -> None:
        """Ctrl-G and ``/editor``: the input's draft in ``$VISUAL``/``$EDITOR`` (the screen
        handed over and taken back), then what was saved is sent; saved empty: nothing is."""
        console = self.console
        if console.loop is None:
            return
        from nyzhi.tui.editor import EditorError, edit_text

        draft = self.input.edit_text
        try:
            text = edit_text(draft, console.loop.paused)
        except EditorError as exc:
            console.flash(str(exc))
            return
        finally:
            console.own_signal_keys()  # the restarted screen put the terminal's back
        if not text.strip():
            console.flash("editor: saved empty, nothing sent")
            return
        self.input.set_edit_text("")
        self.input.history.add(text)
        console.submit(text)
