"""One model step's tool calls: hooks around the gated execution, events out, approvals in.

``GatedToolStep`` is the ``ToolStep`` the turn loop calls. It fires ``pre_tool_use`` hooks
(which may block a call; the hook's message goes back to the model), hands the rest to
``nyzhi.tools.execution.execute_calls`` (role fence, plan mode, sandbox, deny rules, trust,
approval — in that order), turns tool events into runtime events tagged with the agent's
path, then fires ``post_tool_use`` and, for a failed call, ``post_tool_use_failure``, for a
successful file change ``after_edit``. ``PermissionHooks`` fires ``permission_request`` (which
may allow or deny).

Approvals are messages: the gates' approver publishes an ``approval_request`` event and waits
for the front end to call ``Runtime.answer_approval`` with an ``ApprovalAnswer``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import trio

from nyzhi import records
from nyzhi.core import events as ev
from nyzhi.core.event_bus import Emit, EventBus
from nyzhi.core.loop.tool_executor import StepBook, run_on_executor
from nyzhi.core.protocol.ops import ApprovalAnswer  # the approve op's answers
from nyzhi.core.runtime.hooks import HookRunner
from nyzhi.provider import types as pt
from nyzhi.provider.arguments import ToolArgumentError, parse_tool_arguments
from nyzhi.tools.execution import (
    ToolCallFinished,
    ToolCallOutcome,
    ToolCallRequest,
    ToolCallStarted,
    ToolOutputDelta,
    execute_calls,
)
from nyzhi.tools.gates import ApprovalDecision, ApprovalKind, ApprovalRequest

if TYPE_CHECKING:
    from nyzhi.core.runtime.assembly import Tooling



@records.define(eq=False)
class _Pending:
    done: trio.Event
    kind: type[ev.Event]
    answer: ApprovalAnswer | str | None = None


class ApprovalBroker:
    """Routes approval requests and ``ask_user`` questions to whichever front end answers
    them: each is an event out and a reply message in, matched by ``request_id``."""

    def __init__(self, bus: EventBus) -> None:
        self.bus = bus
        self._pending: dict[str, _Pending] = {}

    async def _wait(
        self, request_id: str, event: ev.ApprovalRequest | ev.UserQuestion
    ) -> ApprovalAnswer | str | None:
        pending = _Pending(trio.Event(), type(event))
        self._pending[request_id] = pending
        try:
            await self.bus.publish(event)
            await pending.done.wait()
        finally:
            self._pending.pop(request_id, None)
        return pending.answer

    def question_for(self, agent_path: str) -> Callable[..., Awaitable[str]]:
        """An ``ask_user`` router for ``ToolContext.ask_user`` (one per agent)."""

        async def ask(question: str, options: list[dict[str, str]], allow_custom: bool) -> str:
            request_id = uuid.uuid4().hex[:12]
            event = ev.UserQuestion(
                agent=agent_path, request_id=request_id, question=question,
                options=tuple(options), allow_custom=allow_custom,
            )
            answer = await self._wait(request_id, event)
            return str(answer) if answer is not None else "__cancelled__"

        return ask

    async def request(self, req: ApprovalRequest) -> ApprovalDecision:
        request_id = uuid.uuid4().hex[:12]
        event = ev.ApprovalRequest(
            agent=req.agent_path, request_id=request_id, call_id=req.call_id,
            tool=req.tool_name, summary=req.args_summary, preview=req.preview or "",
        )
        answer = await self._wait(request_id, event)
        if answer is ApprovalAnswer.ALWAYS:
            return ApprovalDecision.always()
        if answer is ApprovalAnswer.APPROVE:
            return ApprovalDecision.approve()
        return ApprovalDecision.deny("the user declined")

    def waiting(self) -> int:
        """How many approvals and questions wait for an answer now (the status snapshot)."""
        return len(self._pending)

    def answer_approval(self, request_id: str, answer: ApprovalAnswer) -> None:
        self._answer(request_id, ev.ApprovalRequest, ApprovalAnswer.parse(answer))

    def answer_question(self, request_id: str, text: str) -> None:
        self._answer(request_id, ev.UserQuestion, text)

    def _answer(
        self, request_id: str, kind: type[ev.Event], answer: ApprovalAnswer | str
    ) -> None:
        pending = self._pending.get(request_id)
        if pending is None or pending.kind is not kind or pending.done.is_set():
            # the first answer wins: a second one (another front end) is refused, not applied
            raise KeyError(f"no pending {kind.type} with request id {request_id!r}")
        pending.answer = answer
        pending.done.set()


class PermissionHooks:
    """The gates' ``permission_hook`` for one agent: ``permission_request`` hooks (a deny
    decides; an allow decides when ``may_allow``, i.e. the call is not one a person must
    approve every time; else it is left to the person)."""

    def __init__(self, hooks: HookRunner, agent_path: str) -> None:
        self.hooks = hooks
        self.agent_path = agent_path

    async def __call__(
        self, req: ApprovalRequest, asking: bool, may_allow: bool
    ) -> ApprovalDecision | None:
        payload = {
            "tool_name": req.tool_name, "tool_args": _summary_args(req.arguments),
            "call_id": req.call_id, "summary": req.args_summary, "agent": self.agent_path,
            "permission_suggestions": [],
        }
        outcome = await self.hooks.fire("permission_request", payload)
        if outcome.blocked:
            return ApprovalDecision(ApprovalKind.DENY, outcome.message)
        if outcome.approved and may_allow:
            return ApprovalDecision.approve()
        return None  # left to the person (the notification hooks hear of it: core.notify)


def _summary_args(arguments: dict[str, Any] | None) -> dict[str, Any]:
    return dict(arguments or {})


class GatedToolStep:
    def __init__(
        self, tooling: Tooling, hooks: HookRunner, publish: Emit, agent_path: str
    ) -> None:
        self.tooling = tooling
        self.hooks = hooks
        self.publish = publish
        self.agent_path = agent_path
        # The agent actor binds its tool executor's book here when it starts
        # (``nyzhi.core.loop.tool_executor``); without one (tests of the loop alone) calls run
        # under no executor.
        self.executor: StepBook | None = None
        # Why the agent's model cannot see images now, or None (set by the agent factory): an
        # image a tool returned (``read`` of a PNG) goes to the model only when it can.
        self.no_images: Callable[[], str | None] | None = None
        # Set when a Claude Code hook answered ``continue: false`` (its ``stopReason``): the
        # turn loop ends the turn after this step (``TurnLoop`` reads and clears it).
        self.halt_reason: str | None = None

    async def __call__(self, calls: Sequence[pt.ToolCall], results: dict[str, pt.Message]) -> None:
        requests = [_request(c) for c in calls]
        if not self.hooks.has("pre_tool_use"):
            runnable = requests  # nothing can block: skip building payloads (every step)
        else:
            runnable = await self._pre_tool_use(requests, results)
        if not runnable:
            return
        outcomes: list[ToolCallOutcome] = []

        async def run(into: list[ToolCallOutcome]) -> None:
            await execute_calls(
                runnable,
                registry=self.tooling.registry,
                gates=self.tooling.gates,
                ctx=self.tooling.context,
                on_event=self._on_event,
                into=into,
            )

        try:
            if self.executor is not None:
                await run_on_executor(self.executor, run, outcomes)
            else:
                await run(outcomes)
        finally:
            redact = self.tooling.redactor.redact
            for out in outcomes:  # a known secret never reaches the model (config.secrets)
                text, images = redact(out.result.output), tuple(out.result.images)
                blind = self.no_images() if images and self.no_images is not None else None
                if blind:
                    text, images = f"{text}\n(the image is not shown: {blind})", ()
                results[out.call_id] = pt.Message(
                    "tool", text, tool_call_id=out.call_id, name=out.name,
                    is_error=out.result.is_error, images=images,
                )
        if any(self.hooks.has(e) for e in _AFTER_EVENTS):
            feedback = await self._post_tool_use(runnable, outcomes)
            for call_id, text in feedback.items():  # Claude's PostToolUse: for the model
                msg = results[call_id]
                results[call_id] = attrs.evolve(
                    msg, content=f"{msg.content}\n\n<post-tool-use-hook>\n{text}\n"
                                 "</post-tool-use-hook>")

    def _halt(self, outcome: Any) -> None:
        if outcome.stop and self.halt_reason is None:
            self.halt_reason = outcome.stop_reason or "a hook ended the turn"

    async def _pre_tool_use(
        self, requests: list[ToolCallRequest], results: dict[str, pt.Message]
    ) -> list[ToolCallRequest]:
        """Fire ``pre_tool_use``; a blocked call gets its result here. Returns the rest."""
        runnable: list[ToolCallRequest] = []
        for req in requests:
            payload = {
                "tool_name": req.name, "tool_args": _summary_args(req.arguments),
                "call_id": req.id,
            }
            outcome = await self.hooks.fire("pre_tool_use", payload)
            self._halt(outcome)
            if outcome.updated_input is not None and req.arguments is not None:
                from nyzhi.tools.claude_names import ours_tool_input

                changed = ours_tool_input(req.name, outcome.updated_input)
                if changed is not None:  # Claude's updatedInput: the call runs with it
                    req = attrs.evolve(req, arguments={**req.arguments, **changed})
            if outcome.ask:
                self.tooling.gates.hook_verdicts[req.id] = "ask"
            elif outcome.approved:
                self.tooling.gates.hook_verdicts[req.id] = "allow"
            if outcome.blocked:
                text = f"blocked by a pre_tool_use hook: {outcome.message or 'no reason given'}"
                await self.publish(ev.ToolStart(agent=self.agent_path, call_id=req.id, name=req.name,
                                                arguments=_dump(req.arguments)))
                await self.publish(ev.ToolDone(agent=self.agent_path, call_id=req.id, name=req.name,
                                               output=text, is_error=True))
                results[req.id] = pt.Message("tool", text, tool_call_id=req.id, name=req.name,
                                             is_error=True)
            else:
                runnable.append(req)
        return runnable

    async def _post_tool_use(
        self, runnable: list[ToolCallRequest], outcomes: list[ToolCallOutcome]
    ) -> dict[str, str]:
        """Fire the after-tool hooks; what Claude Code hooks said for the model, per call."""
        by_id = {r.id: r for r in runnable}
        feedback: dict[str, str] = {}
        for out in outcomes:
            req = by_id[out.call_id]
            payload = {
                "tool_name": out.name, "tool_args": _summary_args(req.arguments),
                "output": out.result.output[:10_000], "success": not out.result.is_error,
                "call_id": out.call_id,
            }
            said = [await self.hooks.fire("post_tool_use", payload)]
            if out.result.is_error:  # Claude Code's PostToolUseFailure: the error as its own key
                said.append(await self.hooks.fire("post_tool_use_failure", {
                    **payload, "error": payload["output"], "is_interrupt": False}))
            for outcome in said:
                self._halt(outcome)
            text = "\n".join(o.feedback for o in said if o.feedback)
            if text:
                feedback[out.call_id] = text
            if out.result.is_error:
                continue
            tool = self.tooling.registry.get(out.name)
            if tool is not None and getattr(tool, "writes_files", False):
                paths = _target_paths(tool, req.arguments)
                if hasattr(tool, "expand_targets"):  # files from a glob: the ones it changed
                    paths = [str(p) for p in out.result.metadata.get("paths") or paths]
                await self.hooks.fire("after_edit", {**payload, "paths": paths,
                                                     "file_path": paths[0] if paths else ""})
        return feedback

    async def _on_event(self, event: Any) -> None:
        if isinstance(event, ToolCallStarted):
            await self.publish(ev.ToolStart(agent=self.agent_path, call_id=event.call_id,
                                            name=event.name, arguments=_dump(event.arguments)))
        elif isinstance(event, ToolOutputDelta):
            await self.publish(ev.ToolOutputDelta(agent=self.agent_path, call_id=event.call_id,
                                                  text=event.text))
        elif isinstance(event, ToolCallFinished):
            out = event.outcome
            await self.publish(ev.ToolDone(
                agent=self.agent_path, call_id=out.call_id, name=out.name,
                output=out.result.output, is_error=out.result.is_error,
                duration_ms=round(out.duration * 1000, 3),
                metadata=_jsonable(out.result.metadata),
            ))


_AFTER_EVENTS = ("post_tool_use", "post_tool_use_failure", "after_edit")


def _request(call: pt.ToolCall) -> ToolCallRequest:
    """The call with its arguments parsed; unparseable arguments become the error the model
    gets back as the call's result."""
    arguments = parse_tool_arguments(call.arguments)
    if isinstance(arguments, ToolArgumentError):
        return ToolCallRequest(call.id, call.name, None, str(arguments))
    return ToolCallRequest(call.id, call.name, arguments)


def _target_paths(tool: Any, args: dict[str, Any] | None) -> list[str]:
    try:
        return [str(p) for p in tool.target_paths(args or {})]
    except Exception:
        return []


def _dump(arguments: dict[str, Any] | None) -> str:
    return json.dumps(arguments or {}, ensure_ascii=False)


def _jsonable(meta: dict[str, Any]) -> dict[str, Any]:
    if not meta:
        return meta  # most results carry none: no trial serialisation per call
    try:
        json.dumps(meta)
        return meta
    except TypeError:
        return {k: str(v) for k, v in meta.items()}
