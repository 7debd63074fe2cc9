"""Permission gates: the one place that decides whether a tool call may run.

Every call, read-only or not, passes the gates in this order; the first gate that refuses decides
the outcome, so a call failing several gates reports the earliest:

1. ``role_fence``  the agent's allowed / disallowed tool names (and the registry's fence); a
                   read-only role (``read_only_role``) gets no tool that changes things,
                   except command tools that confine themselves (``runs_sandboxed``) when the
                   call's sandbox is read-only;
2. ``plan_mode``   only read-only tools while planning;
3. ``sandbox``     write targets must resolve inside the writable roots; the read-only sandbox
                   refuses mutating tools, except command tools that confine themselves with
                   bwrap (``runs_sandboxed``), which are refused here only if bwrap is missing;
4. ``deny_rules``  ``deny_tools``, ``deny_paths`` (against resolved targets and command text),
                   ``deny_commands`` (plus ``DEFAULT_DENY_COMMANDS``);
5. ``trust``       read-only tools never need approval; a call whose targets are protected
                   configuration (``nyzhi.tools.protected``: ``.git``, ``.nyzhi``, ``.claude``,
                   ``.mcp.json``) is asked for in every trust mode but ``full``; then, unless
                   the tool is in
                   ``always_ask``: a tool approved "always" earlier in the session (or, with
                   ``remember_approvals``, in an earlier session in this workspace), a tool
                   matching ``auto_approve`` (or allow-listed where it is declared: a tool's
                   ``allow_listed_by``), and finally the trust mode;
6. ``approval``    ``permission_request`` hooks (``permission_hook``) may deny, or allow a
                   call not asked for every time; else ask the front end through the injected
                   approver (headless: refused).

Tools tell the gates what they touch through optional methods: ``target_paths(args)`` (files they
read or write), ``expand_targets(args, ctx)`` (async: real paths found by reading the tree, for a
tool whose files come from a glob), ``target_commands(args, ctx)`` (shell command strings, for deny rules and the
approval summary), ``preview(args, ctx)`` (a unified diff for the approval prompt) and the class
attribute ``runs_sandboxed``.
"""

from __future__ import annotations

import enum
import fnmatch
import inspect
import json
import os
import re
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

import attrs
import trio

from nyzhi import records
from nyzhi.config.modes import SandboxLevel, TrustMode
from nyzhi.tools.base import Permission, Tool, ToolContext, ToolResult
from nyzhi.tools.fence import ToolFence

ROLE_FENCE = "role_fence"
PLAN_MODE = "plan_mode"
SANDBOX = "sandbox"
DENY_RULES = "deny_rules"
TRUST = "trust"
APPROVAL = "approval"
GATE_ORDER = (ROLE_FENCE, PLAN_MODE, SANDBOX, DENY_RULES, TRUST, APPROVAL)

# Regexes (searched in the whole command) for commands that are never what a coding task needs
# and are catastrophic when wrong. They are a seat belt, not a security boundary: the sandbox is.
DEFAULT_DENY_COMMANDS: tuple[str, ...] = (
    r"re:\brm\s+(-\S+\s+)*(/|/\*|~|~/|\$HOME/?|\*)(\s|$|[;&|])",  # rm -rf / ~ $HOME *
    r"re:--no-preserve-root",
    r"re:\b(curl|wget)\b[^|;&]*\|\s*(sudo\s+)?(ba|da|z|k)?sh\b",  # curl ... | sh
    r"re:\bmkfs(\.\w+)?\b",
    r"re::\(\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:",  # the classic fork bomb
    r"re:\bdd\b[^;&|]*\bof=/dev/(sd|hd|vd|xvd|nvme|mmcblk)",
    r"re:>\s*/dev/(sd|hd|vd|xvd|nvme|mmcblk)",
    r"re:\bchmod\s+(-\S+\s+)*[0-7]{3,4}\s+/(\s|$)",
    r"re:(^|[;&|]\s*)(sudo\s+)?(shutdown|reboot|poweroff|halt)\b",
)


