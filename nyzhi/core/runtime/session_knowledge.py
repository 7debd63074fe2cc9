"""A session's memory, skills, custom commands and plan mode, as the runtime uses them.

Gathered once when the runtime opens (``load_session_knowledge``), because the system prompt
is fixed for the session (its prefix is what providers cache):

- ``memory_text`` (``[memory] auto_memory``): the user memory and the project memory index,
  capped, for ``PromptParts.memory``;
- ``skills``: the skill index, for ``PromptParts.skills``;
- ``commands``: custom slash commands, which front ends expand with ``expand`` before
  submitting;
- ``notices``: skill and command files left out (front matter that is not YAML, a name too
  long) or with unknown keys, one line each, for the runtime's notices.

What changes from message to message travels with the message instead (``turn_context``,
which the main agent's prompt step appends to each user message): the memory facts the recall
store finds relevant to it, and the plan-mode note while plan mode is on.

Plan mode (``set_plan_mode``) is the gates' ``plan_mode`` on the main agent's tools and on the
template later agents are built from: the model is sent only read-only tools and any other
call is refused by the gate. Leaving it returns the
"execute the plan" message for the front end to send when a plan was written.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import trio

from nyzhi import records
from nyzhi.knowledge import plans
from nyzhi.knowledge.commands import Command, expand, load_commands
from nyzhi.knowledge.memory import MemoryStore
from nyzhi.knowledge.recall import RecallStore, recall_block
from nyzhi.knowledge.skills import skills_index

log = logging.getLogger(__name__)


@records.define(eq=False)
class SessionKnowledge:
    root: Path
    session_id: str
    memory_text: str = ""
    skills: tuple[tuple[str, str], ...] = ()
    commands: Mapping[str, Command] = attrs.field(factory=dict)
    recall: RecallStore | None = None  # None: [memory] auto_memory is off
    # The main agent's Tooling first, then the factory's template (which agents spawned
    # later start from): their gates hold plan mode.
    toolings: tuple[Any, ...] = ()
    notices: tuple[str, ...] = ()
    # Told of every switch of plan mode (the session log's ``set_plan_mode``), so a resumed
    # session starts in the mode it was left in, whichever front end resumes it.
    on_plan_mode: Any = None
    _expanded: dict[str, tuple[str, ...]] = attrs.field(factory=dict, init=False)

    # ---- plan mode ------------------------------------------------------------------------

    @property
    def plan_mode(self) -> bool:
        return bool(self.toolings and self.toolings[0].gates.plan_mode)

    @property
    def plan_path(self) -> Path:
        return plans.plan_path(self.root, self.session_id)

    def set_plan_mode(self, on: bool) -> str | None:
        """Switch plan mode; on leaving it, the message that executes the plan (None when no
        plan was written, or when not leaving)."""
        if not self.toolings:
            raise RuntimeError("plan mode needs the main agent's tools")
        was = self.plan_mode
        for tooling in self.toolings:
            tooling.gates.plan_mode = on
        if was != on and self.on_plan_mode is not None:
            self.on_plan_mode(on)
        if was and not on and self.plan_path.is_file():
            return plans.execute_plan_prompt(self.plan_path)
        return None

    # ---- per message ----------------------------------------------------------------------

    def expand(self, text: str) -> str:
        """``text`` with a leading custom ``/name args`` expanded (else unchanged). An
        expansion is remembered until it is sent, so ``prepare`` knows it came from a command
        file."""
        expanded = expand(text, self.commands)
        if expanded != text:
            from nyzhi.knowledge.commands import split_invocation

            name = (split_invocation(text) or ("", ""))[0]
            if len(self._expanded) > 32:
                self._expanded.clear()
            self._expanded[expanded] = self.commands[name].allowed_tools
        return expanded

    async def prepare(self, prompt: str) -> str:
        """A command file's expansion with its ``!`cmd` `` lines run and ``@file``s read, as
        the main agent's tool calls (``nyzhi.core.runtime.command_files``); other text unchanged."""
        allowed = self._expanded.pop(prompt, None)
        if allowed is None or not self.toolings:
            return prompt
        from nyzhi.core.runtime.command_files import prepare

        return await prepare(prompt, allowed, self.toolings[0])

    async def turn_context(self, prompt: str) -> str:
        """What goes with a user message: recalled memory facts and the plan-mode note."""
        blocks = []
        if self.recall is not None:
            recall = self.recall
            try:
                facts = await trio.to_thread.run_sync(
                    lambda: recall.recall(prompt, exclude=self.memory_text))
            except (OSError, sqlite3.Error) as exc:
                # The recall index is a cache of the memory files: on a full or read-only
                # data directory the session goes on without it (memory_read still works).
                log.warning("memory recall is off for this session: %s: %s",
                            recall.db_path, exc)
                self.recall = None
            else:
                blocks.append(recall_block(facts))
        if self.plan_mode:
            blocks.append(plans.PLAN_MODE_NOTE)
        return "\n\n".join(b for b in blocks if b)


def _gather(config: Any, root: Path, session_id: str,
            env: Mapping[str, str] | None) -> SessionKnowledge:
    auto = bool(config.memory.auto_memory)
    notes: list[str] = []
    from nyzhi.knowledge.output_styles import chosen_style

    chosen_style(root, notes)  # only its notices: the prompt reads it (core.prompt.session_parts)
    return SessionKnowledge(
        root=root,
        session_id=session_id,
        memory_text=MemoryStore.for_workspace(root, env).prompt_text() if auto else "",
        skills=skills_index(root, notes),
        commands=load_commands(root, config.agent.commands, notes),
        recall=RecallStore.for_workspace(root, env) if auto else None,
        notices=tuple(notes),
    )


async def load_session_knowledge(
    config: Any, root: Path, session_id: str, env: Mapping[str, str] | None = None
) -> SessionKnowledge:
    """Read memory, skills and commands once for the session (file reads, in a worker
    thread)."""
    return await trio.to_thread.run_sync(_gather, config, Path(root), session_id, env)
