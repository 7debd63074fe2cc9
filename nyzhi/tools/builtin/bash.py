"""``bash``: run a shell command through the agent's executor, under the sandbox.

The timeout default (30 s) follows the original; the maximum is raised from 120 s to 600 s,
because real builds and test suites routinely take a few minutes and a killed build teaches the
model nothing. Output streams to the front end as it arrives, is capped at 100 KiB (head and tail
kept), and the exit code is in the metadata. A non-zero exit is an error result so the model
notices failures without parsing text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from nyzhi.tools.base import Permission, Tool, ToolContext, ToolResult
from nyzhi.tools.builtin.common import ArgError
from nyzhi.tools.nodes import NodeError, ResolvedNode, resolve_node

DEFAULT_TIMEOUT = 30
MAX_TIMEOUT = 600
OUTPUT_CAP = 100 * 1024


def pick_executor(ctx: ToolContext, node: Any) -> tuple[Any, ResolvedNode | None]:
    """The named node's executor (``nyzhi.tools.nodes``: exactly, or by a clear fuzzy match)
    when a node is named, else the context's executor, else local."""
    if node not in (None, ""):
        try:
            found = resolve_node(ctx.nodes, node)
        except NodeError as exc:
            raise ArgError(str(exc)) from None
        return found.executor, found
    if ctx.executor is not None:
        return ctx.executor, None
    from nyzhi.tools.executors import LocalExecutor

    return LocalExecutor(), None


def executor_cwd(ctx: ToolContext, executor: Any) -> Path | str:
    """Local executors run in ``ctx.cwd``; remote ones get the cwd relative to the workspace
    (a node's own directory mirrors the workspace root)."""
    if not getattr(executor, "remote", False):
        return ctx.cwd
    try:
        rel = Path(ctx.cwd).resolve().relative_to(Path(ctx.workspace_root).resolve())
    except ValueError:
        return "."
    return str(rel) if str(rel) else "."


def parse_timeout(args: dict[str, Any], default: float = DEFAULT_TIMEOUT) -> float:
    value = args.get("timeout")
    if value is None:
        return default
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise ArgError(f"'timeout' must be a number of seconds, got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ArgError(f"'timeout' must be a positive number of seconds, got {value!r}")
    return float(min(value, MAX_TIMEOUT))


async def run_command(
    command: str, ctx: ToolContext, *, limit: float, node: Any = None, header: str = "",
    detach: Any = None,
) -> tuple[Any, dict[str, Any]]:
    """Run with a ``limit`` in seconds through the chosen executor; returns (ExecResult, metadata). Raises ``ArgError``,
    ``SandboxError`` or ``ExecutorError`` (callers turn them into error results)."""
    executor, found = pick_executor(ctx, node)
    if header:
        await ctx.output(header)
    # Ctrl-B may move it to the background (nyzhi.tools.builtin.shells.offer_background)
    extra = {"detach": detach} if detach is not None and getattr(
        executor, "supports_detach", False) else {}
    res = await executor.run(
        command,
        cwd=executor_cwd(ctx, executor),
        timeout=limit,
        on_output=ctx.output,
        sandbox=ctx.sandbox,
        output_cap=OUTPUT_CAP,
        **extra,
    )
    meta: dict[str, Any] = {
        "exit_code": res.exit_code,
        "timed_out": res.timed_out,
        "truncated": res.truncated,
        "sandboxed": res.sandboxed,
    }
    if found is not None:
        meta["node"] = found.name
        if found.note:
            meta["node_note"] = found.note
    if res.note:
        meta["sandbox_note"] = res.note
    return res, meta


class BashTool(Tool):
    name = "bash"
    description = (
        "Run a shell command (bash -c) in the working directory: stdout and stderr combined, "
        "a non-zero exit is an error showing the code. For files prefer read, grep, glob and "
        f"edit. Output capped at 100 KiB (head and tail kept); timeout {DEFAULT_TIMEOUT} s by "
        f"default (max {MAX_TIMEOUT} s), then the process group is killed. Servers, watchers, "
        "REPLs: set run_in_background (an id for bash_output, write_stdin, kill_shell). "
        "Sandboxed commands share one loopback network; writes outside allowed roots fail."
    )
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The command line to run."},
            "timeout": {
                "type": "number",
                "description": f"Seconds before the command is killed (default {DEFAULT_TIMEOUT}, "
                f"max {MAX_TIMEOUT}).",
            },
            "run_in_background": {"type": "boolean", "description": "Return a shell id at once; "
                                  "it runs on."},
            "tty": {"type": "boolean", "description": "Background: run under a terminal."},
            "yield_ms": {"type": "number", "description": "Background: ms to wait "
                         "(1000)."},
        },
        "required": ["command"],
    }
    permission = Permission.NEEDS_APPROVAL
    supports_node = True  # the registry adds ``node`` (an enum of them) when nodes are configured
    runs_sandboxed: ClassVar[bool] = True

    def target_commands(self, args: dict[str, Any], ctx: ToolContext) -> list[str]:
        command = args.get("command")
        return [command] if isinstance(command, str) else []

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        from nyzhi.tools.executors import ExecutorError
        from nyzhi.tools.sandbox import SandboxError, network_hint

        command = args.get("command")
        if not isinstance(command, str) or not command.strip():
            return ToolResult("'command' is required and must be a non-empty string", True)
        if args.get("run_in_background") in (True, "true"):
            from nyzhi.tools.builtin.shells import start_in_background

            return await start_in_background(command, args, ctx)
        from nyzhi.tools.builtin.shells import moved_result, offer_background

        try:
            timeout = parse_timeout(args)
            with offer_background(command, ctx) as detach:
                res, meta = await run_command(command, ctx, limit=timeout,
                                              node=args.get("node"), detach=detach)
        except (ArgError, SandboxError, ExecutorError) as exc:
            return ToolResult(str(exc), is_error=True, metadata={"exit_code": None})
        if res.moved_to:
            return moved_result(res, ctx)
        text = res.output if res.output.strip() else "(no output)"
        if meta.get("node_note"):
            text = f"[{meta['node_note']}]\n{text}"
        if not res.timed_out and res.exit_code != 0:  # the executor already notes a timeout
            text = f"{text.rstrip()}\n[exit code {res.exit_code}]"
            if hint := network_hint(ctx.sandbox, res.output, res.sandboxed):
                text += "\n" + hint
        elif res.timed_out:
            text = (
                f"{text.rstrip()}\n[if the command needs longer, set timeout (at most "
                f"{MAX_TIMEOUT} s); otherwise run a narrower command]"
            )
        return ToolResult(text, is_error=res.exit_code != 0 or res.timed_out, metadata=meta)


TOOLS = (BashTool,)
