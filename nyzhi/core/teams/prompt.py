"""What a teammate is told it is (its role prompt), on top of its role's own prompt."""

from __future__ import annotations

from typing import Any

from nyzhi.teams.framing import READING, frame_messages
from nyzhi.teams.names import LEAD

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
    (``nyzhi.teams.framing``)."""
    return frame_messages(messages)


def teammate_role(role: Any) -> Any:
    """A role as a teammate has it: whatever its fence, a teammate keeps the tools it talks to
    its team with (a reviewer's read-only fence allows them: they write no workspace file)."""
    import attrs

    from nyzhi.tools.builtin.team import TEAMMATE_TOOLS

    if role.allowed_tools is None:
        return role
    extra = tuple(t for t in TEAMMATE_TOOLS if t not in role.allowed_tools)
    return attrs.evolve(role, allowed_tools=(*role.allowed_tools, *extra))
