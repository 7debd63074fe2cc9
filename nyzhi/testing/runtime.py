"""Driving an in-process runtime in tests: one turn of the main agent, with every event the
front ends would have seen during it."""

from __future__ import annotations

from typing import Any

from nyzhi.core import events as ev


async def run_turn(rt: Any, prompt: str) -> tuple[Any, list[ev.AnyEvent]]:
    """Submit ``prompt`` to the main agent and collect events until its ``turn_complete``;
    returns the turn handle (finished) and the events, in order."""
    events: list[ev.AnyEvent] = []
    async with rt.subscribe() as channel:
        handle = await rt.submit(prompt)
        async for event in channel:
            events.append(event)
            if event.type == "turn_complete" and event.agent == ev.MAIN_AGENT:
                break
    await handle.wait()
    return handle, events
