"""Running hooks: real ``sh -c`` subprocesses fed the event's JSON payload.

Order: the matching hooks of an event run **one after another, in configured order**
(``[[agent.hooks]]`` first, then Claude settings), so a later hook sees what an earlier one
did (a formatter then a linter on ``after_edit``), and a blocking hook stops the rest: once
a pre_tool_use hook has said no, later ones must not run side effects for a call that will
not happen.

A hook's process gets:

* stdin: the payload as JSON plus ``hook_event_name`` (Claude's name for Claude hooks),
  ``session_id`` and ``cwd`` (caller keys win). ``tool_args``/``tool_input`` and
  ``output``/``tool_response`` are mirrored, so scripts written for nyzhi or for Claude Code
  both find their key. Payload conventions: tool events carry ``tool_name``, ``tool_args``
  (an object), ``call_id``; post_tool_use adds ``output`` and ``success``; after_edit adds
  ``file_path``/``paths``; user_prompt_submit carries ``prompt``; subagent events ``agent``;
  ``session_id`` may be given per call (it wins over the runner's);
* env: the runner's environment filtered by the shell policy (``[shell.env]``; keys and
  tokens are not inherited), then the hook's own ``env`` table, then ``NYZHI_HOOK_EVENT``, ``NYZHI_TOOL_NAME``,
  ``NYZHI_FILE_PATH`` (first file), ``NYZHI_FILE_PATHS`` (newline separated),
  ``NYZHI_SESSION_ID`` (payload's, else the runner's), ``NYZHI_CWD``, ``NYZHI_AGENT`` and ``CLAUDE_PROJECT_DIR``;
* ``{file}`` in the command replaced by the shell-quoted first file path.

It runs in its own process group. On timeout or cancellation the whole group is killed
(SIGKILL) and reaped; after a normal exit any leftover background children in the group are
killed too, so hooks never leave orphans (detach with ``setsid`` if you really mean to).

Results:

* exit 0: stdout may be a JSON decision: ``{"decision": "block"|"approve", "reason"}``,
  ``{"continue": false, "stopReason"}``, or Claude's ``{"hookSpecificOutput":
  {"permissionDecision": "deny"|"allow", "permissionDecisionReason", "additionalContext"}}``,
  or (permission_request) Claude's ``{"hookSpecificOutput": {"decision": {"behavior":
  "allow"|"deny", "message"}}}``. An allow counts on pre_tool_use and permission_request.
  Plain stdout of user_prompt_submit and session_start hooks is context for the model; of
  compact_context hooks, extra instructions for the summary.
* exit 2: on pre_tool_use / user_prompt_submit it blocks, with stderr as the reason the model
  reads; on permission_request it denies the call without asking anyone; on teammate_idle the teammate gets stderr as its next message and keeps working; on
  task_completed the task's owner is told stderr as why the completion was rejected. On other
  events stderr becomes feedback for the model (``HookOutcome.message``).
* any other exit, a timeout or a failure to start: a warning in the outcome, never an
  exception, unless the hook has ``block = true`` and the event can block (fail closed).
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import trio

from nyzhi import records
from nyzhi.config.procgroup import signal_group
from nyzhi.core.events import MAIN_AGENT
from nyzhi.core.runtime.hooks.claude_io import claude_bodies
from nyzhi.core.runtime.hooks.claude_out import claude_verdict
from nyzhi.core.runtime.hooks.spec import HOOK_EVENTS, SUBJECT_KEYS, HookSpec
from nyzhi.core.runtime.hooks.verdict import Verdict
from nyzhi.spawn import open_bound_process
from nyzhi.tools.env_policy import EnvPolicy, child_env

# Exit 2 on these says no: the tool call or prompt is refused; a teammate going idle is given
# the hook's stderr as more work; a completed task's owner is told why it was rejected.
# On permission_request, exit 2 (or a deny decision) refuses the call without asking anyone.
BLOCKING_EVENTS = frozenset({"pre_tool_use", "user_prompt_submit", "teammate_idle",
                             "task_completed", "permission_request"})
# A decision to allow skips asking a person on these.
APPROVING_EVENTS = frozenset({"pre_tool_use", "permission_request"})
# Plain stdout of these is context: for the model (prompt, session start), or added to the
# summary's instructions (compact_context).
CONTEXT_EVENTS = frozenset({"user_prompt_submit", "session_start", "compact_context"})
OUTPUT_LIMIT = 1 << 20  # bytes kept per stream; the rest is drained and dropped
_PATH_KEYS = ("file_path", "path", "notebook_path")


@records.frozen
class HookResult:
    """What one hook process did. ``exit_code`` is None when it timed out or never started."""

    spec: HookSpec
    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    duration_ms: float = 0.0
    error: str | None = None


@records.frozen
class HookOutcome:
    """The combined verdict of an event's hooks.

    ``blocked``: the action must not happen (pre_tool_use, user_prompt_submit only);
    ``message``: for the model: the block reason, or feedback from a non-blocking hook;
    ``context``: text to add to the model's context (prompt/session hooks);
    ``approved``: a pre_tool_use hook explicitly allowed the call (skip asking a person);
    ``warnings``: failed hooks and hook notices, for the user, never fatal.
    Claude Code hooks only (``claude_out``): ``ask`` (ask a person even when the call would
    run unasked), ``feedback`` (for the model after a tool's result), ``updated_input`` (the
    call's new input, Claude's names), ``stop``/``stop_reason`` (``continue: false``: end the
    turn), ``suppress`` (``suppressOutput``).
    """

    blocked: bool = False
    message: str = ""
    context: str = ""
    approved: bool = False
    warnings: tuple[str, ...] = ()
    results: tuple[HookResult, ...] = ()
    ask: bool = False
    feedback: str = ""
    updated_input: dict[str, Any] | None = None
    stop: bool = False
    stop_reason: str = ""
    suppress: bool = False


def payload_paths(payload: Mapping[str, Any]) -> list[str]:
    """File paths an event concerns: ``file_path(s)`` in the payload or in ``tool_input``."""
    paths: list[str] = []
    sources = [payload]
    for key in ("tool_input", "tool_args"):
        if isinstance(payload.get(key), Mapping):
            sources.append(payload[key])
    for src in sources:
        for key in _PATH_KEYS:
            if isinstance(src.get(key), str) and src[key]:
                paths.append(src[key])
        for key in ("file_paths", "paths"):
            if isinstance(src.get(key), list):
                paths += [p for p in src[key] if isinstance(p, str) and p]
    return list(dict.fromkeys(paths))


class HookRunner:
    """Fires hooks for one agent/session. ``session_id`` may be set once it is known."""

    def __init__(
        self,
        specs: Sequence[HookSpec],
        cwd: str | os.PathLike[str],
        env: Mapping[str, str] | None = None,
        *,
        session_id: str | None = None,
        agent: str = MAIN_AGENT,
        env_policy: EnvPolicy | None = None,
        transcript_path: str = "",
        permission_mode: Callable[[], str] | None = None,
    ) -> None:
        self.specs = tuple(specs)
        self.cwd = os.fspath(cwd)
        self.env = dict(os.environ if env is None else env)  # the parent the policy filters
        self.env_policy = env_policy
        self.session_id = session_id
        self.agent = agent
        # Claude Code hooks' common fields (``claude_io``): the session's transcript in Claude
        # Code's JSONL shape (``nyzhi.core.runtime.hooks.transcript``) and its permission mode now.
        self.transcript_path = transcript_path
        self.permission_mode = permission_mode

    def has(self, event: str, only: str | None = None) -> bool:
        """Whether any hook listens to ``event`` (skip building a payload when not);
        ``only``: ``"claude"`` or ``"ours"``, hooks of that kind only."""
        return any(s.event == event and _kind_fits(s, only) for s in self.specs)

    def has_claude(self, claude_event: str) -> bool:
        """Whether a Claude Code hook listens to ``claude_event`` (its name: ``Stop``)."""
        return any(s.claude_event == claude_event for s in self.specs)

    def matching(self, event: str, payload: Mapping[str, Any],
                 only: str | None = None) -> list[HookSpec]:
        subject = payload.get(SUBJECT_KEYS.get(event, "tool_name"))
        paths = payload_paths(payload)
        return [
            s for s in self.specs
            if s.event == event and _kind_fits(s, only)
            and s.matches(subject if isinstance(subject, str) else None, paths, self.cwd)
        ]

    def _bodies(self, spec: HookSpec, event: str, payload: Mapping[str, Any]) -> list[dict]:
        """The stdin objects for ``spec``: Claude Code's shape for its hooks (one per file of
        a multi-file edit), else nyz's payload with both spellings of its keys."""
        if spec.claude_event is not None:
            mode = self.permission_mode() if self.permission_mode is not None else "default"
            return claude_bodies(spec.claude_event, payload, {
                "session_id": self.session_id, "cwd": self.cwd,
                "transcript_path": self.transcript_path, "permission_mode": mode})
        body: dict[str, Any] = {"hook_event_name": event, "session_id": self.session_id,
                                "cwd": self.cwd}
        body.update(payload)
        # nyzhi's own names and Claude Code's for the same things, so scripts written for
        # either read what they expect.
        for ours, claude in (("tool_args", "tool_input"), ("output", "tool_response")):
            if ours in body and claude not in body:
                body[claude] = body[ours]
            elif claude in body and ours not in body:
                body[ours] = body[claude]
        return [body]

    async def fire(self, event: str, payload: Mapping[str, Any] | None = None, *,
                   only: str | None = None) -> HookOutcome:
        """Run the hooks matching ``event`` in order and combine their verdicts (``only``:
        ``"claude"`` or ``"ours"``, hooks of that kind only).

        A checkpoint only when a hook runs. Cancellation kills the running hook's process
        group before propagating.
        """
        if event not in HOOK_EVENTS:
            raise ValueError(f"unknown hook event {event!r}: expected one of {', '.join(HOOK_EVENTS)}")
        payload = dict(payload or {})
        specs = self.matching(event, payload, only)
        if not specs:
            return HookOutcome()
        blocked = approved = ask = stop = suppress = False
        messages: list[str] = []
        contexts: list[str] = []
        feedback: list[str] = []
        warnings: list[str] = []
        results: list[HookResult] = []
        updated: dict[str, Any] | None = None
        stop_reason = ""
        for spec in specs:
            can_block = event in BLOCKING_EVENTS or spec.claude_event in ("Stop", "SubagentStop")
            for body in self._bodies(spec, event, payload):
                result = await self._run(spec, event, payload, body)
                results.append(result)
                verdict = _interpret(spec, event, result)
                approved = approved or verdict.approved
                ask = ask or verdict.ask
                suppress = suppress or verdict.suppress
                updated = verdict.updated_input if verdict.updated_input is not None else updated
                warnings += verdict.warnings
                contexts += [verdict.context] if verdict.context else []
                feedback += [verdict.feedback] if verdict.feedback else []
                messages += [verdict.message] if verdict.message else []
                if verdict.stop:
                    stop, stop_reason = True, verdict.stop_reason
                if verdict.blocked and can_block:
                    blocked = True
                    break
            if blocked or stop:
                break
        return HookOutcome(
            blocked=blocked,
            message="\n".join(messages),
            context="\n".join(contexts),
            approved=approved and not blocked and not ask,
            warnings=tuple(warnings),
            results=tuple(results),
            ask=ask and not blocked,
            feedback="\n".join(feedback),
            updated_input=None if blocked else updated,
            stop=stop,
            stop_reason=stop_reason,
            suppress=suppress,
        )

    def _environment(self, spec: HookSpec, event: str, payload: Mapping[str, Any]) -> dict[str, str]:
        paths = payload_paths(payload)
        env = child_env(self.env_policy, spec.env, parent=self.env)
        env.update(
            NYZHI_HOOK_EVENT=event,
            NYZHI_TOOL_NAME=str(payload.get("tool_name") or ""),
            NYZHI_FILE_PATH=paths[0] if paths else "",
            NYZHI_FILE_PATHS="\n".join(paths),
            NYZHI_SESSION_ID=str(payload.get("session_id") or self.session_id or ""),
            NYZHI_CWD=self.cwd,
            NYZHI_AGENT=str(payload.get("agent") or self.agent),
        )
        env.setdefault("CLAUDE_PROJECT_DIR", self.cwd)
        return env

    async def _run(self, spec: HookSpec, event: str, payload: Mapping[str, Any],
                   body: Mapping[str, Any]) -> HookResult:
        stdin_bytes = json.dumps(body, ensure_ascii=False, default=str).encode()
        command = spec.command
        paths = payload_paths(payload)
        if "{file}" in command and paths:
            command = command.replace("{file}", shlex.quote(paths[0]))
        started = time.monotonic()
        try:
            proc = await open_bound_process(  # dies with nyz, SIGKILL included (nyzhi.spawn)
                ["/bin/sh", "-c", command],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                cwd=self.cwd, env=self._environment(spec, event, payload),
                tree=True,  # the hook's shell and all it starts die with nyz
            )
        except OSError as exc:
            return HookResult(spec, None, error=f"could not start: {exc}")
        out = bytearray()
        err = bytearray()
        timed_out = False
        try:
            with trio.move_on_after(spec.timeout) as scope:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(_feed, proc.stdin, stdin_bytes)
                    nursery.start_soon(_drain, proc.stdout, out)
                    nursery.start_soon(_drain, proc.stderr, err)
                    await proc.wait()
            timed_out = scope.cancelled_caught
        finally:
            signal_group(proc.pid, signal.SIGKILL)
            with trio.CancelScope(shield=True):
                await proc.wait()
                for stream in (proc.stdin, proc.stdout, proc.stderr):
                    if stream is not None:
                        await stream.aclose()
        return HookResult(
            spec,
            None if timed_out else proc.returncode,
            out.decode(errors="replace"),
            err.decode(errors="replace"),
            timed_out,
            (time.monotonic() - started) * 1000,
        )


