"""Approval answers are a typed value: a typo is an error, never a silent deny."""

from __future__ import annotations

import pytest

from nyzhi.core import events as ev
from nyzhi.core.loop.tool_step import ApprovalAnswer
from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call


def test_answers_parse_from_their_names_only():
    assert ApprovalAnswer.parse("always") is ApprovalAnswer.ALWAYS
    assert ApprovalAnswer.parse(ApprovalAnswer.DENY) is ApprovalAnswer.DENY
    for typo in ("yes", "aprove", "", "Approve"):
        with pytest.raises(ValueError, match="not one of approve, always, deny"):
            ApprovalAnswer.parse(typo)


async def test_a_typo_raises_and_the_request_stays_open(workspace, configure):
    script = [
        reply(tool_calls=[tool_call("write", {"file_path": "note.txt", "content": "hi"})]),
        reply("written"),
    ]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace, interactive=True)) as rt:
            async with rt.subscribe() as events:
                handle = await rt.submit("write a note")
                async for event in events:
                    if isinstance(event, ev.ApprovalRequest):
                        break
                with pytest.raises(ValueError, match="'yse'"):
                    await rt.answer_approval(event.request_id, "yse")
                with pytest.raises(KeyError, match="no pending user_question"):
                    await rt.answer_question(event.request_id, "y")
                assert not (workspace / "note.txt").exists()
                await rt.answer_approval(event.request_id, ApprovalAnswer.APPROVE)
                outcome = await handle.wait()
    assert outcome.text == "written"
    assert (workspace / "note.txt").read_text() == "hi"
