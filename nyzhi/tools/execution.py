"""Running one model step's tool calls: gates, ordering, streaming, cancellation.

Ordering: the calls are cut into runs of consecutive read-only calls and single mutating calls.
A run of read-only calls executes concurrently; mutating calls execute one at a time; runs
execute in the order the model gave. So "read a, read b" overlap, while "read a, edit a, read a"
still reads the old content first and the new content last (batching all reads ahead of all
writes, as the original did, would reorder that).

Every call gets exactly one ``ToolCallOutcome``, in the original order, including calls that
failed to parse, named an unknown tool, were refused by a gate, raised, or were cancelled: the
conversation needs one tool result per tool call to stay valid.

Cancellation: if the caller's cancel scope fires, running tools are cancelled (their processes
killed by the executors), and ``execute_calls`` fills ``into`` (a list the caller passes) with
the full outcome list — finished calls keep their results, the rest get an error result
"cancelled by user" — emits ``ToolCallFinished`` for those (shielded, bounded), then re-raises.
"""

from __future__ import annotations

import contextvars
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio

from nyzhi import records
from nyzhi.tools.admission import admit
from nyzhi.tools.base import Permission, Tool, ToolContext, ToolResult
from nyzhi.tools.gates import GateDecision, Gates, fenced_out
from nyzhi.tools.leases import LeaseBusy, write_leases
from nyzhi.tools.output import cap_output_async

# (agent path, the model's call id) of the tool call this task runs, for code below a tool
# that must say which call it serves (the editor protocol's executor embeds its terminal in
# that call); None outside a call. Tasks a tool starts inherit it.
CURRENT_CALL: contextvars.ContextVar[tuple[str, str] | None] = contextvars.ContextVar(
    "nyzhi_current_tool_call", default=None)

log = logging.getLogger(__name__)

CANCELLED_TEXT = "cancelled by user"


@records.frozen
class ToolCallRequest:
    """One call from the model. ``error`` is set (and ``arguments`` None) when its arguments
    did not parse (``nyzhi.provider.arguments.parse_tool_arguments`` says why)."""

    id: str
    name: str
    arguments: dict[str, Any] | None = None
    error: str | None = None


@records.frozen
class ToolCallOutcome:
    call_id: str
    name: str
    result: ToolResult
    decision: GateDecision | None  # None: never reached the gates (parse error, unknown tool)
    duration: float  # seconds, wall clock
    cancelled: bool = False


@records.frozen
class ToolCallStarted:
    call_id: str
    name: str
    arguments: dict[str, Any] | None


@records.frozen
class ToolOutputDelta:
    call_id: str
    name: str
    text: str


@records.frozen
class ToolCallFinished:
    outcome: ToolCallOutcome


ToolEvent = ToolCallStarted | ToolOutputDelta | ToolCallFinished
EventSink = Callable[[ToolEvent], Awaitable[None]]
Capper = Callable[[ToolResult, Tool, ToolContext], Awaitable[ToolResult] | ToolResult]


def _lookup(registry: Any, name: str) -> Tool | None:
    try:
        tool = registry.get(name)
    except (KeyError, LookupError):
        return None
    if isinstance(tool, type):
        tool = tool()
    return tool


async def _default_cap(result: ToolResult, tool: Tool, ctx: ToolContext) -> ToolResult:
    """Large outputs are cut and spilled to a file by ``nyzhi.tools.output``, off the trio
    thread."""
    return await cap_output_async(result, ctx, tool.name)


