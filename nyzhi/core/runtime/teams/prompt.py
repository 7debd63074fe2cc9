"""What a teammate is told it is (its role prompt), on top of its role's own prompt."""

from __future__ import annotations

from typing import Any

from nyzhi.team_files.framing import READING, frame_messages, quote
from nyzhi.team_files.names import LEAD, NAME_RE
from nyzhi.textcut import cut

IDLE_NOTICE = "idle_notification"
# How much of each idle teammate's last answer the lead's summary shows (one line each): the
# teammate's report, if it sent one, came as a message and is shown whole.
EXCERPT_CHARS = 160

TEAM_RULES = """You are '{member}', a teammate in team '{team}' (members: {members}; the lead is \
'{lead}'). Messages from your team arrive in your thread as user messages. {reading} Answer \
the sender with send_team_message (to a member, or 'all'), since \
nobody reads your final message unless you send it. The team's task board is shared: use \
task_list to see it, claim a task with task_update (status in_progress; a task has one owner), \
and mark it completed when it is done: that unblocks the tasks waiting on it. Work on what you \
were asked or claimed, keep your messages short and concrete, and when you have nothing left \
to do, stop: the lead is told you are idle. Other members may edit the same repository at the \
same time, so re-read a file right before you edit it."""


def teammate_prompt(team: str, member: str, members: list[str], role_prompt: str = "") -> str:
    rules = TEAM_RULES.format(member=member, team=team, lead=LEAD, reading=READING,
                              members=", ".join(members) or member)
    return "\n\n".join(p for p in (role_prompt.strip(), rules) if p)


def format_inbox(messages: list[Any]) -> str:
    """Unread messages as one user message, framed so none can forge another
    (``nyzhi.team_files.framing``)."""
    return frame_messages(messages)


def format_for_lead(messages: list[Any]) -> str:
    """The lead's unread messages as one summary for its next model call: the teammates'
    messages (their reports) framed whole, oldest first, then every idle notification folded
    into one block: an unquoted header naming who is idle, and one quoted line each with the
    start of that teammate's last answer. A hundred teammates going idle cost the lead's
    context a hundred short lines, not a hundred messages with their whole answers."""
    notices = [m for m in messages if m.kind == IDLE_NOTICE]
    if not notices:
        return frame_messages(messages)
    parts = [frame_messages([m for m in messages if m.kind != IDLE_NOTICE])]
    latest: dict[str, str] = {}
    for m in notices:  # a teammate idle twice is shown once, with its latest answer
        name = m.sender if isinstance(m.sender, str) and NAME_RE.fullmatch(m.sender) \
            else "unknown"
        latest.pop(name, None)
        latest[name] = _excerpt(name, m.text)
    names = list(latest)
    count = f"{len(names)} teammate{'s' if len(names) != 1 else ''}"
    lines = [f"[idle notifications] {count} idle: {', '.join(names)}"]
    excerpts = [f"{n}: {e}" for n, e in latest.items() if e]
    if excerpts:
        lines.append(quote("\n".join(excerpts)))
    parts.append("\n".join(lines))
    return "\n\n".join(p for p in parts if p)


def _excerpt(sender: str, text: str) -> str:
    """The start of a notice's last answer, on one line (every line boundary a space)."""
    body = text.strip()
    for prefix in (f"{sender} is idle.", "Last answer:"):
        if body.startswith(prefix):
            body = body[len(prefix):].strip()
    return cut(body, EXCERPT_CHARS, rstrip=True)


def teammate_role(role: Any) -> Any:
    """A role as a teammate has it: whatever its fence, a teammate keeps the tools it talks to
    its team with (a reviewer's read-only fence allows them: they write no workspace file)."""
    import attrs

    from nyzhi.tools.builtin.team import TEAMMATE_TOOLS

    if role.allowed_tools is None:
        return role
    extra = tuple(t for t in TEAMMATE_TOOLS if t not in role.allowed_tools)
    return attrs.evolve(role, allowed_tools=(*role.allowed_tools, *extra))