async def _feed(stream: Any, data: bytes) -> None:
    try:
        if data:
            await stream.send_all(data)
        await stream.aclose()
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass  # the hook does not read stdin: fine


async def _drain(stream: Any, sink: bytearray) -> None:
    while True:
        chunk = await stream.receive_some(65536)
        if not chunk:
            return
        room = OUTPUT_LIMIT - len(sink)
        if room > 0:
            sink += chunk[:room]


def _kind_fits(spec: HookSpec, only: str | None) -> bool:
    if only is None:
        return True
    return (spec.claude_event is not None) == (only == "claude")


_Verdict = Verdict


def _label(spec: HookSpec, event: str) -> str:
    cmd = spec.command if len(spec.command) <= 60 else spec.command[:57] + "..."
    return f"{event} hook `{cmd}`"


def _tail(text: str, lines: int = 10) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _interpret(spec: HookSpec, event: str, r: HookResult) -> _Verdict:
    can_block = event in BLOCKING_EVENTS
    label = _label(spec, spec.claude_event or event)
    if r.error is not None or r.timed_out or (r.exit_code not in (0, 2)):
        if r.error is not None:
            why = r.error
        elif r.timed_out:
            why = f"timed out after {spec.timeout:g}s (its process group was killed)"
        else:
            why = f"exited with status {r.exit_code}"
            if r.stderr.strip():
                why += f": {_tail(r.stderr)}"
        warning = f"{label} {why}"
        if spec.block and can_block:
            return _Verdict(blocked=True, message=f"Blocked by {label}: {why}", warnings=(warning,))
        return _Verdict(warnings=(warning,))
    if spec.claude_event is not None:
        return claude_verdict(spec.claude_event, r.exit_code, r.stdout, r.stderr, label)
    if r.exit_code == 2:
        reason = r.stderr.strip() or f"blocked by {label}"
        return _Verdict(blocked=can_block, message=reason)
    return _decision(spec, event, r.stdout)


