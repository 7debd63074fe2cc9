"""The turn loop: one user input in, model steps and tool calls until the model answers.

``TurnLoop`` owns an agent's thread (its list of messages) and knows nothing of screens,
actors or processes: it talks to a ``Provider``, hands tool calls to a ``ToolStep`` (gates,
hooks and execution live there) and reports everything through ``emit``. The agent actor
(``nyzhi.core.loop.agent``) runs it; tests can run it directly.

Cancellation (Esc / Ctrl-C) may land anywhere. Whatever was in flight is settled under a
shield before the ``Cancelled`` propagates: the partial assistant message is kept, every tool
call the model made gets a result ("cancelled by user" for those that did not finish), so the
thread stays valid for the provider and the next input can run.

Context: before each model step the thread is compacted when its estimated size passes the
threshold (``_maybe_compact``), and compaction cannot thrash: a system prompt and tools that
leave no room stop the turn with one error, and a compaction that freed too little is not
repeated until the thread has grown. A provider that still answers "prompt is too long"
(``ContextOverflowError``) gets a compacted thread and the same step once more.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import attrs
import trio

from nyzhi import records
from nyzhi.core import events as ev
from nyzhi.core.errors import mark_tool_step
from nyzhi.core.event_bus import Emit
from nyzhi.core.loop.compaction import compact, cut_index
from nyzhi.core.loop.context_window import (
    Calibration,
    ThreadMeter,
    estimate_chars,
    micro_compact,
    tokens_for,
)
from nyzhi.core.loop.prompt import schemas_chars
from nyzhi.core.loop.state_record import StateRecord
from nyzhi.provider import types as pt
from nyzhi.provider.errors import ContextOverflowError
from nyzhi.tools.execution import CANCELLED_TEXT

# A compaction that frees less than this share of the window is not repeated until the thread
# has grown by as much again: summarising a thread that is mostly the kept tail would cost a
# model call per step and free nothing.
MIN_FREED_SHARE = 0.10
# What a summary is assumed to take, when deciding whether a compaction would free enough to
# be worth its model call.
SUMMARY_ALLOWANCE_TOKENS = 256
# After an overflow the kept tail is this many messages (fewer than ``keep_recent``) when the
# error names both figures: the estimate was wrong by a known amount, so be thorough.
OVERFLOW_KEEP_RECENT = 2


class ToolStep(Protocol):
    """Runs one model step's tool calls (gates, hooks, execution); returns one tool-result
    message per call, in call order. On cancellation it must still fill ``results`` for
    every call it started."""

    async def __call__(
        self, calls: Sequence[pt.ToolCall], results: dict[str, pt.Message]
    ) -> None: ...


@records.define
class TurnSettings:
    max_steps: int = 100
    compaction_threshold: float = 0.85
    context_window: int = 128_000
    max_output: int = 4096  # the model's output limit: room left for the answer
    window_source: str = ""  # where context_window came from (nyzhi.provider.limits.Source)
    keep_recent: int = 6
    compact_instructions: str = ""
    archive_dir: Path | None = None


@records.define
class TurnOutcome:
    text: str
    steps: int
    stop_reason: str
    usage: pt.Usage
    is_error: bool = False
    reason: str = ""  # why a turn stopped early ("budget: tokens 20000/20000")


@records.frozen
class ContextUsage:
    """What fills the context window (``TurnLoop.context_usage``, the ``/context`` command):
    estimated tokens by part, as ``(name, tokens, count of messages or tools)``."""

    window: int
    trigger: int  # compaction starts above this many tokens
    window_source: str
    parts: tuple[tuple[str, int, int], ...]
    largest: tuple[str, ...] = ()  # the biggest messages, "tool result read (1,234)"


@records.define
class UsageTotals:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    thinking_tokens: int = 0  # of output_tokens (already counted there)
    steps: int = 0  # model steps taken, over every turn (an agent_status's ``step``)

    def add(self, u: pt.Usage, cost: float) -> None:
        self.input_tokens += u.input_tokens
        self.output_tokens += u.output_tokens
        self.cache_read_tokens += u.cache_read_tokens
        self.cache_write_tokens += u.cache_write_tokens
        self.cost_usd += cost
        self.thinking_tokens += u.thinking_tokens

    def as_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


class TurnLoop:
    # Set by whoever builds the agent, after construction (``agent_factory``, the runtime):
    # None until then, which turns each off.
    # What the agent's background processes did since its last step (exits, ports:
    # nyzhi.core.loop.background.notices), beside ``before_step`` (which teams replace).
    notices: Callable[[], list[pt.Message]] | None = None
    # What each request asks of the model's thinking, fitted to its model
    # (nyzhi.provider.thinking); None: no thinking parameter.
    thinking: pt.ThinkingConfig | None = None
    # The final answer as JSON matching this schema (nyz run --output-schema), or None.
    output_schema: dict[str, Any] | None = None
    # Called before each compaction with its reason and the thread's estimated tokens
    # (``compact_context`` hooks); returns extra summary instructions ("" for none).
    before_compact: Callable[[str, int], Awaitable[str]] | None = None
    # Called when the model answered without tool calls, with the answer and whether a
    # stop was already refused in this turn: a reason to go on (appended as the next user
    # message, as Claude Code's Stop hooks' ``decision: "block"``), or None to stop. The
    # turn's steps and the agent's budget still bound it.
    on_stop: Callable[[str, bool], Awaitable[str | None]] | None = None

    def __init__(
        self,
        *,
        agent_path: str,
        provider: pt.Provider,
        model: str | None = None,
        tool_schemas: Callable[[], Sequence[pt.ToolSchema]],
        tool_step: ToolStep,
        system_prompt: Callable[[], str],
        emit: Emit,
        settings: TurnSettings | None = None,
        on_message: Callable[[pt.Message], Awaitable[None]] | None = None,
        on_thread_replaced: Callable[[list[pt.Message]], Awaitable[None]] | None = None,
        before_step: Callable[[], Awaitable[list[pt.Message]]] | None = None,
        on_prompt: Callable[[str], Awaitable[tuple[str, str | None]]] | None = None,
        cost: Callable[[pt.Usage, str], float] | None = None,
        session_stem: str = "session",
        state_record: Callable[[list[pt.Message]], StateRecord] | None = None,
        limit: Callable[[], str | None] | None = None,
        limits: Any = None,
        calibration: Calibration | None = None,
    ) -> None:
        self.agent_path = agent_path
        self.provider = provider
        self.model = model  # per request; None: the provider's configured model
        self.tool_schemas = tool_schemas
        self.tool_step = tool_step
        self.system_prompt = system_prompt
        self.emit = emit
        self.settings = settings or TurnSettings()
        self.on_message = on_message
        self.on_thread_replaced = on_thread_replaced
        self.before_step = before_step
        self.on_prompt = on_prompt
        # ``!cmd`` outputs the user ran since the last prompt: sent before the next one
        self.shell_context: list[str] = []
        self.cost = cost or (lambda _u, _m: 0.0)
        self.session_stem = session_stem
        self.state_record = state_record  # what compaction keeps verbatim (state_record.py)
        # Asked before every model step: a reason to stop (the agent's budget), or None.
        self.limit = limit
        # The model's context window, resolved at each turn's start for the model in use
        # (a ``nyzhi.provider.limits.LimitsResolver``; None: ``settings`` as given).
        self.limits = limits
        self._limits_model: str | None = None
        self.calibration = calibration if calibration is not None else Calibration()
        # No threshold compaction below this estimate, after one that freed too little (see
        # MIN_FREED_SHARE).
        self._hold_until = 0
        self._tools_seen: tuple[pt.ToolSchema, ...] | None = None
        self._tools_chars = 0
        self.messages: list[pt.Message] = []
        self.meter = ThreadMeter()  # incremental size of ``messages`` (grown at its end)
        self.totals = UsageTotals()

    async def _append(self, message: pt.Message) -> None:
        self.messages.append(message)
        if self.on_message is not None:
            await self.on_message(message)

    async def run(self, prompt: str, images: tuple[pt.ImagePart, ...] = ()) -> TurnOutcome:
        """Run one turn. Raises ``trio.Cancelled`` after settling the thread if cancelled.

        Every turn ends with one ``turn_complete`` carrying its ``turn_start``'s id, emitted
        here whatever happens: answered, blocked, out of steps, failed (after an ``error``
        event; the exception propagates) or cancelled."""
        turn_id = uuid.uuid4().hex[:12]
        await self.emit(ev.TurnStart(agent=self.agent_path, turn_id=turn_id, prompt=prompt))
        outcome: TurnOutcome | None = None
        stop_reason = "error"
        try:
            outcome = await self._turn(prompt, images)
            return outcome
        except trio.Cancelled:
            stop_reason = "cancelled"
            raise
        except Exception as exc:
            with trio.CancelScope(shield=True):
                await self.emit(
                    ev.Error(
                        agent=self.agent_path, message=_describe(exc), kind="turn",
                        retryable=bool(getattr(exc, "retryable", False)),
                    )
                )
            raise
        finally:
            end = (
                ev.TurnComplete(
                    agent=self.agent_path, turn_id=turn_id, text=outcome.text,
                    steps=outcome.steps, stop_reason=outcome.stop_reason,
                )
                if outcome is not None
                else ev.TurnComplete(
                    agent=self.agent_path, turn_id=turn_id, stop_reason=stop_reason
                )
            )
            with trio.CancelScope(shield=True):
                await self.emit(end)

    def add_shell_context(self, command: str, output: str) -> None:
        """A ``!cmd`` the user ran (its output as the tool gave it, redacted and bounded):
        context for the next prompt, framed as command output, not as the user's words."""
        from nyzhi.tools.untrusted import frame_untrusted

        text = output if len(output) <= SHELL_CONTEXT_CHARS else (
            output[:SHELL_CONTEXT_CHARS] + f"\n[… {len(output) - SHELL_CONTEXT_CHARS} more "
            "characters left out]")
        self.shell_context.append(
            f"The user ran `{command[:500]}` in their shell before this message:\n"
            + frame_untrusted("command output", text))
        del self.shell_context[:-SHELL_CONTEXT_KEPT]

    async def _turn(self, prompt: str, images: tuple[pt.ImagePart, ...] = ()) -> TurnOutcome:
        refused = await self._take_prompt(prompt, images)
        if refused is not None:
            return refused
        turn_usage = pt.Usage()
        final_text = ""
        stop_refused = False
        for step in range(1, self.settings.max_steps + 1):
            reason = self.limit() if self.limit is not None else None
            if reason is not None:
                await self.emit(ev.Error(agent=self.agent_path, message=reason, kind="budget"))
                return TurnOutcome(final_text, step - 1, "budget", turn_usage, True, reason)
            await self._inject()
            self.meter.micro_compact(self.messages)
            self.totals.steps += 1
            system = self.system_prompt()  # built once per step: it can change between steps
            tools = tuple(self.tool_schemas())
            answer, reason = await self._step(system, tools)
            if answer is None:
                assert reason is not None
                await self.emit(ev.Error(agent=self.agent_path, message=reason, kind="context"))
                return TurnOutcome(final_text, step, "context", turn_usage, True, reason)
            text, calls, usage, stop = answer
            turn_usage = _add_usage(turn_usage, usage)
            final_text = text
            if not calls:
                go_on = await self.on_stop(text, stop_refused) if self.on_stop else None
                if go_on is None:
                    return TurnOutcome(text, step, stop, turn_usage)
                stop_refused = True
                await self._append(pt.Message("user", go_on))
                continue
            await self._run_tools(calls)
            halt = getattr(self.tool_step, "halt_reason", None)
            if halt is not None:  # a Claude Code hook answered continue: false
                self.tool_step.halt_reason = None  # type: ignore[attr-defined]
                await self.emit(ev.Error(agent=self.agent_path, message=halt, kind="hook_stop"))
                return TurnOutcome(final_text, step, "hook_stop", turn_usage, False, halt)
        message = f"Reached the maximum of {self.settings.max_steps} tool-calling steps"
        await self.emit(ev.Error(agent=self.agent_path, message=message, kind="max_steps"))
        return TurnOutcome(final_text, self.settings.max_steps, "max_steps", turn_usage, True)

    async def _take_prompt(self, prompt: str,
                           images: tuple[pt.ImagePart, ...]) -> TurnOutcome | None:
        """Put the user's prompt on the thread (after the hooks and with the queued !cmd
        outputs), or the outcome of a turn refused before anything is sent."""
        if self.on_prompt is not None:
            # user_prompt_submit hooks may block the prompt or add context to it (they see the
            # user's words, not the !cmd outputs queued beside them)
            prompt, blocked = await self.on_prompt(prompt)
            if blocked is not None:
                await self.emit(ev.Error(agent=self.agent_path, message=blocked, kind="blocked"))
                return TurnOutcome("", 0, "blocked", pt.Usage(), is_error=True)
        if self.shell_context:
            prompt = "\n\n".join([*self.shell_context, prompt])
        await self._resolve_limits()
        if (why := self._prompt_too_big(prompt)) is not None:
            # refused before anything is sent or recorded: the thread stays as it was (the
            # !cmd outputs are dropped with it: they may be what made it too big)
            self.shell_context.clear()
            await self.emit(ev.Error(agent=self.agent_path, message=why, kind="context"))
            return TurnOutcome("", 0, "context", pt.Usage(), True, why)
        self.shell_context.clear()  # sent now (kept for the next prompt if a hook blocked this)
        await self._append(pt.Message("user", prompt, images=images))
        return None

    async def _inject(self) -> None:
        """What arrived for the agent since its last step (``before_step``: team messages;
        ``notices``: its background processes) goes on the thread before the next one."""
        if self.before_step is not None:
            for injected in await self.before_step():
                await self._append(injected)
        if self.notices is not None:
            for injected in self.notices():
                await self._append(injected)

    async def _step(self, system: str, tools: tuple[pt.ToolSchema, ...]) -> tuple[
            tuple[str, list[pt.ToolCall], pt.Usage, str] | None, str | None]:
        """One model step on a thread that fits: compacted first if it grew past the trigger,
        and, when the provider still says the prompt is too long, compacted again and sent
        once more. Returns the step's (text, calls, usage, stop), or None and why not."""
        reason = await self._maybe_compact(system, tools)
        if reason is not None:
            return None, reason
        try:
            return await self._model_step(system, tools), None
        except ContextOverflowError as exc:
            reason = await self._recover_overflow(system, tools, exc)
        if reason is not None:
            return None, reason
        try:  # the same step, once, on the compacted thread
            return await self._model_step(system, tools), None
        except ContextOverflowError as again:
            return None, _still_too_long(again, self._model_name())

    # ---- one model call ---------------------------------------------------------------

    async def _model_step(
        self, system: str, tools: tuple[pt.ToolSchema, ...]
    ) -> tuple[str, list[pt.ToolCall], pt.Usage, str]:
        request = self._request(system, tools)
        sent_chars = self._request_chars(request.system, tools)
        reply = _Reply()
        try:
            async with contextlib.aclosing(self.provider.stream(request)) as stream:
                async for event in stream:
                    await self._take(reply, event)
        except trio.Cancelled:
            with trio.CancelScope(shield=True):
                await self._settle(reply)
                await self._flush_results(list(reply.calls.values()), {})
            raise
        await self._settle(reply)
        if _reported(reply.usage):
            await self._account(reply.usage, sent_chars)
        return "".join(reply.text), reply.ordered_calls(), reply.usage, reply.stop

    def _request(self, system: str, tools: tuple[pt.ToolSchema, ...]) -> pt.ChatRequest:
        """The step's request: the thread, and the output schema said in the system prompt
        too (in every format; Anthropic's has no other place for it)."""
        if self.output_schema is not None:
            from nyzhi.provider.output_schema import instruction

            system += instruction(self.output_schema)
        return pt.ChatRequest(
            messages=tuple(self.messages),
            system=system,
            tools=tools,
            model=self.model,
            thinking=self.thinking,
            output_schema=self.output_schema,
        )

    async def _take(self, reply: _Reply, event: pt.StreamEvent) -> None:
        """Keep one streamed event on ``reply``; text, thinking and retries are shown as
        they come."""
        if isinstance(event, pt.TextDelta):
            reply.text.append(event.text)
            await self.emit(ev.TextDelta(agent=self.agent_path, text=event.text))
        elif isinstance(event, pt.ThinkingDelta):
            if event.text:
                reply.thinking.append(event.text)
                await self.emit(ev.ThinkingDelta(agent=self.agent_path, text=event.text))
            if event.signature:
                reply.signature = event.signature
        elif isinstance(event, pt.ToolCallEnd):
            reply.calls[event.index] = pt.ToolCall(event.id, event.name, event.arguments)
        elif isinstance(event, pt.Usage):
            reply.usage = _add_usage(reply.usage, event)
        elif isinstance(event, pt.Stop):
            reply.stop = event.reason
        elif isinstance(event, pt.Retry):
            await self.emit(
                ev.Retry(
                    agent=self.agent_path, attempt=event.attempt,
                    max=event.max_attempts, wait_ms=int(event.delay * 1000),
                    reason=event.reason,
                )
            )

    async def _settle(self, reply: _Reply) -> None:
        """Keep what the model said so far; give it the calls it made (results follow).
        Once per step: a cancelled step settles before the ``Cancelled`` propagates."""
        if reply.settled:
            return
        reply.settled = True
        ordered = tuple(reply.ordered_calls())
        if reply.text or ordered or reply.thinking:
            await self._append(
                pt.Message(
                    "assistant", "".join(reply.text), tool_calls=ordered,
                    thinking="".join(reply.thinking) or None,
                    thinking_signature=reply.signature,
                )
            )

    async def _account(self, usage: pt.Usage, sent_chars: int) -> None:
        """A step's reported usage: calibrates the size estimate, adds to the totals and is
        shown with its cost."""
        model = self._model_name()
        prompt_tokens = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
        self.calibration.observe(self._calibration_key(), prompt_tokens, sent_chars)
        cost = self.cost(usage, model)
        self.totals.add(usage, cost)
        await self.emit(
            ev.Usage(
                agent=self.agent_path,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cache_read_tokens=usage.cache_read_tokens,
                cache_write_tokens=usage.cache_write_tokens,
                cost_usd=cost,
                total_input_tokens=self.totals.input_tokens,
                total_output_tokens=self.totals.output_tokens,
                total_cost_usd=self.totals.cost_usd,
                model=model,
                request_chars=sent_chars,
                thinking_tokens=usage.thinking_tokens,
                total_thinking_tokens=self.totals.thinking_tokens,
            )
        )

    # ---- tools ------------------------------------------------------------------------

    async def _run_tools(self, calls: list[pt.ToolCall]) -> None:
        results: dict[str, pt.Message] = {}
        try:
            await self.tool_step(calls, results)
        except trio.Cancelled:
            with trio.CancelScope(shield=True):
                await self._flush_results(calls, results)
            raise
        except Exception as exc:  # the step itself failed (not a tool: that is a result)
            mark_tool_step(exc)
            raise
        await self._flush_results(calls, results)

    async def _flush_results(self, calls: list[pt.ToolCall], results: dict[str, pt.Message]) -> None:
        for call in calls:
            msg = results.get(call.id) or pt.Message(
                "tool", CANCELLED_TEXT, tool_call_id=call.id, name=call.name, is_error=True
            )
            await self._append(msg)

    # ---- context ----------------------------------------------------------------------

    def _model_name(self) -> str:
        return self.model or self.provider.model

    def _calibration_key(self) -> str:
        return Calibration.key(getattr(self.provider, "name", ""), self._model_name())

    async def _resolve_limits(self) -> None:
        """The window of the model in use (it changes with ``/model``); a default window is
        noticed once, naming the key that sets it."""
        model = self._model_name()
        if self.limits is None or model == self._limits_model:
            return
        found = await self.limits.resolve(model)
        self._limits_model = model
        self.settings = attrs.evolve(
            self.settings, context_window=found.context_window, max_output=found.max_output,
            window_source=found.source,
        )
        notice = self.limits.notice(found)
        if notice is not None:
            await self.emit(ev.Error(agent=self.agent_path, message=notice, kind="notice"))

    def _tool_chars(self, tools: tuple[pt.ToolSchema, ...]) -> int:
        # The schemas are the same objects from step to step until the tool set changes (the
        # tooling caches them): measure them again only then.
        seen = self._tools_seen
        if seen is tools:  # the tooling's cached tuple itself: nothing changed
            return self._tools_chars
        if seen is None or len(seen) != len(tools) or any(
                a is not b for a, b in zip(seen, tools, strict=True)):
            self._tools_seen, self._tools_chars = tools, schemas_chars(tools)
        return self._tools_chars

    def _request_chars(self, system: str, tools: tuple[pt.ToolSchema, ...]) -> int:
        return self.meter.chars(self.messages) + len(system) + self._tool_chars(tools)

    def _estimate(self, system: str, tools: tuple[pt.ToolSchema, ...]) -> int:
        return self.meter.estimate(
            self.messages, system, extra_chars=self._tool_chars(tools),
            ratio=self.calibration.ratio(self._calibration_key()),
        )

    def context_usage(self) -> ContextUsage:
        """The next request's estimated size by part: system prompt, tool definitions, and
        the thread's messages by kind (the calibrated ratio when one was learnt)."""
        system = self.system_prompt()
        tools = tuple(self.tool_schemas())
        ratio = self.calibration.ratio(self._calibration_key())
        kinds = {"user": "your messages", "assistant": "answers and tool calls",
                 "tool": "tool results"}
        chars: dict[str, list[int]] = {name: [0, 0] for name in kinds.values()}
        sizes: list[tuple[int, str]] = []
        for m in self.messages:
            size = estimate_chars([m])
            name = kinds.get(m.role, "your messages")
            chars[name][0] += size
            chars[name][1] += 1
            label = f"tool result {m.name}" if m.role == "tool" else kinds.get(m.role, m.role)
            sizes.append((size, label))
        parts = [("system prompt", tokens_for(len(system), 0, ratio), 0),
                 ("tool definitions", tokens_for(self._tool_chars(tools), 0, ratio), len(tools))]
        parts += [(name, tokens_for(c, n, ratio), n) for name, (c, n) in chars.items()]
        largest = tuple(f"{label} (~{tokens_for(size, 1, ratio):,})"
                        for size, label in sorted(sizes, reverse=True)[:3])
        return ContextUsage(self.settings.context_window, self._trigger(),
                            self.settings.window_source, tuple(parts), largest)

    def _trigger(self) -> int:
        """Compact above this many tokens: the threshold's share of the window, leaving at
        least an eighth of it (at most the output limit) for the answer."""
        window = self.settings.context_window
        return int(min(self.settings.compaction_threshold * window, window - self._room()))

    def _room(self) -> int:
        """Tokens left for the answer: the output limit, at most an eighth of the window."""
        return min(self.settings.max_output, self.settings.context_window // 8)

    def _prompt_too_big(self, prompt: str) -> str | None:
        """Why ``prompt`` alone cannot fit the window with room for an answer (issue 55: a
        10 MB prompt went out as one 10.5 MB request against a 128k window), else None."""
        ratio = self.calibration.ratio(self._calibration_key())
        tokens = tokens_for(len(prompt), 1, ratio)
        window = self.settings.context_window
        fits = window - self._room()
        if tokens <= fits:
            return None
        return (
            f"the prompt is about {tokens:,} tokens ({len(prompt):,} characters), more than "
            f"the {fits:,} the {window:,}-token context window of model "
            f"{self._model_name()!r} leaves for it; nothing was sent. Save it to a file in the "
            "workspace and ask about the file instead (read and grep page through a file of "
            "any size)"
        )

    def _fixed_too_big(self, system: str, tools: tuple[pt.ToolSchema, ...]) -> str | None:
        """Why the system prompt and tools alone leave no room (compacting cannot help)."""
        ratio = self.calibration.ratio(self._calibration_key())
        fixed = tokens_for(len(system) + self._tool_chars(tools), 0, ratio)
        trigger = self._trigger()
        if fixed < trigger:
            return None
        window = self.settings.context_window
        source = f", from {self.settings.window_source}" if self.settings.window_source else ""
        return (
            f"the system prompt and tool definitions take about {fixed} tokens, more than the "
            f"{trigger} the {window}-token context window of model {self._model_name()!r}"
            f"{source} leaves for a request; compacting the conversation cannot make room. "
            "If the model's window is larger, set context_window for it in [provider.NAME] "
            "(docs/config.md); otherwise use a model with a larger window"
        )

    async def _maybe_compact(
        self, system: str, tools: tuple[pt.ToolSchema, ...] | None = None, *,
        force: bool = False, reason: str = "threshold", keep_recent: int | None = None,
        shorten: bool = False, hint: str = "",
    ) -> str | None:
        """Compact when the thread passed the trigger (or ``force``). Returns why the turn
        must stop instead (the fixed part does not fit), else None."""
        tools = tuple(self.tool_schemas()) if tools is None else tools
        before = self._estimate(system, tools)
        trigger = self._trigger()
        # Past this the request would not fit with room for the answer: compact even when
        # little would be freed (unless the last compaction freed too little: then the
        # provider's "prompt is too long", if it comes, is recovered from).
        hard = self.settings.context_window - self._room()
        if not force and (before <= trigger or before <= self._hold_until):
            return None
        if reason != "manual" and (why := self._fixed_too_big(system, tools)) is not None:
            return why
        keep = self.settings.keep_recent if keep_recent is None else keep_recent
        share = int(MIN_FREED_SHARE * self.settings.context_window)
        if not force and before <= hard and not self._frees_enough(keep, share):
            return None
        state = self.state_record(self.messages) if self.state_record is not None else None
        result = await compact(
            self.provider,
            self.messages,
            archive_dir=self.settings.archive_dir,
            stem=self.session_stem,
            keep_recent=keep,
            instructions=await self._compact_instructions(reason, before, hint),
            state=state,
        )
        if result is None:  # nothing old enough to summarise (no model call was made)
            if shorten and micro_compact(self.messages, keep_recent=0):
                self.meter.reset()  # the session log still has every result whole
                if self.on_thread_replaced is not None:
                    await self.on_thread_replaced(self.messages)
            return None
        await self._replace_thread(result.messages, shorten)
        after = self._estimate(system, tools)
        # Freed too little (the kept tail is most of it): not again until it grew that much.
        self._hold_until = after + share if before - after < share else 0
        await self.emit(
            ev.Compaction(
                agent=self.agent_path, before_tokens=before, after_tokens=after,
                summary=result.summary,
                archived_path=str(result.archived_path) if result.archived_path else None,
                reason=reason,
            )
        )
        return None

    def _frees_enough(self, keep: int, share: int) -> bool:
        """Whether what is before the cut (the summary replaces it) is enough to be worth
        a model call; if not, it is asked again at the next step, as the thread grows."""
        older = self.messages[:cut_index(self.messages, keep)]
        freeable = tokens_for(estimate_chars(older), len(older),
                              self.calibration.ratio(self._calibration_key()))
        return freeable >= share + SUMMARY_ALLOWANCE_TOKENS

    async def _compact_instructions(self, reason: str, before: int, hint: str) -> str:
        """The summary's instructions: the configured ones, the caller's hint (bounded) and
        what the ``compact_context`` hooks add."""
        instructions = "\n".join(p for p in (self.settings.compact_instructions,
                                             hint.strip()[:2000]) if p)
        if self.before_compact is not None:
            extra = await self.before_compact(reason, before)
            instructions = f"{instructions}\n{extra}".strip() if extra else instructions
        return instructions

    async def _replace_thread(self, messages: list[pt.Message], shorten: bool) -> None:
        """The compacted thread in place of the old one (old tool results shortened too when
        ``shorten``), told to whoever keeps a copy of it."""
        self.messages[:] = messages
        if shorten:
            micro_compact(self.messages, keep_recent=0)
        self.meter.reset()
        if self.on_thread_replaced is not None:
            await self.on_thread_replaced(self.messages)

    async def _recover_overflow(
        self, system: str, tools: tuple[pt.ToolSchema, ...], exc: ContextOverflowError
    ) -> str | None:
        """The provider said the prompt is too long: learn from its figures, compact, and let
        the step be sent again. Returns why the turn must stop instead, else None."""
        sent = self._request_chars(system, tools)
        if exc.tokens:
            self.calibration.observe(self._calibration_key(), exc.tokens, sent)
        if exc.limit and exc.limit < self.settings.context_window:
            window = exc.limit
            if self.limits is not None:
                window = self.limits.learned(self._model_name(), exc.limit).context_window
            self.settings = attrs.evolve(
                self.settings, context_window=window, window_source="server")
        keep, shorten = self.settings.keep_recent, False
        if exc.tokens and exc.limit:
            # the figures say the estimate was wrong by a known amount: keep only the last
            # messages, and shorten every long tool result among them
            keep, shorten = min(keep, OVERFLOW_KEEP_RECENT), True
        try:
            return await self._maybe_compact(
                system, tools, force=True, reason="overflow", keep_recent=keep, shorten=shorten)
        except ContextOverflowError as again:
            return _still_too_long(again, self._model_name())

    async def restore_thread(self, messages: list[pt.Message]) -> None:
        """Make the thread ``messages`` (a rewind to an earlier prompt), journaled like a
        compaction's thread, so a resumed session starts from it too."""
        self.messages[:] = messages
        self.meter.reset()
        if self.on_thread_replaced is not None:
            await self.on_thread_replaced(self.messages)

    async def compact_now(self, hint: str = "") -> None:
        """``/compact [HINT]``: the hint goes to the summary with the configured instructions."""
        await self._maybe_compact(self.system_prompt(), force=True, reason="manual", hint=hint)


def _still_too_long(exc: ContextOverflowError, model: str) -> str:
    """The turn's error when the prompt is still too long after compacting."""
    if exc.tokens and exc.limit:
        figures = f"{exc.tokens} tokens > {exc.limit} maximum"
    else:
        figures = exc.provider_message or "no figures given"
    return (
        f"the prompt is still longer than model {model!r}'s context window after compacting "
        f"({figures}); the conversation is saved: resume it with a model with a larger "
        "window, or start a new session"
    )


#: What one ``!cmd`` may add to the next prompt, and how many are kept until then.
SHELL_CONTEXT_CHARS = 20_000
SHELL_CONTEXT_KEPT = 5

#: A step's usage until the provider reports some (frozen: one serves every step).
NO_USAGE = pt.Usage()


class _Reply:
    """What the model said in one step so far, kept as it streams: a cancelled step's part
    is settled into the thread as it stood."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.thinking: list[str] = []
        self.signature: str | None = None
        self.calls: dict[int, pt.ToolCall] = {}  # by the index the provider gave
        self.usage = NO_USAGE
        self.stop = "end_turn"
        self.settled = False

    def ordered_calls(self) -> list[pt.ToolCall]:
        return [self.calls[i] for i in sorted(self.calls)]


def _reported(usage: pt.Usage) -> bool:
    """Any count is non-zero (a record comparison with ``Usage()`` costs more, every step)."""
    return bool(usage.input_tokens or usage.output_tokens or usage.cache_read_tokens
                or usage.cache_write_tokens)


def _add_usage(a: pt.Usage, b: pt.Usage) -> pt.Usage:
    return pt.Usage(
        a.input_tokens + b.input_tokens,
        a.output_tokens + b.output_tokens,
        a.cache_read_tokens + b.cache_read_tokens,
        a.cache_write_tokens + b.cache_write_tokens,
        a.thinking_tokens + b.thinking_tokens,
    )


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if type(exc).__name__ in text else f"{type(exc).__name__}: {text}"
