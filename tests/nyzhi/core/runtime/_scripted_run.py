"""``nyz run`` as a user runs it, against the scripted model on loopback: the harness of the
end-to-end tests of the file-writing tools (the editing tools, the stale-write guard)."""

from __future__ import annotations

from typing import Any

from nyzhi.testing.cli import json_lines, run_nyz
from nyzhi.testing.fake_llm import (
    FakeLLMServer,
    FakeRequest,
    Reply,
    in_order,
    open_fake_llm,
    reply,
)

# writes need no approval, inside the workspace only
TRUST = '[agent.trust]\nmode = "full"\n[agent.sandbox]\nlevel = "workspace-write"\n'


def answer_last(request: FakeRequest) -> Reply:
    """The model's final answer: the last tool result, after ``RESULT: ``."""
    return reply("RESULT: " + request.tool_results()[-1])


async def run(workspace, home, configure, steps: list, *args: str,
              extra: str = TRUST) -> tuple[list[dict[str, Any]], FakeLLMServer]:
    """``nyz run --output-format stream-json [ARGS] go`` with the model answering ``steps``
    in order (see ``in_order``); its events and the fake server (for what was sent)."""
    async with open_fake_llm(script=in_order(steps)) as server:
        configure(workspace, server.url_for("openai"), extra=extra)
        proc = await run_nyz(workspace, home, "run", "--output-format", "stream-json", *args, "go")
    assert proc.returncode == 0, proc.stderr.decode()
    return json_lines(proc.stdout), server
