"""The first answer wins on the live hub (``LiveSession.claim``), by what was answered, not
by what the hub happened to see: the console's answer to a request whose event the hub never
recorded (asked before the first viewer, its event dropped from the bounded backlog) must
still go to the runtime, or the agent would wait for it for ever."""

from __future__ import annotations

import pytest
import trio

from nyzhi.core import events as ev
from nyzhi.core.protocol import wire as p
from nyzhi.core.protocol.live import LiveSession
from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime
from nyzhi.testing.fake_llm import open_fake_llm


def _ask(request_id: str) -> ev.ApprovalRequest:
    return ev.ApprovalRequest(agent=ev.MAIN_AGENT, request_id=request_id,
                              call_id=f"call-{request_id}", tool="bash", summary="ls")


async def test_the_sessions_own_answer_wins_even_for_a_request_the_hub_never_saw(
        workspace, configure):
    async with open_fake_llm() as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt, \
                trio.open_nursery() as nursery:
            hub = LiveSession(rt, nursery)
            told: list[str] = []
            hub.answered = told.append
            # never recorded: the console answers it, once
            assert hub.claim("unseen") is True
            assert hub.claim("unseen") is False
            # a viewer answers what it was shown; the console then may not
            hub.record(_ask("shown"))
            hub._claim("shown")
            assert told == ["shown"] and "shown" not in hub.pending
            assert hub.claim("shown") is False
            # a viewer's second answer, or one to a request it was never shown, is refused
            for request_id in ("shown", "unseen", "made-up"):
                with pytest.raises(p.ProtocolError, match="already answered"):
                    hub._claim(request_id)
            assert told == ["shown"]
            nursery.cancel_scope.cancel()
