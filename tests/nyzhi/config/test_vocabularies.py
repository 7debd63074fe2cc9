"""API styles, teammate modes, todo statuses (nyzhi.config.modes) and agent states
(nyzhi.core.events) have one definition each, keep their exact spellings, and serialise as
those spellings wherever they are written: config, team files, plans, events."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import nyzhi
from nyzhi.config import load_config
from nyzhi.config.modes import TODO_MARKS, ApiStyle, TeammateMode, TodoStatus, choices
from nyzhi.core import events as ev

PACKAGE = Path(nyzhi.__file__).parent


def test_the_spellings_are_kept_exactly():
    assert choices(ApiStyle) == ("openai", "openai-responses", "anthropic", "gemini", "ollama",
                                 "llama-cpp")
    assert choices(TeammateMode) == ("in-process", "process")
    assert choices(TodoStatus) == ("pending", "in_progress", "completed", "cancelled")
    assert set(TODO_MARKS) == set(TodoStatus)
    assert ev.AGENT_STATUSES == ("pending_init", "running", "idle", "completed", "errored",
                                 "shutdown")


def test_the_copies_are_derived_from_the_one_definition():
    from nyzhi.cli.main import build_parser
    from nyzhi.core.runtime.teams import control
    from nyzhi.knowledge import plans
    from nyzhi.provider import build, spec
    from nyzhi.team_files import store
    from nyzhi.testing import fake_llm_wire
    from nyzhi.tools.builtin import planning

    assert spec.API_STYLES == choices(ApiStyle) and set(build.ADAPTERS) == set(ApiStyle)
    assert set(fake_llm_wire.WIRE_STYLES) == set(ApiStyle) - {ApiStyle.LLAMA_CPP}
    assert store.TEAMMATE_MODES == control.MODES == choices(TeammateMode)
    assert plans.TODO_STATUSES == planning.STATUSES == choices(TodoStatus)
    option = next(a for a in build_parser()._actions if "--teammate-mode" in a.option_strings)
    assert tuple(option.choices) == choices(TeammateMode)


# Spellings no other vocabulary shares: written out as a string anywhere but their definition,
# they would be a second copy. (Allowed: the fake LLM server's own wire routes, a team file's
# reader, which `convert` replaces, and the line chat, which `frontends` rewrites.)
DISTINCTIVE = {
    "openai-responses": ApiStyle, "in-process": TeammateMode, "pending_init": ev.AgentState,
}
ALLOWED = {"testing/fake_llm.py", "testing/fake_llm_wire.py", "teams/store.py",
           "linechat/chat.py"}


def test_distinctive_spellings_are_not_written_out_elsewhere():
    definitions = {PACKAGE / "config" / "modes.py", PACKAGE / "core" / "events.py"}
    found = []
    for path in PACKAGE.rglob("*.py"):
        rel = str(path.relative_to(PACKAGE))
        if path in definitions or rel in ALLOWED:
            continue
        for node in ast.walk(ast.parse(path.read_text(), rel)):
            if isinstance(node, ast.Constant) and node.value in DISTINCTIVE:
                found.append(f"{rel}:{node.lineno}: {node.value!r}")
    assert found == []


def test_values_serialise_as_their_spellings(env):
    env.write(env.project_config, "[provider.mine]\napi_style = 'openai-responses'\n"
                                  "base_url = 'http://127.0.0.1:9'\n")
    entry = load_config().config.provider.get("mine")
    assert entry.api_style is ApiStyle.OPENAI_RESPONSES
    assert json.dumps({"style": entry.api_style}) == '{"style": "openai-responses"}'

    event = ev.AgentStatus(agent="/agents/main/x", status=ev.AgentState.RUNNING)
    data = json.loads(json.dumps(ev.to_json(event)))
    assert data["status"] == "running" and ev.from_json(data) == event

    from nyzhi import convert
    from nyzhi.team_files.store import TeamConfig

    config = TeamConfig(name="crew", teammate_mode=TeammateMode.PROCESS)
    assert json.loads(json.dumps(convert.unstructure(config)))["teammate_mode"] == "process"
    assert convert.unstructure(TeamConfig(name="crew"))["teammate_mode"] == "in-process"

    from nyzhi.knowledge import plans

    todos = plans.merge_todos([], [{"id": "1", "content": "x"}])
    assert '"status": "pending"' in plans.render_plan("p", "", "body", todos)
