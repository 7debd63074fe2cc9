"""The console's agent tree (F2): the agents and background processes of the session beside
the conversation, and what the person does from it.

Its own part because the tree is the one place the console acts on agents other than the main
one: show one's conversation (what is typed then goes to it), cancel one or its subtree,
resume a closed one, look at or kill a background process, and start a background agent
(``& TASK``). The rows come from the one view model (``AgentPanel.tree``, reduced from the
events as every front end's is); each action goes through the runtime from a task of the
console's nursery, and says its outcome on the notice line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nyzhi.core.protocol import Session, ops
from nyzhi.tui.transcript import PANEL_WIDTH
from nyzhi.tui.widgets import AgentPanel

if TYPE_CHECKING:
    from nyzhi.tui.app import Console


class AgentTree:
    """The panel, whether it is on screen, and the actions of its rows."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.shown = False  # the panel is on screen (F2)
        self.panel = AgentPanel(self.show, self.cancel, self.resume, self.act_on_process)

    def reset(self, rt: Any) -> None:
        """A new runtime: no agents yet, its background shells' table."""
        self.panel.tree.clear()
        self.panel.shells = rt.tooling.context.shells

    def added(self, agent: str) -> None:
        """A conversation was made for ``agent``: its row."""
        self.panel.agent(agent)
        if self.shown:
            self.panel.refresh(self.console.shown)

    def changed(self) -> None:
        if self.shown:
            self.panel.refresh(self.console.shown)
        self.console.refresh_status()

    def toggle(self) -> None:
        """F2: open the tree with the focus in it, or close it and go back to the main agent."""
        console = self.console
        self.shown = not self.shown
        if self.shown:
            self.panel.refresh(console.shown)
            console.body.contents.append((self.panel, console.body.options("given", PANEL_WIDTH)))
            console.body.focus_position = 1
            console.frame.focus_position = "body"
        else:
            del console.body.contents[1:]
            self.show(console.main_path)

    def show(self, path: str) -> None:
        """``path``'s conversation on screen; what is typed goes to it."""
        console = self.console
        console.transcript.show(path)
        console.shown = path
        self.panel.refresh(path)
        console.frame.focus_position = "footer"
        console.flash("" if path == console.main_path
                      else f"showing {path}: input goes to it (F2 back)")

    def cancel(self, path: str, scope: str) -> None:
        """Cancel one agent's running turn (``scope="turn"``) or it and every agent under it
        (``"subtree"``) from the tree, through ``Runtime.cancel``."""
        console = self.console
        if console.rt is None or console.nursery is None:
            return
        console.nursery.start_soon(self._cancel, console.rt, path, scope)

    async def _cancel(self, rt: Any, path: str, scope: str) -> None:
        name = path.rsplit("/", 1)[-1]
        what = name if scope == "turn" else f"{name} and its subagents"
        self.console.flash(f"cancelled {what}" if await rt.cancel(path, scope)
                           else f"{what}: nothing running to cancel")

    def resume(self, path: str) -> None:
        """Reopen a closed or interrupted subagent from the tree (``Runtime.agents.resume``):
        it is ``idle`` on its kept thread, and what is typed while it is shown goes to it."""
        console = self.console
        if console.rt is None or console.nursery is None:
            return
        if path == console.main_path:
            console.flash("the main agent is always open")
            return
        console.nursery.start_soon(self._resume, console.rt, path)

    async def _resume(self, rt: Any, path: str) -> None:
        try:
            await Session(rt).submit(ops.ResumeAgent(path))
        except Exception as exc:  # a parent that is shut down, a broken role file
            self.console.flash(f"cannot resume {path.rsplit('/', 1)[-1]}: {exc}")
            return
        self.console.flash(f"resumed {path.rsplit('/', 1)[-1]}: Enter shows it, then type to it")

    def act_on_process(self, shell_id: str, action: str) -> None:
        """A background process's row in the tree: Enter shows its last lines in the shown
        conversation, ``k`` kills it (its whole group, as ``kill_shell``)."""
        console = self.console
        table = console.rt.tooling.context.shells if console.rt is not None else None
        shell = table.shells.get(shell_id) if table is not None else None
        if shell is None or console.nursery is None:
            return
        if action == "kill":
            if shell.kill_now is None:
                console.flash(f"{shell_id} is not running")
            else:
                console.nursery.start_soon(shell.kill_now)
                console.flash(f"killing {shell_id}")
            return
        lines = shell.ring.tail_lines(20)
        console.stream(console.shown).note(("notice", f"{shell_id} ({shell.status()}): "
                                            f"{' '.join(shell.command.split())[:80]}\n"
                                            + ("\n".join(lines) or "(no output yet)")))
        console.transcript.follow()

    async def background_prompt(self, rt: Any, task: str) -> None:
        """``& TASK``: the task on a subagent of the main agent (the default role), as
        ``spawn_agent`` would start it: in the tree (F2) to watch, cancel or resume; its
        summary is posted into the conversation when it finishes."""
        console = self.console
        main = console.stream(console.main_path)
        try:
            started = await rt.agents.spawn(rt.main_agent.spec.path, task)
        except Exception as exc:  # the thread or depth limit: say why
            main.note(("error", f"cannot start a background agent: {exc}"))
            console.transcript.follow()
            return
        ident, name = started["agent_id"], started["agent_nickname"]
        main.note(("notice", f"& {name} works on it in the background (F2 shows it)"))
        console.transcript.follow()
        while True:
            waited = await rt.agents.wait([ident])
            if not waited["timed_out"]:
                break
        [done] = waited["agents"]
        summary = done.get("message") or done.get("reason") or ""
        main.note(("notice", f"& {name} {done['status']}: " + (summary or "(no summary)")))
        console.transcript.follow()
