"""The Executor seam: every shell command a tool runs goes through one.

Tools never start processes themselves; they hand a command string to an ``Executor``. That keeps
"where does this run" (this machine, a node over SSH, a read-only monitored node) out of the tools,
and keeps the process-lifetime rules (output cap, timeout, cancellation kills everything) in one
place.

Error tree::

    ExecutorError
    └── CommandRefused    the executor will not run this command (e.g. Monitored, mutating)
    (sandbox.SandboxUnavailable is raised as is: bwrap is missing and the policy refuses)
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Protocol, runtime_checkable

from nyzhi import records

DEFAULT_OUTPUT_CAP = 100 * 1024

OutputCallback = Callable[[str], Awaitable[None]]


class ExecutorError(Exception):
    """Base of executor errors; messages are shown to the model as tool errors."""


class CommandRefused(ExecutorError):
    """The executor refuses to run the command; nothing was started."""


@records.frozen
class ExecResult:
    """How a command ended.

    ``exit_code`` is the command's status (negative: killed by that signal; 255 from SSH can mean
    the connection failed). ``timed_out``: we killed it at the timeout. ``truncated``: ``output``
    keeps only the head and tail. ``cancelled``: the command was killed by a signal nobody in
    this process sent (when *our caller* is cancelled, ``run`` kills the process group and
    re-raises ``trio.Cancelled`` instead of returning). ``note`` carries warnings the user must
    see, such as "ran without the sandbox".
    """

    exit_code: int
    output: str
    timed_out: bool = False
    truncated: bool = False
    cancelled: bool = False
    note: str = ""
    sandboxed: bool = False
    # The background shell id the running command was moved to (the console's Ctrl-B);
    # "" when it ran to its end here.
    moved_to: str = ""


@runtime_checkable
class Executor(Protocol):
    """Runs one shell command.

    ``cwd`` is where it runs (for remote executors a relative cwd is taken from the node's own
    directory). ``env`` adds variables to the inherited environment. ``timeout`` None means no
    limit. ``on_output`` receives decoded output chunks as they arrive (stdout and stderr
    merged). ``sandbox`` (a ``SandboxPolicy``) confines local commands. ``mutating`` is the
    caller's hint: True means the caller knows the command changes things (Monitored refuses it
    outright); None means unknown. ``remote`` tells tools whether local paths mean anything.

    Cancellation: the process (group) is killed and ``trio.Cancelled`` propagates.
    """

    remote: bool

    async def run(
        self,
        command: str,
        *,
        cwd: Path | str,
        env: dict[str, str] | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 (the command's limit, part of the protocol)
        on_output: OutputCallback | None = None,
        sandbox: object | None = None,
        output_cap: int = DEFAULT_OUTPUT_CAP,
        mutating: bool | None = None,
    ) -> ExecResult: ...


class CappedOutput:
    """Collects output, keeping the first and last ``cap // 2`` characters once it overflows.

    The head shows how a command started (usage errors, the first failure); the tail shows how it
    ended (the summary line, the final error). The middle is what gets dropped.
    """

    def __init__(self, cap: int = DEFAULT_OUTPUT_CAP) -> None:
        self.cap = max(cap, 2)
        self._head: list[str] = []
        self._head_len = 0
        self._tail: deque[str] = deque()
        self._tail_len = 0
        self.total = 0

    def add(self, text: str) -> None:
        self.total += len(text)
        half = self.cap // 2
        room = half - self._head_len
        if room > 0:
            self._head.append(text[:room])
            self._head_len += min(room, len(text))
            text = text[room:]
        if not text:
            return
        self._tail.append(text)
        self._tail_len += len(text)
        while self._tail_len - len(self._tail[0]) >= self.cap - half:
            self._tail_len -= len(self._tail.popleft())

    @property
    def truncated(self) -> bool:
        return self.total > self.cap

    def text(self) -> str:
        head = "".join(self._head)
        tail = "".join(self._tail)
        if not self.truncated:
            return head + tail
        keep = self.cap - len(head)
        tail = tail[-keep:] if keep > 0 else ""
        omitted = self.total - len(head) - len(tail)
        return f"{head}\n[... {omitted} characters of output omitted ...]\n{tail}"
