"""Durations in the config (budgets): spelled like the CLI's, checked at load time."""

from __future__ import annotations

import pytest

from nyzhi.config import load_config
from nyzhi.config.durations import parse_duration
from nyzhi.config.errors import ConfigError


@pytest.mark.parametrize(("text", "seconds"), [
    ("90", 90.0), ("90s", 90.0), ("10m", 600.0), ("1h30m", 5400.0), ("250ms", 0.25),
    ("1.5h", 5400.0), (" 2m 30s ", 150.0), ("1d", 86400.0),
])
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "ten", "10x", "10m5", "0", "0s", "-5s", "m"])
def test_bad_durations_say_what_is_accepted(text):
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


def test_budget_time_is_checked_when_the_config_loads(tmp_path, home):
    ws = tmp_path / "ws"
    (ws / ".nyzhi").mkdir(parents=True)
    config_file = ws / ".nyzhi" / "config.toml"
    config_file.write_text('[agent.agents.budget]\ntime = "soon"\n')
    with pytest.raises(ConfigError) as err:
        load_config(ws)
    assert f"{config_file}: agent.agents.budget.time: expected a duration" in str(err.value)
    assert 'found string "soon"' in str(err.value)
    config_file.write_text(
        '[agent.agents.budget]\ntime = "10m"\ntokens = 20000\n'
        '[agent.agents.roles.explorer]\nbudget = { time = 90, usd = 0.5 }\n'
    )
    agents = load_config(ws).config.agent.agents
    assert agents.budget.time.seconds == 600 and agents.budget.tokens == 20000
    assert agents.roles["explorer"].budget.time.seconds == 90
    assert agents.max_threads == 4 and agents.max_depth == 2 and agents.write_lease_wait == 30
