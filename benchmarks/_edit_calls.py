"""A real ``edit`` tool call, timed: the baseline of the benchmarks that price what a write
adds (checkpoints, write leases, the stale-write guard).

One call goes through ``execute_calls`` (gates in trust mode full, the sandbox's path check,
the atomic write and the change record) on a file in a temporary workspace, as an agent's does;
the benchmarks differ only in the context they give it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nyzhi.tools.base import ToolContext, TrustMode
from nyzhi.tools.builtin.files_write import EditTool
from nyzhi.tools.execution import ToolCallRequest, execute_calls
from nyzhi.tools.gates import Gates, TrustPolicy
from nyzhi.tools.registry import ToolRegistry
from nyzhi.tools.sandbox import SandboxLevel, SandboxPolicy

BODY = "".join(f"line_{i} = {i}  # some code of realistic width, a comment or two\n"
               for i in range(320))  # ~20 KB


def edit_context(root: Path, agent_path: str = "/agents/main/w", **fields: Any) -> ToolContext:
    """A context writing in workspace ``root`` under the workspace-write sandbox; ``fields``
    add what is measured (``leases=``, ``seen=``)."""
    return ToolContext(
        workspace_root=root, cwd=root, agent_path=agent_path,
        sandbox=SandboxPolicy(SandboxLevel.WORKSPACE_WRITE, root, allow_temp=False), **fields)


async def per_edit_call(ctx: ToolContext, edits: Sequence[tuple[str, str, str]]) -> float:
    """Seconds per call of ``edit`` for each (file_path, old_string, new_string), one call at
    a time; a failed call raises."""
    registry = ToolRegistry()
    registry.register(EditTool())
    gates = Gates(trust=TrustPolicy(mode=TrustMode.FULL))
    requests = [[ToolCallRequest(f"c{i}", "edit", {"file_path": path, "old_string": old,
                                                   "new_string": new})]
                for i, (path, old, new) in enumerate(edits)]
    t0 = time.perf_counter()
    for batch in requests:
        outcome = (await execute_calls(batch, registry=registry, gates=gates, ctx=ctx))[0]
        if outcome.result.is_error:
            raise RuntimeError(outcome.result.output)
    return (time.perf_counter() - t0) / len(requests)
