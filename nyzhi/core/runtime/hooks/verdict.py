"""What one hook process said, read: shared by nyz's reading (``runner``) and Claude Code's
(``claude_out``), which the runner combines into one ``HookOutcome``."""

from __future__ import annotations

from typing import Any

from nyzhi import records


@records.frozen
class Verdict:
    """``blocked``: refuse the action (for a Claude ``Stop`` hook: do not stop, go on);
    ``approved``/``ask``: a PreToolUse permission decision; ``message``: the reason the model
    reads; ``context``: text added to the model's context; ``feedback``: text the model reads
    after a tool's result (PostToolUse); ``updated_input``: Claude's ``updatedInput``;
    ``stop``/``stop_reason``: ``continue: false`` (the turn ends); ``suppress``:
    ``suppressOutput``; ``warnings``: for the person."""

    blocked: bool = False
    approved: bool = False
    ask: bool = False
    message: str = ""
    context: str = ""
    feedback: str = ""
    updated_input: dict[str, Any] | None = None
    stop: bool = False
    stop_reason: str = ""
    suppress: bool = False
    warnings: tuple[str, ...] = ()
