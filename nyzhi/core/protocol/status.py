"""One snapshot of a session for every front end, and the one way each is written out.

``SessionStatus`` is what a person asks when they glance at a status bar or type
``/status``: which provider and model, how far the agents may go (trust, sandbox, plan
mode), how full the main agent's context is, what the session has spent, the agent tree,
what waits for an answer and what runs in the background. It is built once
(``Session.status``) and written out by ``status_line`` (the console's bar, the line chat's,
the web page's) and ``status_card`` (``/status`` in every front end), so the four front ends
can no longer give four answers. The context share is counted like ``/context`` counts it:
system prompt, tool definitions and the thread, from the loop's own ``context_usage``.
"""

from __future__ import annotations

import attrs

from nyzhi import records
from nyzhi.core.events import AgentState

RUNNING = (AgentState.RUNNING.value, AgentState.PENDING_INIT.value)


def context_share(used: int, window: int) -> str:
    """``used`` tokens of a ``window`` as a whole percentage: ``<1%`` for a share that is not
    nothing but rounds to 0 (``0%`` beside 732 tokens read as a fault), at most ``100%``; ""
    when the window is not known."""
    if window <= 0:
        return ""
    share = 100 * used / window
    if 0 < share < 1:
        return "<1%"
    return f"{min(100, round(share))}%"


@records.frozen
class AgentLine:
    """One placed agent: its path, kind (main, subagent, teammate…), status and own use."""

    path: str
    kind: str
    status: str
    tokens: int = 0
    cost_usd: float = 0.0


@records.frozen
class SessionStatus:
    """A session at one instant (``Session.status``)."""

    session_id: str
    cwd: str
    provider: str
    model: str
    trust: str
    sandbox: str  # the level, or "none"
    plan_mode: bool
    context_used: int  # the next request's estimated tokens, as /context counts them
    context_window: int
    tokens: int  # input + output, the whole session
    cost_usd: float
    thinking: str = ""  # the level asked for ("" as configured)
    agents: tuple[AgentLine, ...] = attrs.field(default=(), converter=records.as_tuple)
    approvals: int = 0  # approvals and questions waiting for an answer
    background: tuple[str, ...] = attrs.field(default=(), converter=records.as_tuple)

    @property
    def context(self) -> str:
        return context_share(self.context_used, self.context_window)

    @property
    def running(self) -> int:
        return sum(1 for a in self.agents if a.status in RUNNING)


def status_line(status: SessionStatus, *, usage: bool = True, width: int | None = None) -> str:
    """The one status line: ``[PLAN · ]provider/model · trust T · sandbox S · ctx N% ·
    T tok $C · agents R/N[ · K waiting]``. Without ``usage`` (the web page counts its tokens
    from the events itself) the tokens and cost are left out. With ``width`` (a narrow
    terminal) the least useful parts go first, so context and cost stay: the agents count,
    the sandbox, the trust mode, the provider's name, then the token count."""
    parts: dict[str, str] = {}
    if status.plan_mode:
        parts["plan"] = "PLAN"
    parts["model"] = f"{status.provider}/{status.model}"
    parts["trust"] = f"trust {status.trust}"
    parts["sandbox"] = f"sandbox {status.sandbox}"
    if status.context:
        parts["ctx"] = f"ctx {status.context}"
    if usage:
        parts["usage"] = f"{status.tokens} tok ${status.cost_usd:.3f}"
    parts["agents"] = f"agents {status.running}/{max(1, len(status.agents))}"
    if status.approvals:
        parts["waiting"] = f"{status.approvals} waiting"
    if width is not None:
        for drop in _DROP_ORDER:
            if len(" · ".join(parts.values())) <= width:
                break
            if drop == "provider":
                parts["model"] = status.model
            elif drop == "tokens" and "usage" in parts:
                parts["usage"] = f"${status.cost_usd:.3f}"
            else:
                parts.pop(drop, None)
    return " · ".join(parts.values())


# What a narrow status line gives up first (``status_line(width=...)``).
_DROP_ORDER = ("agents", "sandbox", "trust", "provider", "tokens")


def status_card(status: SessionStatus, extra: tuple[tuple[str, str], ...] = ()) -> str:
    """``/status``: the status line, then one labelled row per fact (labels right-aligned,
    so every row reads ``label value``); ``extra`` rows are the front end's own (the
    console's theme)."""
    agents = f"{status.running} running of {max(1, len(status.agents))}"
    rows = [
        ("session", status.session_id),
        ("cwd", status.cwd),
        ("model", f"{status.provider}/{status.model}"),
        ("trust", status.trust),
        ("sandbox", status.sandbox),
        ("plan mode", "on (read-only tools)" if status.plan_mode else "off"),
        ("thinking", status.thinking or "as configured"),
        ("context", f"~{status.context_used:,} of {status.context_window:,} tokens"
                    + (f" ({status.context})" if status.context else "")),
        ("usage", f"{status.tokens:,} tokens, ${status.cost_usd:.3f}"),
        ("agents", agents),
        *((f"agent {a.path.rsplit('/', 1)[-1]}", f"{a.status} · {a.tokens:,} tok "
           f"${a.cost_usd:.3f} ({a.kind})") for a in status.agents if a.kind != "main"),
        ("approvals", f"{status.approvals} waiting" if status.approvals else "none waiting"),
        ("background", ", ".join(status.background) or "none"),
        *extra,
    ]
    width = max(len(label) for label, _value in rows)
    return "\n".join([status_line(status)] + [f"{label:>{width}} {value}"
                                                for label, value in rows])
