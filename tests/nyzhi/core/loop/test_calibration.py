"""The token estimate's calibration (nyzhi.core.loop.context_window.Calibration): what it learns
from, what it ignores, and that the state record keeps it (old records still load)."""

from __future__ import annotations

from nyzhi import convert
from nyzhi.core.loop.context_window import MIN_CALIBRATION_CHARS, Calibration, tokens_for
from nyzhi.core.loop.state_record import StateRecord, read_state


def test_observations_set_the_ratio_and_implausible_ones_are_ignored():
    cal = Calibration()
    key = Calibration.key("p", "m")
    cal.observe(key, 5000, 10_000)
    assert cal.ratio(key) == 0.5
    cal.observe(key, 12, 40_000)  # a placeholder count, not a measurement
    cal.observe(key, 90_000, 40_000)  # more than 2 tokens a character: not a tokenizer
    cal.observe(key, 100, MIN_CALIBRATION_CHARS - 1)  # too short to say anything
    cal.observe(key, 0, 40_000)
    assert cal.ratio(key) == 0.5
    cal.observe(key, 12_000, 40_000)  # the latest measurement wins
    assert cal.ratio(key) == 0.3 and cal.ratio("p/other") is None
    assert tokens_for(1000, 10, 0.3) == 300 and tokens_for(1000, 10, None) == 250 + 40


def test_the_state_record_keeps_the_ratios_and_old_records_load():
    record = StateRecord("fix it", calibration={"p/m": 0.5})
    assert read_state(convert.unstructure(record)) == record
    assert "0.5" not in record.render()  # for nyz, not for the model
    old = {"first_prompt": "x", "todos": [], "files": [], "last_failure": None}
    assert read_state(old).calibration is None
    assert "calibration" not in convert.unstructure(read_state(old))  # old records unchanged
    damaged = dict(old, calibration={"p/m": "fast", "p/n": 7.0, "p/o": 0.3})
    assert read_state(damaged).calibration == {"p/o": 0.3}
