"""``ToolFence``: the one check of which tool names an agent's role lets it call.

A role names the tools it may use (``allowed``: None for all), the ones it may not
(``disallowed``, which wins) and, for MCP tools (``mcp__SERVER__TOOL``), the servers whose
tools it may use (``mcp_servers``: None for all). The fence is enforced at two points, on
purpose: the registry's view of an agent hides fenced tools from the model (their schemas are
not sent), and the gates refuse a fenced tool the model calls anyway. Both ask this one
``allows``, so the two can never disagree about a name. (Read-only roles are a second, per-tool
rule: the gates decide it, since only they know whether a tool changes things.)
"""

from __future__ import annotations

from collections.abc import Iterable

from nyzhi import records


def _names(value: Iterable[str] | None) -> frozenset[str] | None:
    return None if value is None else frozenset(value)


@records.frozen
class ToolFence:
    """Allowed (None: all) minus disallowed, MCP tools by server (None: every server)."""

    allowed: frozenset[str] | None = None
    disallowed: frozenset[str] = frozenset()
    mcp_servers: frozenset[str] | None = None

    @classmethod
    def of(cls, allowed: Iterable[str] | None = None, disallowed: Iterable[str] | None = None,
           mcp_servers: Iterable[str] | None = None) -> ToolFence:
        return cls(_names(allowed), frozenset(disallowed or ()), _names(mcp_servers))

    def allows(self, name: str) -> bool:
        if name in self.disallowed:
            return False
        if self.allowed is not None and name not in self.allowed:
            return False
        if self.mcp_servers is not None and name.startswith("mcp__"):
            server = name.split("__")[1] if name.count("__") >= 2 else ""
            return server in self.mcp_servers
        return True

    def narrowed(self, other: ToolFence) -> ToolFence:
        """Both fences at once: a child's fence never lets through what its parent's stops."""

        def both(a: frozenset[str] | None, b: frozenset[str] | None) -> frozenset[str] | None:
            return a if b is None else b if a is None else a & b

        return ToolFence(both(self.allowed, other.allowed), self.disallowed | other.disallowed,
                         both(self.mcp_servers, other.mcp_servers))


OPEN = ToolFence()  # no fence: every tool