def _lower_set(names: Iterable[str]) -> frozenset[str]:
    return frozenset(n.lower() for n in names)


@records.frozen
class TrustPolicy:
    """The ``[agent.trust]`` settings: what runs without asking and what never runs.

    ``deny_commands`` entries are globs matched against each simple command of a shell line
    (split at ``;``, ``&&``, ``||``, ``|``, newlines), or regexes searched in the whole line when
    prefixed with ``re:``. ``default_deny_commands`` adds ``DEFAULT_DENY_COMMANDS``.
    ``auto_approve`` entries are tool-name globs (case-insensitive: ``"bash"``, ``"git_*"``)
    approved without asking in every trust mode, ``off`` included; the sandbox and deny rules
    still apply. ``always_ask`` tools are never auto-approved, by trust mode, ``auto_approve`` or
    remembered answers. ``remember_approvals`` makes an "always" answer outlive the session: it
    is saved per workspace in the user's state directory (``nyzhi.config.approvals``) and
    honoured by later sessions there; without it "always" lasts for the session.
    """

    mode: TrustMode = TrustMode.OFF
    allow_tools: tuple[str, ...] = attrs.field(default=(), converter=records.as_tuple)
    allow_paths: tuple[str, ...] = attrs.field(default=(), converter=records.as_tuple)
    deny_tools: tuple[str, ...] = attrs.field(default=(), converter=records.as_tuple)
    deny_paths: tuple[str, ...] = attrs.field(default=(), converter=records.as_tuple)
    deny_commands: tuple[str, ...] = attrs.field(default=(), converter=records.as_tuple)
    always_ask: tuple[str, ...] = attrs.field(default=(), converter=records.as_tuple)
    auto_approve: tuple[str, ...] = attrs.field(default=(), converter=records.as_tuple)
    remember_approvals: bool = False
    default_deny_commands: bool = True
    # Where a deny rule came from when not the config (``"deny_commands:touch *"`` ->
    # ``".claude/settings.json permissions.deny Bash(touch:*)"``), for the refusal's message.
    rule_sources: tuple[tuple[str, str], ...] = attrs.field(default=(), converter=records.as_tuple)

    def source_of(self, kind: str, rule: str) -> str:
        """Where the ``kind`` rule ``rule`` (``deny_tools``, ``deny_paths``,
        ``deny_commands``) was set, for a refusal's message."""
        return dict(self.rule_sources).get(f"{kind}:{rule}", f"agent.trust.{kind}")

    @classmethod
    def from_config(cls, table: dict[str, Any]) -> TrustPolicy:
        """Build from an ``[agent.trust]`` mapping (unknown keys ignored; mode by name)."""
        mode = table.get("mode", "off")
        try:
            mode = mode if isinstance(mode, TrustMode) else TrustMode(str(mode).lower())
        except ValueError:
            choices = ", ".join(m.value for m in TrustMode)
            raise ValueError(f"agent.trust.mode: expected one of {choices}, got {mode!r}") from None
        keys = (
            "allow_tools",
            "allow_paths",
            "deny_tools",
            "deny_paths",
            "deny_commands",
            "always_ask",
            "auto_approve",
        )
        kwargs = {k: tuple(table.get(k) or ()) for k in keys}
        return cls(
            mode=mode,
            remember_approvals=bool(table.get("remember_approvals", False)),
            default_deny_commands=table.get("default_deny_commands", True),
            **kwargs,
        )

    def auto_approves(self, tool_name: str) -> str | None:
        """The ``auto_approve`` glob matching ``tool_name``, or None."""
        name = tool_name.lower()
        return next((p for p in self.auto_approve if fnmatch.fnmatchcase(name, p.lower())), None)


class ApprovalKind(enum.Enum):
    APPROVE = "approve"
    APPROVE_ALWAYS = "approve_always"  # approve, and stop asking for this tool this session
    DENY = "deny"


