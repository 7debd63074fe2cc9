"""The first answer to an approval wins: a second front end's answer is refused, not applied.

Fails without the check in ``ApprovalBroker._answer``: the later "approve" overwrote the
earlier "deny" before the waiting tool step woke up.
"""

from __future__ import annotations

import pytest
import trio

from nyzhi.core.event_bus import EventBus
from nyzhi.core.loop.tool_step import ApprovalBroker
from nyzhi.core.protocol.ops import ApprovalAnswer
from nyzhi.tools.gates import ApprovalKind, ApprovalRequest


async def test_a_second_answer_is_refused_and_the_first_decides():
    broker = ApprovalBroker(EventBus())
    async with broker.bus.subscribe() as events, trio.open_nursery() as nursery:
        decided: list = []

        async def ask() -> None:
            req = ApprovalRequest.__new__(ApprovalRequest)
            for name, value in (
                ("agent_path", "/agents/main"),
                ("call_id", "c1"),
                ("tool_name", "bash"),
                ("args_summary", "ls"),
                ("preview", ""),
            ):
                object.__setattr__(req, name, value)
            decided.append(await broker.request(req))

        nursery.start_soon(ask)
        event = await events.receive()
        broker.answer_approval(event.request_id, ApprovalAnswer.DENY)
        with pytest.raises(KeyError):
            broker.answer_approval(event.request_id, ApprovalAnswer.APPROVE)
    assert decided[0].kind is not ApprovalKind.APPROVE
