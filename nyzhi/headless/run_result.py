"""Why a run ended: the stable ``subtype`` and the human ``error`` of a headless ``result``.

A script reading ``nyz run --output-format json|stream-json`` switches on ``subtype``; the
names below are a contract (README, "The result"): extend, never rename. ``success`` is the
only one with ``is_error`` false.

The reason comes from what the run saw: the main agent's turn (its outcome, the exception it
failed with, the ``error`` events it emitted), a signal, the team, the session's save faults.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any

from nyzhi import records
from nyzhi.core.protocol import events as ev


class ResultSubtype(enum.StrEnum):
    SUCCESS = "success"
    BUDGET_TOKENS = "budget_tokens"  # a --budget-tokens / [agent.agents.budget] limit
    BUDGET_USD = "budget_usd"
    BUDGET_TIME = "budget_time"
    BUDGET_STEPS = "budget_steps"
    MAX_STEPS = "max_steps"  # --max-steps / agent.max_steps tool-calling steps
    CANCELLED = "cancelled"  # SIGINT, SIGTERM, SIGHUP
    PROVIDER_ERROR = "provider_error"  # the model call failed (after its retries)
    TOOL_ERROR = "tool_error"  # the tool step failed (not a tool: its error goes to the model)
    BLOCKED = "blocked"  # a user_prompt_submit hook refused the prompt
    STARTUP_ERROR = "startup_error"  # config, provider or session: nothing ran
    SAVE_ERROR = "save_error"  # answered, but the session could not be saved
    TEAMMATE_ERROR = "teammate_error"  # a teammate's turn or process failed (team runs)
    OUTPUT_SCHEMA = "output_schema"  # answered, but not as --output-schema asked (issue 32)
    ERROR = "error"  # anything else


@records.frozen
class Failure:
    subtype: ResultSubtype
    message: str


_BUDGETS = {"tokens": ResultSubtype.BUDGET_TOKENS, "usd": ResultSubtype.BUDGET_USD,
            "time": ResultSubtype.BUDGET_TIME, "steps": ResultSubtype.BUDGET_STEPS}


def budget_subtype(reason: str) -> ResultSubtype:
    """``budget: tokens 126/120`` (``nyzhi.core.runtime.budget``) -> ``budget_tokens``."""
    words = reason.removeprefix("budget:").split()
    return _BUDGETS.get(words[0] if words else "", ResultSubtype.ERROR)


def _last(errors: Iterable[ev.Error], agent: str, kind: str) -> ev.Error | None:
    found = None
    for error in errors:
        if error.agent == agent and error.kind == kind:
            found = error
    return found


def turn_failure(handle: Any, errors: list[ev.Error],
                 agent: str = ev.MAIN_AGENT) -> Failure | None:
    """Why ``handle``'s turn (a ``TurnHandle`` of ``agent``) failed, or None if it answered.
    ``errors``: the error events the run saw."""
    from nyzhi.core.protocol import describe_error, failure_kind

    outcome = handle.outcome
    budget = _last(errors, agent, "budget")
    if outcome is not None and outcome.is_error:
        if outcome.stop_reason == "budget":
            return Failure(budget_subtype(outcome.reason), outcome.reason)
        if outcome.stop_reason in ("max_steps", "blocked"):
            said = _last(errors, agent, outcome.stop_reason)
            subtype = ResultSubtype(outcome.stop_reason)
            return Failure(subtype, said.message if said else outcome.stop_reason)
        return Failure(ResultSubtype.ERROR, outcome.reason or outcome.stop_reason)
    if handle.error is not None:
        exc = handle.error
        said = _last(errors, agent, "turn")
        message = said.message if said else describe_error(exc)
        kind = failure_kind(exc)
        if kind == "provider":
            return Failure(ResultSubtype.PROVIDER_ERROR, message)
        if kind == "tool":
            return Failure(ResultSubtype.TOOL_ERROR, message)
        return Failure(ResultSubtype.ERROR, message)
    if outcome is None:  # cancelled: by the wall-time budget, or by whoever cancelled it
        if budget is not None:
            return Failure(budget_subtype(budget.message), budget.message)
        return Failure(ResultSubtype.CANCELLED, "the turn was cancelled")
    return None
