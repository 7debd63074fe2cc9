"""``[agent.background]`` in a project's config: limits lowered are used as written, limits
raised above the defaults count only once the user approved them (nyzhi.config.project_trust)."""

from __future__ import annotations

from nyzhi.config.project_trust import load_trusted


def project(workspace, text: str) -> None:
    (workspace / ".nyzhi" / "config.toml").write_text(text)


def test_a_project_may_lower_the_background_limits(workspace, home):
    project(workspace, "[agent.background]\nmax_processes = 2\nbuffer_bytes = 8192\n")
    loaded, trust = load_trusted(workspace, None)
    assert (loaded.config.agent.background.max_processes,
            loaded.config.agent.background.buffer_bytes) == (2, 8192)
    assert "background" not in trust.notice


def test_raised_background_limits_wait_for_approval(workspace, home):
    project(workspace, "[agent.background]\nmax_processes = 500\nbuffer_bytes = 4096\n")
    loaded, trust = load_trusted(workspace, None)
    assert loaded.config.agent.background.max_processes == 8  # the default, until approved
    assert loaded.config.agent.background.buffer_bytes == 4096  # lower: used
    assert not trust.approved and "agent.background.max_processes" in trust.notice
    assert "agent.background.buffer_bytes" not in trust.notice  # lowered: not gated
    loaded, _ = load_trusted(workspace, None, approve=True)  # the person approved it
    assert loaded.config.agent.background.max_processes == 500
