"""``[agent.stream]`` in a project layer may only tighten: a bound raised above its default is
used only once the user approved it (``nyzhi.config.project_trust``), a lower one at once."""

from __future__ import annotations

from nyzhi.config.project_trust import approve, load_trusted


def write(ws, text: str) -> None:
    (ws / ".nyzhi" / "config.toml").write_text(text)


def test_a_raised_bound_waits_for_approval(workspace):
    write(workspace, "[agent.stream]\nmax_answer_chars = 999999999\n"
                     "max_tool_argument_chars = 1000\n")
    loaded, verdict = load_trusted(workspace)
    stream = loaded.config.agent.stream
    assert not verdict.approved
    assert [list(p) for p in verdict.parts.values()] == [["agent.stream"]]
    assert "stream bounds" in verdict.notice
    assert stream.max_answer_chars == 4_000_000  # the default holds
    assert stream.max_tool_argument_chars == 1000  # tightening applies at once
    approve(loaded)
    loaded, verdict = load_trusted(workspace)
    assert verdict.approved and loaded.config.agent.stream.max_answer_chars == 999_999_999


def test_control_only_tighter_bounds_need_nothing(workspace):
    write(workspace, "[agent.stream]\nmax_answer_chars = 5000\n")
    loaded, verdict = load_trusted(workspace)
    assert verdict.approved and loaded.config.agent.stream.max_answer_chars == 5000
