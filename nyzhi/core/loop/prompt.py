"""The system prompt: assembled from sections, stable across the steps of a session.

``build_system_prompt(parts)`` joins the sections of ``SECTIONS`` (functions in
``nyzhi.core.loop.prompt_sections``) in order. The order, and why:

1. identity and environment: who the agent is and the facts it works from;
2. how to behave (reading the request, autonomy, how to work, todos, tool use, delegation):
   general guidance, most important first;
3. code quality, safety, communication: standards that hold whatever the task;
4. project context (rules, custom instructions, skills, memory, MCP servers): specific to this
   project and user, placed after the general guidance so that it wins where they differ;
5. ``extra`` (the deferred-tool list): last, because it is the one part that can change during
   a session (a ``tool_search`` discovery), and a change late in the prompt keeps more of the
   cached prefix.

A known model with a small context window gets the compact profile instead
(``COMPACT_SECTIONS``, tool descriptions cut to their first sentence): see ``PromptParts.compact``.

Everything here is a pure function of ``PromptParts``: nothing reads the clock, the disk or
git. Those facts are taken once per session (``nyzhi.core.prompt_env``), so every step of a
session sends a byte-identical prefix and providers can cache it. Things that change between
steps (todos, memory recall, briefings) belong in messages after the prefix, never here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
import trio

from nyzhi import records
from nyzhi.core.loop import prompt_sections as s
from nyzhi.core.prompt_env import Environment, recorded_environment, take_environment
from nyzhi.tools.registry import first_sentence

# The prompt-size budget (issue 20): system prompt plus every built-in tool schema, in tokens
# estimated as characters / 4. tests/nyzhi/core/loop/test_prompt.py holds the prompt to it.
FIRST_REQUEST_TOKEN_BUDGET = 8000


@records.define
class PromptParts:
    """Everything the system prompt says, gathered once per session by the runtime."""

    workspace_root: Path
    cwd: Path
    environment: Environment | None = None  # taken once per session (prompt_env)
    rules: str = ""
    role_prompt: str = ""  # replaces the identity paragraph (a subagent role's own prompt)
    custom_instructions: str = ""
    skills: Sequence[tuple[str, str]] = ()  # (name, description): an index, bodies load on use
    listing_budget: int | None = None  # characters for the skill index ([agent] listing_...)
    memory: str = ""  # saved notes injected at session start (capped by whoever fills it)
    mcp_summaries: Sequence[str] = ()  # one line per connected MCP server (nyzhi.core.runtime.mcp)
    model: str = ""
    tool_names: Sequence[str] = ()  # the agent's tools; sections skip tools it does not have
    sandbox: str = ""  # sandbox level, e.g. "workspace-write"
    trust: str = ""  # trust mode, e.g. "limited"
    extra: Sequence[str] = ()  # further sections, e.g. the deferred-tool list
    # The compact profile, for models with a small context window (the bundled offline model
    # has 8K tokens, which the full prompt and tool descriptions would mostly fill): one short
    # guidance section instead of eleven, and tool descriptions cut to their first sentence.
    compact: bool = False
    # A Claude Code output style (nyzhi.knowledge.output_styles): its text replaces the
    # communication section, and the coding sections too unless it keeps them.
    output_style: str = ""
    keep_coding: bool = True


Section = Callable[[PromptParts], str]

SECTIONS: tuple[tuple[str, Section], ...] = (
    ("identity", s.identity),
    ("environment", s.environment),
    ("reading_the_request", s.reading_the_request),
    ("autonomy", s.autonomy),
    ("how_to_work", s.how_to_work),
    ("todo_discipline", s.todo_discipline),
    ("tool_use", s.tool_use),
    ("delegation", s.delegation),
    ("code_quality", s.code_quality),
    ("safety", s.safety),
    ("communication", s.communication),
    ("project_context", s.project_context),
    ("skills", s.skills_index),
    ("memory", s.memory),
    ("mcp_servers", s.mcp_servers),
)


# The compact profile keeps the facts and the project's own context, and one short guidance
# section in place of the general ones.
COMPACT_SECTIONS: tuple[tuple[str, Section], ...] = (
    ("identity", s.identity),
    ("environment", s.environment),
    ("essentials", s.essentials),
    *(entry for entry in SECTIONS if entry[0] in (
        "project_context", "skills", "memory", "mcp_servers")),
)

# Known models whose context window is at most this get the compact profile.
COMPACT_CONTEXT_WINDOW = 16_384


# What an output style replaces: how to talk always; how to work on code unless the style
# keeps the coding instructions (Claude Code's keep-coding-instructions).
STYLE_REPLACES = ("communication",)
CODING_SECTIONS = ("how_to_work", "todo_discipline", "code_quality")


def render_sections(parts: PromptParts) -> list[tuple[str, str]]:
    """(name, text) of every section that applies, in prompt order, ``extra`` last."""
    sections = COMPACT_SECTIONS if parts.compact else SECTIONS
    if parts.output_style:
        dropped = STYLE_REPLACES + (() if parts.keep_coding else CODING_SECTIONS)
        sections = tuple((n, fn) for n, fn in sections if n not in dropped)
        at = next((i for i, (n, _) in enumerate(sections) if n == "project_context"),
                  len(sections))
        style = ("output_style", lambda p: "# Output style\n" + p.output_style)
        sections = (*sections[:at], style, *sections[at:])
    out = [(name, text) for name, fn in sections if (text := fn(parts).strip())]
    out += [("extra", text) for text in (e.strip() for e in parts.extra) if text]
    return out


def build_system_prompt(parts: PromptParts) -> str:
    return "\n\n".join(text for _, text in render_sections(parts))


def chars_to_tokens(chars: int) -> int:
    """The budget's token estimate: characters / 4, rounded up."""
    return -(-chars // 4)


def schemas_chars(schemas: Sequence[Any]) -> int:
    """Characters of the tool schemas as JSON (name, description, parameters per tool), the
    provider-neutral measure the budget uses."""
    return sum(
        len(json.dumps({"name": t.name, "description": t.description,
                        "parameters": t.parameters}, ensure_ascii=False))
        for t in schemas
    )


class SessionPrompt:
    """A session's system prompt: ``parts`` fixed at session start, plus the deferred-tool list
    read at each call. Calling it gives the prompt for the next step; the text is rebuilt only
    when the deferred list changed, so steps share one string."""

    def __init__(self, parts: PromptParts, deferred: Callable[[], str] = lambda: "",
                 mcp: Callable[[], Sequence[str]] | None = None) -> None:
        self.parts = parts
        self._deferred = deferred
        self._mcp = mcp  # one line per connected MCP server: they connect during the session
        self._key: tuple[str, tuple[str, ...]] | None = None
        self._text = ""
        self._sections: list[str] = []

    def __call__(self) -> str:
        key = (self._deferred(), tuple(self._mcp()) if self._mcp is not None else ())
        if key != self._key:
            parts = attrs.evolve(self.parts, extra=(key[0],))
            if self._mcp is not None:
                parts = attrs.evolve(parts, mcp_summaries=key[1])
            rendered = render_sections(parts)
            self._key, self._text = key, "\n\n".join(t for _, t in rendered)
            self._sections = [name for name, _ in rendered]
        return self._text

    def set_model(self, model: str) -> None:
        """The model line for the next call (``Runtime.set_model``); the profile is kept."""
        self.parts = attrs.evolve(self.parts, model=model)
        self._key = None

    def tools(self, schemas: Callable[[], Sequence[Any]]) -> Callable[[], Sequence[Any]]:
        """The tool schemas to send with this prompt: as they are, or in the compact profile
        with each description cut to its first sentence (the parameters stay described).

        Either way the same tuple comes back step after step until the tools change (the
        tooling caches its schemas), so the turn loop measures them only then."""
        if not self.parts.compact:
            return schemas
        made: list[Any] = [None, ()]  # (the full schemas, their compact form)

        def compact() -> Sequence[Any]:
            full = schemas()
            if full is not made[0]:
                made[:] = [full, tuple(attrs.evolve(t, description=first_sentence(t.description))
                                       for t in full)]
            return made[1]

        return compact

    def describe(self, tool_schemas: Sequence[Any] = ()) -> dict[str, Any]:
        """The ``prompt`` field of ``session_start``: sizes, section names and the environment
        snapshot (which a resumed session reuses so its prefix stays the same)."""
        text = self()
        tools = schemas_chars(tool_schemas)
        env = self.parts.environment
        return {
            "chars": len(text),
            "tokens": chars_to_tokens(len(text)),
            "tools_chars": tools,
            "tools_tokens": chars_to_tokens(tools),
            "sections": list(self._sections),
            "profile": "compact" if self.parts.compact else "full",
            # the snapshot itself: the converter writes it when the event is sent or saved,
            # so a run that serialises nothing never pays for the converter
            "environment": env if env is not None else {},
        }


async def session_parts(
    *, workspace: Any, cwd: Path, config: Any, resumed: Any = None, environment: Any = None,
) -> PromptParts:
    """What every agent's prompt of one session shares, gathered once at session start from
    the workspace and config. A resumed session reuses its recorded environment snapshot (same
    prefix as before); a new one takes a snapshot (``git status`` runs in a worker thread),
    unless the caller took it already (``environment``). ``agent_parts`` adds what differs
    per agent."""
    if resumed is not None:
        environment = recorded_environment(resumed.events) or environment
    if environment is None:
        environment = await trio.to_thread.run_sync(take_environment, workspace)
    from nyzhi.knowledge.output_styles import chosen_style

    style = chosen_style(workspace.root)
    return PromptParts(
        workspace_root=workspace.root,
        cwd=Path(cwd),
        environment=environment,
        rules=workspace.rules_text,
        custom_instructions=config.agent.custom_instructions or "",
        listing_budget=config.agent.listing_budget_chars,
        output_style=style.text if style is not None else "",
        keep_coding=style.keep_coding if style is not None else True,
    )


def agent_parts(
    parts: PromptParts, *, model: str, role_prompt: str, tooling: Any,
    window: int | None = None,
) -> PromptParts:
    """One agent's prompt parts: the session's, plus its model, role and tool set.
    ``window``: the model's context window when the config or its server says it (a small
    one gets the compact profile); None: what nyz's table knows."""
    return attrs.evolve(
        parts,
        model=model,
        role_prompt=role_prompt,
        tool_names=tuple(tooling.registry.names()),
        sandbox=tooling.context.sandbox.level.value if tooling.context.sandbox else "",
        trust=tooling.context.trust.mode.value if tooling.context.trust else "",
        compact=(window <= COMPACT_CONTEXT_WINDOW) if window is not None else _small_context(model),
    )


def _small_context(model: str) -> bool:
    """Whether ``model`` is known to have a small context window (unknown models get the full
    prompt: the registry's default window for them is a guess, not a fact)."""
    from nyzhi.provider.models import model_info

    info = model_info(model)
    return info.known and info.context_window <= COMPACT_CONTEXT_WINDOW
