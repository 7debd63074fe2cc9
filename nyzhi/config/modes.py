"""The shared vocabularies, one definition each: trust modes, sandbox levels, API styles,
teammate modes and todo statuses.

They live here, at the bottom layer, because the config schema types its keys with them and
everything above (the gates, the sandbox, the providers, teams, the tools, the command line,
the runtime) imports them from here. They are ``StrEnum``s, so a member compares equal to its
TOML or JSON spelling and serialises as it (``TrustMode.FULL == "full"``, ``json.dumps``
writes ``"full"``): the strings in config files, team files, plans and stream-json are the
members' values, unchanged. (Agent statuses are the events' vocabulary:
``nyzhi.core.events.AgentStatus``.)

The config file accepts only the canonical spellings; the command line also takes a few
aliases (``--trust auto-edit``, ``--sandbox workspace``), listed here so they are one table.
"""

from __future__ import annotations

import enum
from typing import TypeVar


class TrustMode(enum.StrEnum):
    """How much runs without asking: ``off`` asks for every mutating call, ``limited`` approves
    ``allow_tools`` (within ``allow_paths``), ``autoedit`` approves file edits, ``full`` all."""

    OFF = "off"
    LIMITED = "limited"
    AUTOEDIT = "autoedit"
    FULL = "full"


class SandboxLevel(enum.StrEnum):
    """Where tools may write: nowhere, inside the workspace (and writable roots), anywhere."""

    READ_ONLY = "read-only"
    WORKSPACE_WRITE = "workspace-write"
    FULL_ACCESS = "full-access"


class ApiStyle(enum.StrEnum):
    """The wire format a provider speaks (``[provider.NAME] api_style``)."""

    OPENAI = "openai"
    OPENAI_RESPONSES = "openai-responses"
    ANTHROPIC = "anthropic"
    GEMINI = "gemini"
    OLLAMA = "ollama"
    LLAMA_CPP = "llama-cpp"


class TeammateMode(enum.StrEnum):
    """Where a team's teammates run: agents in the lead's process, or a process each."""

    IN_PROCESS = "in-process"
    PROCESS = "process"


class TodoStatus(enum.StrEnum):
    """A todo's status, in ``todowrite`` and in a plan's ``todos``."""

    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    CANCELLED = "cancelled"


# How a todo is shown in a list (``todoread``, a subagent's briefing).
TODO_MARKS: dict[str, str] = {
    TodoStatus.PENDING: "[ ]", TodoStatus.IN_PROGRESS: "[~]", TodoStatus.COMPLETED: "[x]",
    TodoStatus.CANCELLED: "[-]",
}


E = TypeVar("E", bound=enum.StrEnum)

TRUST_ALIASES: dict[str, TrustMode] = {
    "auto_edit": TrustMode.AUTOEDIT,
    "auto-edit": TrustMode.AUTOEDIT,
}
SANDBOX_ALIASES: dict[str, SandboxLevel] = {
    "readonly": SandboxLevel.READ_ONLY,
    "workspace": SandboxLevel.WORKSPACE_WRITE,
    "full": SandboxLevel.FULL_ACCESS,
    "danger-full-access": SandboxLevel.FULL_ACCESS,
}


def choices(kind: type[enum.StrEnum]) -> tuple[str, ...]:
    """The canonical spellings, in declaration order."""
    return tuple(member.value for member in kind)


def spelled(kind: type[enum.StrEnum]) -> str:
    """The choices as a phrase for help and errors: "read-only, workspace-write or full-access"."""
    names = choices(kind)
    return f"{', '.join(names[:-1])} or {names[-1]}"


def parse_trust(text: str) -> TrustMode:
    """A trust mode from the command line (canonical name or alias); ValueError otherwise."""
    found = TRUST_ALIASES.get(text) or _member(TrustMode, text)
    if found is None:
        raise ValueError(
            f"invalid trust mode {text!r}: expected one of {', '.join(choices(TrustMode))}"
        )
    return found


def parse_sandbox(text: str) -> SandboxLevel:
    """A sandbox level from the command line (canonical name or alias); ValueError otherwise."""
    found = SANDBOX_ALIASES.get(text) or _member(SandboxLevel, text)
    if found is None:
        raise ValueError(f"invalid sandbox {text!r}: expected {spelled(SandboxLevel)}")
    return found


def _member(kind: type[E], text: str) -> E | None:
    try:
        return kind(text)
    except ValueError:
        return None
