"""The ``semantic_search`` tool: the project's semantic index, asked by meaning.

Registered (read-only) by the runtime when ``[index] enabled``; it asks the ``/services/index``
actor, so a search never waits for a running build. A project that has not been indexed gets
an error telling how to build the index.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from nyzhi.index.search import MODES, Hit, format_hits
from nyzhi.tools.base import Permission, ToolContext, ToolResult
from nyzhi.tools.builtin.common import ArgError, BuiltinTool, error, opt_int, opt_str, req_str

SearchFn = Callable[[str, int, str], Awaitable[list[Hit]]]


class SemanticSearchTool(BuiltinTool):
    name = "semantic_search"
    description = (
        "Search the project's code and docs by meaning (local semantic index, fused with "
        "keyword ranking): describe what the code does, e.g. 'where are retries with backoff "
        "handled'. Returns file:line ranges with the matching chunks. Use grep for exact text."
    )
    parameters = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to look for, in words."},
            "max_results": {"type": "integer", "description": "How many chunks (default 5, at most 20)."},
            "mode": {"type": "string", "enum": list(MODES),
                     "description": "hybrid (default), vector or keyword."},
        },
        "required": ["query"],
    }
    permission = Permission.READ_ONLY

    def __init__(self, search: SearchFn) -> None:
        self._search = search

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        from nyzhi.index.embed import EmbeddingError
        from nyzhi.index.service import NoIndex

        query = req_str(args, "query").strip()
        if not query:
            raise ArgError("'query' must not be blank")
        k = opt_int(args, "max_results", 5, minimum=1, maximum=20)
        mode = opt_str(args, "mode") or "hybrid"
        if mode not in MODES:
            raise ArgError(f"'mode' must be one of {', '.join(MODES)}, got {mode!r}")
        try:
            hits = await self._search(query, k, mode)
        except (NoIndex, EmbeddingError) as exc:
            return error(str(exc))
        if not hits:
            return ToolResult(output=f"No indexed chunk matches {query!r}", metadata={"count": 0})
        return ToolResult(output=format_hits(hits), metadata={"count": len(hits)})
