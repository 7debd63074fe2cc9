"""Background shells for the model: ``bash_output``, ``write_stdin``, ``kill_shell``,
``list_shells``, and the start behind ``bash`` with ``run_in_background`` (see
``nyzhi.tools.background`` for the table and the process, ``nyzhi.core.loop.background`` for the
actor each process runs as).

They are deferred and unlisted: a first request without background processes carries none of
their schemas, and the first background start loads all four into that agent's view
(``ToolRegistry.discover``), so the model has them from its next step on. They need no
approval: the command was approved (deny rules, hooks) when ``bash`` started it, once.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any, ClassVar

import trio

from nyzhi.tools.background import (
    DEFAULT_YIELD_MS,
    MAX_YIELD_MS,
    BackgroundShell,
    ShellError,
    refresh_ports,
    run_shell,
)
from nyzhi.tools.base import Permission, Tool, ToolContext, ToolResult
from nyzhi.tools.builtin.common import ArgError

SHELL_TOOLS = ("bash_output", "write_stdin", "kill_shell", "list_shells")
STDIN_YIELD_MS = 500
QUIET_S = 0.15  # after output, this long without more ends a write_stdin's wait
MAX_STDIN_CHARS = 64 * 1024


def _table(ctx: ToolContext) -> Any:
    if ctx.shells is None:
        raise ShellError("background processes are not available in this run")
    return ctx.shells


def _yield_ms(args: dict[str, Any], default: int) -> float:
    value = args.get("yield_ms", default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ArgError(f"'yield_ms' must be a number of milliseconds >= 0, got {value!r}")
    return min(float(value), MAX_YIELD_MS) / 1000


def _flag(args: dict[str, Any], key: str) -> bool:
    value = args.get(key, False)
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return value is True


def _report(shell: BackgroundShell, text: str, table: Any, head: str = "") -> ToolResult:
    """One result: a header line (id, state), the output, and what was noticed meanwhile."""
    lines = [head or f"{shell.id}: {shell.status()}"]
    if shell.note:
        lines.append(f"[{shell.note}]")
    lines.append(text.rstrip("\n") if text.strip() else "(no new output)")
    lines += table.take_notices(shell.owner, shell.id)
    meta = {"shell_id": shell.id, "state": shell.state, "exit_code": shell.exit_code,
            "sandboxed": shell.sandboxed}
    if shell.log_path is not None:
        meta["log_path"] = str(shell.log_path)
    return ToolResult("\n".join(lines), is_error=shell.state == "failed", metadata=meta)


async def start_in_background(command: str, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """``bash`` with ``run_in_background``: start ``command`` as an actor under this agent,
    wait up to ``yield_ms`` for its first output, and return its id and state."""
    from nyzhi.tools.builtin.bash import executor_cwd, pick_executor
    from nyzhi.tools.output import results_dir

    try:
        table = _table(ctx)
        wait = _yield_ms(args, DEFAULT_YIELD_MS)
        executor, _found = pick_executor(ctx, args.get("node"))
        start = getattr(executor, "start_background", None)
        if start is None:
            raise ShellError("run_in_background is not available where this command would "
                             "run (a remote node, an editor's terminal); run it in the "
                             "foreground")
        tty = _flag(args, "tty")
        shell = table.new(command, ctx.agent_path, tty=tty, log_dir=results_dir(ctx.workspace_root))
    except (ArgError, ShellError) as exc:
        return ToolResult(str(exc), is_error=True, metadata={"exit_code": None})
    starter = partial(start, command, cwd=executor_cwd(ctx, executor), sandbox=ctx.sandbox)
    table.hosts[ctx.agent_path](shell, partial(run_shell, shell, table, starter, ctx.redactor))
    await shell.started.wait()
    if shell.state == "failed":
        del table.shells[shell.id]
        return ToolResult(f"not started: {shell.error}", is_error=True,
                          metadata={"exit_code": None})
    if ctx.registry is not None:  # the tools that act on it, from the next step on
        for name in SHELL_TOOLS:
            ctx.registry.discover(name)
    with trio.move_on_after(wait):
        await shell.exited.wait()
    text = shell.take()
    head = (f"started {shell.id} in the background ({'pty, ' if tty else ''}"
            f"{shell.status()}); read it with bash_output, answer it with write_stdin, stop "
            "it with kill_shell")
    return _report(shell, text, table, head)


@contextmanager
def offer_background(command: str, ctx: ToolContext) -> Iterator[Any]:
    """While a foreground ``bash`` runs: a ``Detach`` its agent's front end may request
    (the console's Ctrl-B, ``ShellTable.move_to_background``), which hands the running
    process to a background shell of this agent. None without a runtime to host it."""
    from nyzhi.tools.executors.process import Detach

    table = ctx.shells
    if table is None or ctx.agent_path not in table.hosts:
        yield None
        return

    async def adopt(proc: Any, stdout: Any, text: str, sandboxed: bool) -> str:
        from nyzhi.tools.background import supervise
        from nyzhi.tools.output import results_dir

        shell = table.new(command, ctx.agent_path, tty=False,
                          log_dir=results_dir(ctx.workspace_root), limit=False)
        redactor = ctx.redactor
        already = redactor.redact(text) if redactor is not None and text else text
        table.hosts[ctx.agent_path](shell, partial(
            supervise, shell, table, proc, stdout, None, redactor,
            sandboxed=sandboxed, already=already))
        shell.started.set()
        if ctx.registry is not None:
            for name in SHELL_TOOLS:
                ctx.registry.discover(name)
        return shell.id

    detach = Detach(adopt)
    table.foreground[ctx.agent_path] = detach
    try:
        yield detach
    finally:
        if table.foreground.get(ctx.agent_path) is detach:
            del table.foreground[ctx.agent_path]


def moved_result(res: Any, ctx: ToolContext) -> ToolResult:
    """A foreground command's result once Ctrl-B moved it to the background."""
    text = res.output.rstrip()
    return ToolResult(
        f"{text}\n[moved to the background as {res.moved_to} (Ctrl-B): it runs on; read it "
        "with bash_output, stop it with kill_shell]" if text else
        f"[moved to the background as {res.moved_to} (Ctrl-B): it runs on; read it with "
        "bash_output, stop it with kill_shell]",
        metadata={"shell_id": res.moved_to, "state": "running", "exit_code": None,
                  "sandboxed": res.sandboxed})


class BashOutputTool(Tool):
    name = "bash_output"
    description = (
        "Read a background shell's output since the last read (bash with run_in_background "
        "started it), with its state and, once it exited, its exit code. 'filter' (a regular "
        "expression) keeps only matching lines; the full output is in the log file named in "
        "the result's metadata."
    )
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "id": {"type": "string", "description": "The shell id (bg_1, ...)."},
            "filter": {"type": "string", "description": "Keep only lines matching this regex."},
        },
        "required": ["id"],
    }
    permission = Permission.READ_ONLY
    deferred = True
    listed = False

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            table = _table(ctx)
            shell = table.get(args.get("id"), ctx.agent_path)
            pattern = None
            if isinstance(args.get("filter"), str) and args["filter"]:
                try:
                    pattern = re.compile(args["filter"][:1000])
                except re.error as exc:
                    raise ArgError(f"'filter' is not a valid regular expression: {exc}") from None
        except (ArgError, ShellError) as exc:
            return ToolResult(str(exc), is_error=True)
        await refresh_ports(shell, table)
        return _report(shell, shell.take(pattern), table)