@records.frozen
class ApprovalDecision:
    kind: ApprovalKind
    reason: str = ""

    @classmethod
    def approve(cls) -> ApprovalDecision:
        return cls(ApprovalKind.APPROVE)

    @classmethod
    def always(cls) -> ApprovalDecision:
        return cls(ApprovalKind.APPROVE_ALWAYS)

    @classmethod
    def deny(cls, reason: str = "") -> ApprovalDecision:
        return cls(ApprovalKind.DENY, reason)


@records.frozen
class ApprovalRequest:
    """What a front end shows when asking: the call, a one-line summary and maybe a diff."""

    call_id: str
    tool_name: str
    args_summary: str
    preview: str | None
    agent_path: str
    arguments: dict[str, Any] = attrs.field(factory=dict)


# A person's decision; None: nobody is there to ask after all (a headless run that asks only
# while a front end is attached to it, ``nyz attach``), so the call is refused as headless.
Approver = Callable[[ApprovalRequest], Awaitable[ApprovalDecision | None]]
# Asked before a person is (``permission_request`` hooks, from core): a decision, or None to
# leave it to the person. The flags: whether anyone will be asked (False: headless), and
# whether an allow counts (False: the call must be asked for every time).
PermissionHook = Callable[[ApprovalRequest, bool, bool], Awaitable[ApprovalDecision | None]]


@records.define
class ApprovalMemory:
    """Tool names the user approved "always for this session" (the runtime keeps one per session).

    ``remembered`` holds the tools approved "always" by earlier sessions in the workspace
    (``agent.trust.remember_approvals``); the gates load it on first use.
    """

    tools: set[str] = attrs.field(factory=set)
    remembered: frozenset[str] | None = None

    def remember(self, tool_name: str) -> None:
        self.tools.add(tool_name)

    def __contains__(self, tool_name: object) -> bool:
        return tool_name in self.tools

    def clear(self) -> None:
        self.tools.clear()
        self.remembered = None  # re-read from the file on the next check


@records.frozen
class GateDecision:
    """The gates' verdict for one call.

    ``gate`` is the gate that decided (the refusing one, or the one that approved: ``trust`` for
    read-only tools, trust modes and session memory, ``approval`` for the user). ``approved_by``
    says how an allowed call was allowed: "read_only", "trust" (mode or ``auto_approve``),
    "session", "remembered" (an earlier session's "always"), "user".
    """

    allowed: bool
    gate: str
    reason: str
    approved_by: str | None = None
    paths: tuple[Path, ...] = ()
    commands: tuple[str, ...] = ()

    def to_result(self) -> ToolResult:
        """The error the model sees for a refused call."""
        return ToolResult(
            f"Permission denied ({self.gate.replace('_', ' ')}): {self.reason}",
            is_error=True,
            metadata={"gate": self.gate, "denied": True},
        )


def _deny(gate: str, reason: str, paths=(), commands=()) -> GateDecision:
    return GateDecision(False, gate, reason, paths=tuple(paths), commands=tuple(commands))


def fenced_out(name: str) -> GateDecision:
    """The refusal of a tool the role's fence (``nyzhi.tools.fence``) stops: one wording,
    whether the registry's view or the gates found it."""
    return _deny(ROLE_FENCE, f"tool `{name}` is not available for this agent role")


def target_paths(tool: Tool, args: dict[str, Any], ctx: ToolContext) -> list[Path]:
    """Real paths the call touches (via the tool's ``target_paths``), resolved against its cwd.

    Stays on the trio thread, like the sandbox check below: ``realpath`` is a few ``lstat``
    calls answered from the kernel's dentry cache, cheaper than the thread hop (~0.1 ms) every
    tool call would otherwise pay. The tools' own writes and scans run in worker threads."""
    fn = getattr(tool, "target_paths", None)
    raw = list(fn(args) or ()) if callable(fn) else []
    if not raw:
        return raw  # most calls name no path: no Path built for the cwd
    base = Path(ctx.cwd)
    return [Path(os.path.realpath(base / os.path.expanduser(os.fspath(p)))) for p in raw]