async def execute_calls(
    calls: list[ToolCallRequest],
    *,
    registry: Any,
    gates: Gates,
    ctx: ToolContext | None = None,
    ctx_factory: Callable[[ToolCallRequest], ToolContext] | None = None,
    on_event: EventSink | None = None,
    into: list[ToolCallOutcome] | None = None,
    cap: Capper | None = _default_cap,
) -> list[ToolCallOutcome]:
    """Gate and run ``calls``; return one outcome per call in the given order.

    Give either ``ctx`` (copied per call with its own output sink) or ``ctx_factory``.
    ``registry.get(name)`` returns the tool (None or KeyError: unknown); a registry's
    ``is_allowed(name)`` is honoured as part of the role fence. ``into`` receives the outcomes
    too, and is the only way to get them when the call is cancelled (see the module docstring).
    """
    if (ctx is None) == (ctx_factory is None):
        raise TypeError("execute_calls needs exactly one of ctx or ctx_factory")
    batch = _Batch(calls, registry, gates, ctx_factory or (lambda _call: ctx), on_event, cap)
    try:
        for segment in _segments(calls, registry):
            if len(segment) == 1:
                await batch.run_one(segment[0])
            else:
                async with trio.open_nursery() as nursery:
                    for index in segment:
                        nursery.start_soon(batch.run_one, index)
    except BaseException:
        final = _fill_cancelled(calls, batch.outcomes, batch.started)
        if into is not None:
            into[:] = final
        with trio.CancelScope(shield=True), trio.move_on_after(1.0):
            for outcome in final:
                if outcome.cancelled:
                    await batch.emit(ToolCallFinished(outcome))
        raise
    final = [o for o in batch.outcomes if o is not None]
    if into is not None:
        into[:] = final
    return final


class _Batch:
    """One ``execute_calls``: what each call needs (the registry, the gates, its context, where
    events go, the capper) and what has happened so far (``outcomes`` by index, None while a
    call has none; ``started``: when each call that began began)."""

    def __init__(self, calls: list[ToolCallRequest], registry: Any, gates: Gates,
                 ctx_for: Callable[[ToolCallRequest], ToolContext | None],
                 on_event: EventSink | None, cap: Capper | None) -> None:
        self.calls = calls
        self.registry = registry
        self.gates = gates
        self.ctx_for = ctx_for
        self.on_event = on_event
        self.cap = cap
        self.outcomes: list[ToolCallOutcome | None] = [None] * len(calls)
        self.started: dict[int, float] = {}

    async def emit(self, event: ToolEvent) -> None:
        if self.on_event is not None:
            await self.on_event(event)

    async def run_one(self, index: int) -> None:
        call = self.calls[index]
        self.started[index] = time.perf_counter()
        await self.emit(ToolCallStarted(call.id, call.name, call.arguments))
        result, decision = await self._gate_and_run(call)
        outcome = ToolCallOutcome(
            call.id, call.name, result, decision, time.perf_counter() - self.started[index]
        )
        self.outcomes[index] = outcome
        await self.emit(ToolCallFinished(outcome))

    async def _gate_and_run(self, call: ToolCallRequest) -> tuple[ToolResult, GateDecision | None]:
        tool = None if call.error is not None else _lookup(self.registry, call.name)
        if tool is None:  # never reaches the gates
            return _unrunnable(call), None
        base = self.ctx_for(call)
        assert base is not None

        async def sink(text: str) -> None:
            await self.emit(ToolOutputDelta(call.id, call.name, text))

        call_ctx = attrs.evolve(base, output=sink)
        args = call.arguments or {}
        decision: GateDecision | None = None
        try:
            decision = await self._gate(call, tool, args, call_ctx)
            if not decision.allowed:
                return decision.to_result(), decision
            result = await _run_tool(call, tool, args, call_ctx, decision)
        except LeaseBusy as exc:
            return ToolResult(
                str(exc), is_error=True,
                metadata={"lease_holder": exc.holder, "path": str(exc.path)},
            ), decision
        except Exception as exc:
            log.exception("tool %s (call %s) raised", call.name, call.id)
            return _redacted(ToolResult(
                f"Tool `{call.name}` failed: {type(exc).__name__}: {exc}", is_error=True
            ), call_ctx), decision
        return await self._finished(call, result, tool, call_ctx), decision

    async def _gate(self, call: ToolCallRequest, tool: Tool, args: dict[str, Any],
                    call_ctx: ToolContext) -> GateDecision:
        """The role fence (a registry's ``is_allowed``), then the gates."""
        # Gating and the tool's start are synchronous work on the shared trio thread: one
        # call at a time per scheduler batch, so a burst of calls never stalls the loop.
        await admit()
        is_allowed = getattr(self.registry, "is_allowed", None)
        if callable(is_allowed) and not is_allowed(call.name):
            return fenced_out(call.name)
        return await self.gates.check(tool, args, call_ctx, call_id=call.id)

    async def _finished(self, call: ToolCallRequest, result: ToolResult, tool: Tool,
                        call_ctx: ToolContext) -> ToolResult:
        """Redacted here, before the output is capped and spilled to a file: every way out
        (the model, events, ``nyz mcp serve``, the offload file) gets this text."""
        result = _redacted(result, call_ctx)
        if self.cap is not None:
            try:
                capped = self.cap(result, tool, call_ctx)
                result = await capped if hasattr(capped, "__await__") else capped
            except Exception:
                log.exception("capping the output of %s failed; returning it whole", call.name)
        return result


