"""Large tool outputs: written to a file, replaced by a pointer the model can follow.

A 200 KB test log pasted into the thread would crowd out everything else the model knows, and
truncating it outright loses the failure at the end. So, like the original, a result longer than
a threshold (4000 characters) is saved to a file and the model gets a short pointer with the
head and the tail; it can page through the file with ``read`` (offset/limit), ``tail_file`` or
``grep``, which read any path outside the credential files.

The file is a run-time file: it lives in nyz's state directory
(``config.paths.tool_results_dir``, mode 0600), not in the workspace, where ``git_commit``
(``git add -A``) would commit it. Its text is redacted before it is written
(``ToolContext.redactor``): a secret never reaches the disk by this way either.
"""

from __future__ import annotations

import itertools
import os
import re
import time
from pathlib import Path

from nyzhi.config.paths import tool_results_dir
from nyzhi.oserror import describe_os_error
from nyzhi.tools.base import ToolContext, ToolResult
from nyzhi.tools.offload import run_blocking
from nyzhi.tools.paths import write_nofollow

DEFAULT_THRESHOLD = 4000
HEAD_LINES = 20
TAIL_LINES = 20
EXCERPT_CHARS = 1500  # per excerpt, so the pointer itself stays well under the threshold

_counter = itertools.count(1)


def results_dir(workspace_root: Path) -> Path:
    """Where the full outputs of one workspace's tools go (outside the workspace)."""
    return tool_results_dir(workspace_root)


def _excerpt(lines: list[str], *, from_end: bool) -> str:
    text = "\n".join(lines)
    if len(text) > EXCERPT_CHARS:
        text = ("…" + text[-EXCERPT_CHARS:]) if from_end else (text[:EXCERPT_CHARS] + "…")
    return text


def cap_output(
    result: ToolResult,
    ctx: ToolContext,
    tool_name: str,
    *,
    threshold: int = DEFAULT_THRESHOLD,
) -> ToolResult:
    """``result`` unchanged when short; otherwise a new result pointing at the saved full text.

    The returned result keeps ``is_error`` and the metadata, plus ``full_output_path`` and
    ``full_output_chars``. If the file cannot be written (read-only disk), the output is
    truncated in place instead, keeping head and tail. Blocking (the file is fsynced): async
    callers use ``cap_output_async``.
    """
    text = result.output
    if len(text) <= threshold:
        return result
    if ctx.redactor:  # before anything is written (execute_calls has done it; others may not)
        text = ctx.redactor.redact(text)
    lines = text.splitlines()
    safe_tool = re.sub(r"[^A-Za-z0-9_.-]+", "_", tool_name)[:60] or "tool"
    stamp = time.strftime("%Y%m%dT%H%M%S", time.localtime())
    name = f"{stamp}-{os.getpid()}-{next(_counter)}-{safe_tool}.txt"
    path = results_dir(ctx.workspace_root) / name
    head = _excerpt(lines[:HEAD_LINES], from_end=False)
    tail = _excerpt(lines[-TAIL_LINES:], from_end=True) if len(lines) > HEAD_LINES else ""
    metadata = dict(result.metadata)
    try:
        os.makedirs(path.parent, mode=0o700, exist_ok=True)
        write_nofollow(Path(os.path.realpath(path.parent)) / path.name,
                     text.encode("utf-8", "replace"), mode=0o600)
    except OSError as exc:
        why = describe_os_error(exc, "save the full text to", path)
        body = (
            f"[Output truncated: {len(lines)} lines, {len(text)} chars; {why}.]"
            f"\n--- first lines ---\n{head}"
        )
        if tail:
            body += f"\n--- last lines ---\n{tail}"
        metadata["truncated"] = True
        return ToolResult(output=body, is_error=result.is_error, metadata=metadata)
    body = (
        f"[Output written to {path} ({len(lines)} lines, {len(text)} chars). "
        f"Use read (with offset/limit) or tail_file to inspect.]\n--- first lines ---\n{head}"
    )
    if tail:
        body += f"\n--- last lines ---\n{tail}"
    metadata["full_output_path"] = str(path)
    metadata["full_output_chars"] = len(text)
    return ToolResult(output=body, is_error=result.is_error, metadata=metadata)


async def cap_output_async(
    result: ToolResult, ctx: ToolContext, tool_name: str, *, threshold: int = DEFAULT_THRESHOLD
) -> ToolResult:
    """``cap_output`` with the file write in a worker thread. Short results (nearly all of them)
    return at once, without the cost of a thread hop."""
    if len(result.output) <= threshold:
        return result
    return await run_blocking(lambda: cap_output(result, ctx, tool_name, threshold=threshold))