def target_commands(tool: Tool, args: dict[str, Any], ctx: ToolContext) -> list[str]:
    fn = getattr(tool, "target_commands", None)
    return [str(c) for c in (fn(args, ctx) or ())] if callable(fn) else []


def _split_commands(line: str) -> list[str]:
    return [s.strip() for s in re.split(r"\|\||&&|[|;&\n]", line) if s.strip()]


def command_denied(command: str, patterns: Iterable[str]) -> str | None:
    """The first pattern that blocks ``command``, or None."""
    flat = " ".join(command.split())
    for pattern in patterns:
        if pattern.startswith("re:"):
            if re.search(pattern[3:], flat):
                return pattern
        elif any(fnmatch.fnmatchcase(seg, pattern) for seg in _split_commands(flat)):
            return pattern
    return None


def path_denied(path: Path, patterns: Iterable[str], workspace: Path) -> str | None:
    """The first ``deny_paths`` pattern matching ``path``: a directory/file prefix (relative ones
    from the workspace), a glob (``*.env``, ``secrets/*``) on the name or the whole path, or a
    plain substring of the (workspace-relative, when inside) path."""
    text = str(path)
    for pattern in patterns:
        if any(ch in pattern for ch in "*?["):
            if fnmatch.fnmatchcase(path.name, pattern) or fnmatch.fnmatchcase(text, pattern):
                return pattern
            rel = os.path.relpath(text, workspace)
            if fnmatch.fnmatchcase(rel, pattern):
                return pattern
            continue
        prefix = Path(os.path.realpath(workspace / os.path.expanduser(pattern)))
        # Substrings are looked for in the workspace-relative path when inside the workspace,
        # so the directories above the workspace cannot match by accident.
        shown = os.path.relpath(text, workspace) if path.is_relative_to(workspace) else text
        if path == prefix or path.is_relative_to(prefix) or pattern in shown:
            return pattern
    return None


def summarize_args(tool: Tool, args: dict[str, Any], paths: list[Path], commands: list[str]) -> str:
    if commands:
        return "\n".join(commands)
    text = json.dumps(args, ensure_ascii=False, default=str)
    if len(text) > 500:
        text = text[:500] + "…"
    if paths:
        return ", ".join(str(p) for p in paths) + f"  {text}"
    return text


async def _targets(tool: Tool, args: dict[str, Any],
                   ctx: ToolContext) -> tuple[list[Path], list[str]]:
    """The paths and commands a call would touch; tools whose targets come from a glob say
    which files they would change. Raises on arguments that do not say."""
    paths = target_paths(tool, args, ctx)
    commands = target_commands(tool, args, ctx)
    expand = getattr(tool, "expand_targets", None)
    if callable(expand):
        paths = [*paths, *await expand(args, ctx)]
    return paths, commands


async def _preview(tool: Tool, args: dict[str, Any], ctx: ToolContext) -> str | None:
    fn = getattr(tool, "preview", None)
    if not callable(fn):
        return None
    try:
        value = fn(args, ctx)
        if inspect.isawaitable(value):
            value = await value
    except Exception:  # a preview is a courtesy; asking without it beats not asking
        return None
    return value or None