def _unrunnable(call: ToolCallRequest) -> ToolResult:
    """The error result of a call whose arguments did not parse or whose tool is unknown."""
    if call.error is not None:
        return ToolResult(
            f"Invalid arguments for `{call.name}`: {call.error}. Send the arguments as one "
            "JSON object matching the tool's parameters.", True
        )
    return ToolResult(
        f"Unknown tool `{call.name}`. Call only the tools you were given; a tool the "
        "system prompt lists as not loaded must be loaded with tool_search first.",
        is_error=True,
    )


async def _run_tool(call: ToolCallRequest, tool: Tool, args: dict[str, Any],
                    call_ctx: ToolContext, decision: GateDecision) -> ToolResult:
    """The allowed call itself: writers hold a lease on each resolved target while they run
    (see leases.py), and ``CURRENT_CALL`` names the call to the code below the tool."""
    async with write_leases(tool, call_ctx, decision.paths):
        current = CURRENT_CALL.set((call_ctx.agent_path, call.id))
        try:
            return await tool.run(args, call_ctx)
        finally:
            CURRENT_CALL.reset(current)


def _redacted(result: ToolResult, ctx: ToolContext) -> ToolResult:
    """``result`` with known secrets replaced in its output (``ToolContext.redactor``)."""
    if not ctx.redactor:
        return result
    output = ctx.redactor.redact(result.output)
    return result if output == result.output else attrs.evolve(result, output=output)


def _segments(calls: list[ToolCallRequest], registry: Any) -> list[list[int]]:
    """Consecutive read-only calls grouped; each mutating call alone; order kept."""
    segments: list[list[int]] = []
    run: list[int] = []
    for index, call in enumerate(calls):
        tool = _lookup(registry, call.name) if call.error is None else None
        # Unparseable calls and unknown tools only produce an error: they cannot mutate.
        if tool is None or tool.permission is Permission.READ_ONLY:
            run.append(index)
            continue
        if run:
            segments.append(run)
            run = []
        segments.append([index])
    if run:
        segments.append(run)
    return segments


def _fill_cancelled(
    calls: list[ToolCallRequest],
    outcomes: list[ToolCallOutcome | None],
    started: dict[int, float],
) -> list[ToolCallOutcome]:
    now = time.perf_counter()
    final = []
    for index, call in enumerate(calls):
        outcome = outcomes[index]
        if outcome is None:
            text = CANCELLED_TEXT if index in started else f"not run: {CANCELLED_TEXT}"
            outcome = ToolCallOutcome(
                call.id,
                call.name,
                ToolResult(text, is_error=True, metadata={"cancelled": True}),
                None,
                now - started.get(index, now),
                cancelled=True,
            )
        final.append(outcome)
    return final
