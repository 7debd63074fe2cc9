"""The tool model: what a tool declares, what it runs with, what it returns.

Tools never talk to a screen or a model. A tool gets a ``ToolContext`` (where it is, what it
may do, how to stream output, how to record file changes) and returns a ``ToolResult`` whose
text the model reads. Errors the model should see are results with ``is_error=True``;
exceptions are bugs (the executor turns them into error results too, but logs them).
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, ClassVar

import attrs

from nyzhi import records

# Defined once, in the config layer; re-exported because tools and their tests name them here.
from nyzhi.config.modes import SandboxLevel as SandboxLevel
from nyzhi.config.modes import TrustMode as TrustMode


class Permission(enum.Enum):
    """Whether a call may run without asking: reading never changes the world."""

    READ_ONLY = "read_only"
    NEEDS_APPROVAL = "needs_approval"


@records.define
class ToolResult:
    output: str
    is_error: bool = False
    metadata: dict[str, Any] = attrs.field(factory=dict)
    # Images for the model to see (provider.types.ImagePart: ``read`` of a PNG), beside output
    images: tuple[Any, ...] = ()


OutputSink = Callable[[str], Awaitable[None]]


async def _discard_output(_chunk: str) -> None:
    return None


@records.define
class FileChange:
    """One file change a tool made, enough to revert it (``before`` None: the file did not exist;
    ``after`` None: the tool deleted it)."""

    path: Path
    before: bytes | None
    after: bytes | None
    tool: str
    # Changes made by one tool call share a batch id, so one ``/undo`` reverts the whole call
    # (a move, a multi-file patch). "dir" changes are directories (create_dir, deleting an
    # empty directory): ``before``/``after`` are then b"" for present and None for absent.
    batch: int = 0
    kind: str = "file"
    mode: int | None = None  # permission bits of ``before``, restored on undo
    # The sandbox policy the change was made under: an undo asks the same roots and the same
    # protected-path check (``nyzhi.tools.paths.check_restore``). None: a bare change.
    policy: Any = attrs.field(default=None, repr=False, eq=False)


@records.define
class ChangeLog:
    """Every file change made through tools in a session, in order, so ``/undo`` can revert."""

    changes: list[FileChange] = attrs.field(factory=list)
    # Told of every write before and after it is made (``nyzhi.core.runtime.checkpoints.Recorder``:
    # ``before_write(changes)`` and ``after_write(changes)``, from the writing thread). None:
    # no checkpoints (a library user's context, a unit test).
    watcher: Any = attrs.field(default=None, repr=False)

    _next_batch: int = attrs.field(default=1, init=False, repr=False)

    def record(self, change: FileChange) -> None:
        self.changes.append(change)

    @property
    def next_batch(self) -> int:
        """The batch id the next tool call's changes will get (a turn's changes are those
        from the id read at its start on: ``undo_all(since=...)``)."""
        return self._next_batch

    def new_batch(self) -> int:
        """A fresh batch id for the changes of one tool call."""
        batch = self._next_batch
        self._next_batch += 1
        return batch


@records.define
class ToolContext:
    """What a tool runs with. Built per call by the executor from the agent's settings."""

    workspace_root: Path
    cwd: Path
    sandbox: Any = None  # nyzhi.tools.sandbox.SandboxPolicy
    trust: Any = None  # nyzhi.tools.gates.TrustPolicy
    executor: Any = None  # nyzhi.tools.executors.Executor (local by default)
    agent_path: str = "/agents/main"
    agent_name: str = "main"
    session_id: str | None = None
    output: OutputSink = _discard_output
    changes: ChangeLog = attrs.field(factory=ChangeLog)
    # Front-end question routing for ask_user: (question, options) -> answer, or None headless.
    ask_user: Callable[[str, list[dict[str, str]], bool], Awaitable[str]] | None = None
    state: dict[str, Any] = attrs.field(factory=dict)  # per-session tool state (todos, ...)
    registry: Any = None  # the ToolRegistry, for tool_search
    nodes: dict[str, Any] = attrs.field(factory=dict)  # name -> Executor, for the `node` argument
    env_policy: Any = None  # nyzhi.tools.env_policy.EnvPolicy for helper processes (None: default)
    # Write leases (nyzhi.tools.leases.LeaseTable): contexts derived with attrs.evolve share
    # it, so every agent of one runtime tree waits for the others' writes to the same file.
    leases: Any = attrs.field(factory=lambda: _lease_table())
    # The runtime's subagent manager (nyzhi.core.runtime.subagents), for the lifecycle tools; shared
    # like ``leases``. None: no subagents in this run.
    agents: Any = None
    # Teams: the team this agent belongs to and its member name there (None: not in a team;
    # the team tools then need an explicit team, and act as "lead"), and the runtime's team
    # control (nyzhi.tools.builtin.team.TeamControl), shared like ``agents``. None: the team
    # tools work on the files alone (no teammates, events or hooks).
    team_name: str | None = None
    team_member: str | None = None
    teams: Any = None
    # What this agent last saw of each file (nyzhi.tools.ledger.FileLedger): one per agent,
    # never shared with a subagent. None: the stale-write guard is off.
    seen: Any = None
    # Known secrets (nyzhi.config.secrets.Redactor), replaced in every result before it leaves
    # the tool layer or is written to disk; shared like ``agents``. None: nothing to redact.
    redactor: Any = None
    # The runtime's browser (nyzhi.core.runtime.browser.BrowserPool), shared like ``agents``; started
    # on the first browser tool call. None: the browser tools say there is none.
    browser: Any = None
    # What model-directed requests may reach (nyzhi.tools.netguard.NetPolicy: the user's
    # ``[network] allow_hosts``), shared like ``agents``. None: the strict default.
    net: Any = None
    # The runtime's language servers (nyzhi.core.runtime.lsp.LspPool), shared like ``agents``: the
    # lsp_* tools ask it, and the file-writing tools report new errors through it. None: no
    # language servers in this run.
    lsp: Any = None
    # ``[agent] format_on_edit``: "auto" runs the project's formatter over what the file
    # tools wrote (``nyzhi.tools.formatting``); "off" leaves the files as written.
    format_on_edit: str = "off"
    # The agent tree's background shells (nyzhi.tools.background.ShellTable), shared like
    # ``agents``. None: bash's run_in_background is refused.
    shells: Any = None