class WriteStdinTool(Tool):
    name = "write_stdin"
    description = (
        "Send text to a background shell's standard input (a REPL, a prompt asking for an "
        "answer) and return what it printed within a short wait. Include the newline (\\n) "
        "that submits a line; start the shell with tty: true for programs that need a terminal."
    )
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "id": {"type": "string", "description": "The shell id (bg_1, ...)."},
            "text": {"type": "string", "description": "What to type, e.g. \"yes\\n\"."},
            "yield_ms": {"type": "number", "description": "How long to wait for the answer "
                         f"(default {STDIN_YIELD_MS} ms)."},
        },
        "required": ["id", "text"],
    }
    permission = Permission.READ_ONLY
    deferred = True
    listed = False

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            table = _table(ctx)
            shell = table.get(args.get("id"), ctx.agent_path)
            text = args.get("text")
            if not isinstance(text, str):
                raise ArgError("'text' must be a string")
            if len(text) > MAX_STDIN_CHARS:
                raise ArgError(f"'text' is longer than {MAX_STDIN_CHARS} characters")
            wait = _yield_ms(args, STDIN_YIELD_MS)
            if shell.write is None:
                raise ShellError(f"{shell.id} is not running ({shell.status()})")
        except (ArgError, ShellError) as exc:
            return ToolResult(str(exc), is_error=True)
        mark = shell.ring.end
        try:
            await shell.write(text.encode())
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            return ToolResult(f"{shell.id} does not take input any more: {exc}", is_error=True)
        with trio.move_on_after(wait):
            await shell.wait_output(mark)
            while not shell.exited.is_set():  # the rest of the answer, until it goes quiet
                seen = shell.ring.end
                with trio.move_on_after(QUIET_S):
                    await shell.wait_output(seen)
                if shell.ring.end == seen:
                    break
        return _report(shell, shell.take(), table)


class KillShellTool(Tool):
    name = "kill_shell"
    description = (
        "Stop a background shell: its whole process group (SIGTERM, then SIGKILL) and, in the "
        "sandbox, everything it started."
    )
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"id": {"type": "string", "description": "The shell id (bg_1, ...)."}},
        "required": ["id"],
    }
    permission = Permission.READ_ONLY
    deferred = True
    listed = False

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            table = _table(ctx)
            shell = table.get(args.get("id"), ctx.agent_path)
        except ShellError as exc:
            return ToolResult(str(exc), is_error=True)
        if shell.kill_now is not None:
            await shell.kill_now()
        with trio.move_on_after(5.0):
            await shell.exited.wait()
        return _report(shell, shell.take(), table, f"{shell.id}: {shell.status()}")


class ListShellsTool(Tool):
    name = "list_shells"
    description = (
        "List this agent's background shells: id, state, uptime, command and last line."
    )
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}
    permission = Permission.READ_ONLY
    deferred = True
    listed = False

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            table = _table(ctx)
        except ShellError as exc:
            return ToolResult(str(exc), is_error=True)
        shells = table.owned_by(ctx.agent_path)
        for shell in shells:
            await refresh_ports(shell, table)
        if not shells:
            return ToolResult("no background shells")
        lines = [f"{s.id}  {s.status()}  up {s.uptime:.0f}s  `{s.command[:80]}`"
                 + (f"  listening on {', '.join(s.ports)}" if s.ports else "")
                 + (f"  last: {s.last_line}" if s.last_line else "") for s in shells]
        return ToolResult("\n".join(lines), metadata={"shells": [s.describe() for s in shells]})


TOOLS = (BashOutputTool, WriteStdinTool, KillShellTool, ListShellsTool)
