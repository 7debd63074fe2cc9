"""Pairing tool calls with tool results when a thread is loaded.

Every wire format rejects a thread where an assistant's tool call has no result (or a result
answers no call). The turn loop keeps the pairing while it runs, even on cancellation, but a
process killed between recording a call and recording its result (``kill -9``, OOM, power
loss) leaves an unmatched call in the log. Resuming it as is would fail on the first request,
so the loader repairs the thread: each assistant message is followed by exactly one result per
call, in call order; a call with no recorded result gets ``INTERRUPTED_TEXT``.

The repair is computed from the log alone, so it is the same on every load; ``SessionStore.open``
then writes the synthesised results into the log (see ``records``) so that ``nyz replay`` shows
them and later loads find them recorded.
"""

from __future__ import annotations

from collections.abc import Sequence

from nyzhi.provider.types import Message, ToolCall

INTERRUPTED_TEXT = "interrupted: nyz stopped before this call finished (no result recorded)"


def interrupted_result(call: ToolCall) -> Message:
    """The result a call gets when the log holds none for it."""
    return Message("tool", INTERRUPTED_TEXT, tool_call_id=call.id, name=call.name, is_error=True)


def pair_tool_results(messages: Sequence[Message]) -> tuple[list[Message], list[ToolCall]]:
    """``messages`` with every tool call answered exactly once, right after its assistant
    message and in call order; and the calls that had no recorded result (now answered with
    ``INTERRUPTED_TEXT``), in order.

    The results of an assistant message are the tool messages that follow it up to the next
    non-tool message. Among them a second result for the same call, or one for a call this
    message did not make, is dropped (no provider accepts either); so is a tool message with
    no assistant message before it.
    """
    out: list[Message] = []
    missing: list[ToolCall] = []
    i = 0
    n = len(messages)
    while i < n:
        message = messages[i]
        i += 1
        if message.role == "tool":
            continue  # a result with no call before it (the block loop below takes the others)
        out.append(message)
        if message.role != "assistant" or not message.tool_calls:
            continue
        found: dict[str, Message] = {}
        while i < n and messages[i].role == "tool":
            result = messages[i]
            i += 1
            found.setdefault(result.tool_call_id or "", result)
        for call in message.tool_calls:
            result = found.get(call.id)
            if result is None:
                missing.append(call)
                result = interrupted_result(call)
            out.append(result)
    return out, missing