def _lease_table() -> Any:
    from nyzhi.tools.leases import LeaseTable

    return LeaseTable()


class AgentControlError(Exception):
    """The agent tree refused (a spawn over a limit, an unknown agent): the message is for
    the model. Here, not with the agent tools, so the core can raise it without importing
    them."""


class Tool:
    """Base class of every tool. Subclasses set the class attributes and implement ``run``.

    ``parameters`` is a JSON schema (an object schema). ``deferred`` tools only show their name
    and first description line in the prompt until ``tool_search`` finds them.
    """

    name: ClassVar[str]
    description: ClassVar[str]
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}
    permission: ClassVar[Permission] = Permission.READ_ONLY
    deferred: ClassVar[bool] = False
    # Tools that write files: the "autoedit" trust mode approves exactly these.
    writes_files: ClassVar[bool] = False

    # Tools whose commands can run on a configured remote node take an optional ``node``
    # argument; the registry adds it to the schema only when nodes are configured.
    supports_node: ClassVar[bool] = False
    # Tools an agent in no team is not shown (the team tools but ``team_create``).
    in_team_only: ClassVar[bool] = False
    # False: a deferred tool left out of the system prompt's list of tools to load (another
    # tool loads it when it is needed: ``bash`` with run_in_background loads the shell tools).
    listed: ClassVar[bool] = True

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        raise NotImplementedError

    def target_paths(self, args: dict[str, Any]) -> list[str]:
        """The paths this call would touch, as given (unresolved), for deny rules and sandbox
        gates. The default covers the conventional argument names; tools with other shapes
        (multi_edit, apply_patch, git_commit) override it."""
        return [
            str(args[key])
            for key in ("file_path", "path", "source", "destination")
            if isinstance(args.get(key), str) and args[key]
        ]

    async def preview(self, args: dict[str, Any], ctx: ToolContext) -> str:
        """What the call would change, for an approval request. File-writing tools return a
        unified diff computed without writing; others return "" (the front end then shows
        the arguments)."""
        return ""