@records.define
class Gates:
    """The gate pipeline for one agent (its role fence, plan mode, trust, approver, memory).

    ``fence`` is an extra predicate (e.g. the registry's ``is_allowed``). ``approver`` None means
    headless: calls that need approval are refused with a hint about ``--trust``.
    ``read_only_role`` names the agent's role when that role is read-only
    (``nyzhi.core.runtime.roles.fence_tools`` sets it, and the read-only sandbox with it).
    """

    trust: TrustPolicy = attrs.field(factory=TrustPolicy)
    allowed_tools: frozenset[str] | None = None
    disallowed_tools: frozenset[str] = frozenset()
    plan_mode: bool = False
    approver: Approver | None = None
    memory: ApprovalMemory = attrs.field(factory=ApprovalMemory)
    fence: Callable[[str], bool] | None = None
    read_only_role: str | None = None
    # permission_request hooks: they may deny any call that needs approval, and allow one,
    # except a call that must be asked every time (protected configuration, always_ask).
    permission_hook: PermissionHook | None = None
    # A Claude Code PreToolUse hook's permissionDecision per call id ("allow" or "ask"; a deny
    # never reaches the gates): allow skips asking where a hook may allow (not protected
    # configuration, not always_ask); ask asks a person even for a call that would run unasked.
    hook_verdicts: dict[str, str] = attrs.field(factory=dict)
    # With an approver, whether a person is there to ask right now (None: always). A headless
    # run attached by ``nyz attach`` asks only while a front end is attached; otherwise it
    # refuses exactly as a run with no approver.
    attended: Callable[[], bool] | None = None

    def asks(self) -> bool:
        """Whether a call that needs approval would be put to a person now."""
        return self.approver is not None and (self.attended is None or self.attended())

    async def check(
        self, tool: Tool, args: dict[str, Any], ctx: ToolContext, *, call_id: str = ""
    ) -> GateDecision:
        name = tool.name
        read_only = tool.permission is Permission.READ_ONLY
        fenced = self._fenced(tool, ctx, read_only)  # 1. role fence, 2. plan mode
        if fenced is not None:
            return fenced
        try:
            paths, commands = await _targets(tool, args, ctx)
        except Exception as exc:  # bad arguments: we cannot tell what the call touches
            return _deny(SANDBOX, f"cannot determine what `{name}` would touch: {exc}")
        # 3. sandbox
        refusal = self._sandbox(tool, paths, ctx)
        if refusal:
            return _deny(SANDBOX, refusal, paths, commands)
        # 4. deny rules
        refusal = self._deny_rules(name, paths, commands, ctx)
        if refusal:
            return _deny(DENY_RULES, refusal, paths, commands)
        # 5. trust-mode auto-approval
        def approve(reason: str, by: str) -> GateDecision:
            return GateDecision(True, TRUST, reason, by, tuple(paths), tuple(commands))

        hook_verdict = self.hook_verdicts.pop(call_id, None) if call_id else None
        if read_only and hook_verdict != "ask":
            return approve("read-only tool", "read_only")
        always_ask = name.lower() in _lower_set(self.trust.always_ask) or hook_verdict == "ask"
        protected = self._protected(paths, ctx)
        if hook_verdict == "allow" and protected is None and not always_ask:
            return GateDecision(True, APPROVAL, "allowed by a PreToolUse hook", "hook",
                                tuple(paths), tuple(commands))
        if protected is not None:
            # Configuration of what nyz or git runs: only the user may let it change.
            if self.trust.mode is TrustMode.FULL:
                return approve("trust mode full", "trust")
            if not self.asks():
                return _deny(
                    APPROVAL,
                    f"`{name}` would change {protected}; that needs the user's approval in every "
                    "trust mode but full, and nobody can approve it in this headless run",
                    paths, commands,
                )
            always_ask = True
        if not always_ask and (standing := await self._standing_approval(tool, paths, ctx)):
            return approve(*standing)
        # 6. ask
        return await self._ask(tool, args, ctx, call_id, paths, commands, always_ask)

    def _fenced(self, tool: Tool, ctx: ToolContext, read_only: bool) -> GateDecision | None:
        """The refusal of a call the agent may not make at all: outside its role's tools, a
        change under a read-only role, or a change in plan mode. None: it may."""
        name = tool.name
        if not ToolFence(self.allowed_tools, self.disallowed_tools).allows(name) or (
            self.fence is not None and not self.fence(name)
        ):
            return fenced_out(name)
        if self.read_only_role and not read_only and not self._confined_read_only(tool, ctx):
            return _deny(
                ROLE_FENCE,
                f"the `{self.read_only_role}` role is read-only and `{name}` can change files "
                "or state; report what should change instead",
            )
        if self.plan_mode and not read_only:
            return _deny(
                PLAN_MODE,
                f"`{name}` changes things and is blocked in plan mode: only read-only tools run "
                "while planning (switch to act mode to run it)",
            )
        return None

    async def _standing_approval(self, tool: Tool, paths: list[Path],
                                 ctx: ToolContext) -> tuple[str, str] | None:
        """Why a call that need not be asked every time runs unasked, and by what (an
        approval remembered, a trust pattern, the config's allow-list, the trust mode), as
        ``(reason, by)``; None: a person is asked."""
        name = tool.name
        if name in self.memory:
            return "approved always for this session", "session"
        if self.trust.remember_approvals and name in await self._remembered(ctx):
            return ("approved always in this workspace (agent.trust.remember_approvals)",
                    "remembered")
        pattern = self.trust.auto_approves(name)
        if pattern is not None:
            return f"agent.trust.auto_approve pattern {pattern!r}", "trust"
        # A tool the config allow-lists where it is declared (an MCP server's allow_tools).
        listed = getattr(tool, "allow_listed_by", None)
        if listed:
            return listed, "trust"
        why = self._auto_approval(tool, paths, ctx)
        if why:
            return why, "trust"
        return None

    @staticmethod
    def _confined_read_only(tool: Tool, ctx: ToolContext) -> bool:
        """A command tool that bwrap confines, running under the read-only sandbox."""
        from nyzhi.tools.sandbox import SandboxPolicy

        policy = ctx.sandbox
        return (
            getattr(tool, "runs_sandboxed", False)
            and isinstance(policy, SandboxPolicy)
            and policy.level is SandboxLevel.READ_ONLY
        )

    @staticmethod
    def _protected(paths: list[Path], ctx: ToolContext) -> str | None:
        """The protected configuration (``nyzhi.tools.protected``) a call's targets touch."""
        from nyzhi.tools.sandbox import SandboxPolicy

        policy = ctx.sandbox
        if not paths or not isinstance(policy, SandboxPolicy):
            return None
        for path in paths:
            hit = policy.protected_refusal(path)
            if hit:
                return f"{path} ({hit})"
        return None

    async def _remembered(self, ctx: ToolContext) -> frozenset[str]:
        """The workspace's remembered "always" answers, read once per memory (off the trio
        thread: it is a file read)."""
        if self.memory.remembered is None:
            from nyzhi.config.approvals import remembered_tools

            self.memory.remembered = await trio.to_thread.run_sync(
                remembered_tools, ctx.workspace_root
            )
        return self.memory.remembered

    def _sandbox(self, tool: Tool, paths: list[Path], ctx: ToolContext) -> str | None:
        from nyzhi.tools.sandbox import SandboxError, SandboxPolicy

        policy = ctx.sandbox
        if not isinstance(policy, SandboxPolicy) or tool.permission is Permission.READ_ONLY:
            return None
        if getattr(tool, "runs_sandboxed", False):
            try:  # bwrap confines it at run time; refuse now if that cannot happen
                policy.wrap("true", ctx.cwd)
            except SandboxError as exc:
                return str(exc)
            return None
        if policy.level is SandboxLevel.READ_ONLY:
            return f"the read-only sandbox blocks `{tool.name}`, which can change files or state"
        for path in paths:
            try:
                policy.check_write(path)
            except SandboxError as exc:
                return str(exc)
        return None

    def _deny_rules(
        self, name: str, paths: list[Path], commands: list[str], ctx: ToolContext
    ) -> str | None:
        trust = self.trust
        denied = _lower_set(trust.deny_tools)
        if "*" in denied or name.lower() in denied:
            rule = next((t for t in trust.deny_tools if t.lower() in ("*", name.lower())), "*")
            return f"tool `{name}` is denied by {trust.source_of('deny_tools', rule)}"
        if paths:  # realpath costs a syscall per path part: only when there is a path
            ws = Path(os.path.realpath(ctx.workspace_root))
            for path in paths:
                hit = path_denied(path, trust.deny_paths, ws)
                if hit:
                    return (f"path {path} matches {trust.source_of('deny_paths', hit)} "
                            f"pattern {hit!r}")
        patterns = list(trust.deny_commands)
        if trust.default_deny_commands:
            patterns += DEFAULT_DENY_COMMANDS
        for command in commands:
            plain = [p for p in trust.deny_paths if not any(ch in p for ch in "*?[")]
            for p in plain:
                if p in command:
                    return (f"command mentions {p!r}, denied by "
                            f"{trust.source_of('deny_paths', p)}")
            hit = command_denied(command, patterns)
            if hit:
                source = (
                    "built-in dangerous-command list"
                    if hit in DEFAULT_DENY_COMMANDS
                    else trust.source_of("deny_commands", hit)
                )
                return f"command {command!r} matches {hit!r} ({source})"
        return None

    def _auto_approval(self, tool: Tool, paths: list[Path], ctx: ToolContext) -> str | None:
        trust = self.trust
        allowed = _lower_set(trust.allow_tools)
        tool_ok = not allowed or tool.name.lower() in allowed
        if trust.mode is TrustMode.FULL:
            return "trust mode full"
        if trust.mode is TrustMode.AUTOEDIT:
            return "trust mode autoedit (file edit)" if tool.writes_files and tool_ok else None
        if trust.mode is TrustMode.LIMITED and tool_ok:
            if trust.allow_paths and paths:
                ws = Path(ctx.workspace_root)
                roots = [
                    Path(os.path.realpath(ws / os.path.expanduser(p))) for p in trust.allow_paths
                ]
                if not all(any(p == r or p.is_relative_to(r) for r in roots) for p in paths):
                    return None
            return "trust mode limited"
        return None

    async def _ask(self, tool, args, ctx, call_id, paths, commands, always_ask) -> GateDecision:
        name = tool.name
        headless = _deny(
            APPROVAL,
            f"`{name}` needs approval and nobody can approve it in this headless run. Re-run "
            "with --trust (-y), or set agent.trust.mode (limited/autoedit/full) or "
            "agent.trust.allow_tools in the config.",
            paths,
            commands,
        )
        if not self.asks() and self.permission_hook is None:
            return headless
        request = ApprovalRequest(
            call_id=call_id,
            tool_name=name,
            args_summary=summarize_args(tool, args, paths, commands),
            preview=await _preview(tool, args, ctx),
            agent_path=ctx.agent_path,
            arguments=dict(args),
        )
        if self.permission_hook is not None:
            verdict = await self.permission_hook(request, self.asks(),
                                                 not always_ask)
            if verdict is not None and verdict.kind is ApprovalKind.DENY:
                why = f": {verdict.reason}" if verdict.reason else ""
                return _deny(APPROVAL, f"a permission_request hook denied `{name}`{why}",
                             paths, commands)
            if verdict is not None:
                return GateDecision(True, APPROVAL, "allowed by a permission_request hook",
                                    "hook", tuple(paths), tuple(commands))
        if self.approver is None or not self.asks():
            return headless
        decision = await self.approver(request)
        if decision is None:
            return headless
        if decision.kind is ApprovalKind.DENY:
            why = f": {decision.reason}" if decision.reason else ""
            return _deny(APPROVAL, f"the user denied `{name}`{why}", paths, commands)
        reason = "approved by the user"
        if decision.kind is ApprovalKind.APPROVE_ALWAYS and not always_ask:
            self.memory.remember(name)
            if self.trust.remember_approvals:
                from nyzhi.config.approvals import remember_tool

                try:
                    await trio.to_thread.run_sync(remember_tool, ctx.workspace_root, name)
                except OSError as exc:  # the answer still holds for this session
                    reason += f" (not remembered for later sessions: {exc})"
        return GateDecision(True, APPROVAL, reason, "user", tuple(paths), tuple(commands))