def _decision(spec: HookSpec, event: str, stdout: str) -> _Verdict:
    text = stdout.strip()
    data: dict[str, Any] | None = None
    if text.startswith("{"):
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            data = parsed
    if data is None:
        return _Verdict(context=text if (text and event in CONTEXT_EVENTS) else "")
    specific = data.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    blocked = approved = False
    reason = ""
    decision = str(data.get("decision") or "").lower()
    permission = str(specific.get("permissionDecision") or "").lower()
    nested = specific.get("decision")  # Claude's PermissionRequest: {"behavior", "message"}
    if isinstance(nested, dict):
        permission = str(nested.get("behavior") or permission).lower()
        if nested.get("message") and not specific.get("permissionDecisionReason"):
            specific = {**specific, "permissionDecisionReason": nested["message"]}
    if decision == "block" or permission == "deny" or data.get("continue") is False:
        blocked = True
        reason = str(
            data.get("reason") or specific.get("permissionDecisionReason")
            or data.get("stopReason") or f"blocked by {_label(spec, event)}"
        )
    elif decision in ("approve", "allow") or permission == "allow":
        approved = True
    context = specific.get("additionalContext")
    warnings = (str(data["systemMessage"]),) if data.get("systemMessage") else ()
    return _Verdict(
        blocked=blocked and event in BLOCKING_EVENTS,
        approved=approved and event in APPROVING_EVENTS,
        message=reason,
        context=str(context) if context else "",
        warnings=warnings,
    )
