"""Which ``[[nodes]]`` entry a tool call means: the one helper ``bash``, ``verify``, the git
tools and the ``nodes`` tool resolve a ``node`` argument with.

A model types node names as it types everything else, and ``buidl1`` for ``build1`` used to
fail the call. A name that is not configured is matched to the closest configured one when the
match is clear (``difflib``'s ratio, the original Nixi's answer to the same typos), and the
result says which node ran the command, so the model (and the user reading the transcript) sees
the substitution instead of trusting it blindly. An unclear name is still an error listing the
nodes: running a command on the wrong host is worse than asking again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nyzhi import records

#: How alike a typed name must be to a configured one to stand for it (``difflib`` ratio).
MATCH_CUTOFF = 0.75


class NodeError(ValueError):
    """No configured node is meant; the message lists the configured ones."""


@records.frozen
class ResolvedNode:
    name: str  # the configured name
    executor: Any
    asked: str  # what the call said

    @property
    def note(self) -> str:
        """Said in the result when the call's name was matched to another one."""
        if self.asked == self.name:
            return ""
        return f"node {self.asked!r} is not configured; ran on {self.name!r}, the closest name"


def resolve_node(nodes: Mapping[str, Any], asked: Any) -> ResolvedNode:
    """The configured node ``asked`` names, exactly or by a clear fuzzy match."""
    if not isinstance(asked, str) or not asked.strip():
        raise NodeError("'node' must be a string naming a configured node")
    asked = asked.strip()
    if not nodes:
        raise NodeError(f"node {asked!r} requested but no nodes are configured")
    if asked in nodes:
        return ResolvedNode(asked, nodes[asked], asked)
    folded = {name.lower(): name for name in nodes}
    if asked.lower() in folded:
        name = folded[asked.lower()]
        return ResolvedNode(name, nodes[name], asked)
    import difflib

    close = difflib.get_close_matches(asked.lower(), list(folded), n=2, cutoff=MATCH_CUTOFF)
    ratios = [difflib.SequenceMatcher(None, asked.lower(), c).ratio() for c in close]
    if close and (len(close) == 1 or ratios[0] - ratios[1] >= 0.1):  # one clear winner
        name = folded[close[0]]
        return ResolvedNode(name, nodes[name], asked)
    names = ", ".join(sorted(nodes))
    raise NodeError(f"unknown node {asked!r}; configured nodes: {names}")
