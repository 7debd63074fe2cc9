"""The autopilot's state file and verdicts (``nyzhi.core.runtime.autopilot``), without a model: what
starts, what resumes, what is refused, and a broken file named in one line."""

from __future__ import annotations

import json

import pytest

from nyzhi.core.runtime import autopilot as ap


def test_a_goal_starts_and_an_unfinished_one_resumes(tmp_path):
    fresh = ap.start_or_resume(tmp_path, "  add a flag ")
    assert fresh.goal == "add a flag" and fresh.phase == ap.Phase.EXPAND and fresh.started
    stopped = ap.AutopilotState("add a flag", ap.Phase.EXECUTE, loops=1, plan="P",
                                phases=("expand", "plan", "execute"))
    ap.save_state(tmp_path, stopped)
    assert ap.load_state(tmp_path) == stopped
    assert ap.start_or_resume(tmp_path, "") == stopped  # no goal: resume
    assert ap.start_or_resume(tmp_path, "add a flag") == stopped  # the same goal: resume
    with pytest.raises(ap.AutopilotError, match=r"unfinished in .*autopilot\.json \(phase "
                                                r"execute"):
        ap.start_or_resume(tmp_path, "another goal")
    assert ap.clear_state(tmp_path) and not ap.clear_state(tmp_path)
    with pytest.raises(ap.AutopilotError, match="no unfinished autopilot to resume"):
        ap.start_or_resume(tmp_path, "")


def test_a_finished_one_is_not_resumed_and_a_new_goal_replaces_it(tmp_path):
    ap.save_state(tmp_path, ap.AutopilotState("old", ap.Phase.DONE, report="done"))
    with pytest.raises(ap.AutopilotError, match="no unfinished"):
        ap.start_or_resume(tmp_path, "")
    assert ap.start_or_resume(tmp_path, "new").goal == "new"


def test_the_file_is_json_written_atomically_and_ignored_by_git(tmp_path):
    ap.save_state(tmp_path, ap.AutopilotState("g", ap.Phase.QA, agents=("/agents/main/w-1",)))
    path = tmp_path / ".nyzhi" / "state" / "autopilot.json"
    data = json.loads(path.read_text())
    assert data["phase"] == "qa" and data["agents"] == ["/agents/main/w-1"]
    assert [p.name for p in path.parent.iterdir()] == ["autopilot.json"]  # no temp file left
    assert "/state/" in (tmp_path / ".nyzhi" / ".gitignore").read_text()


@pytest.mark.parametrize(("text", "says"), [
    ("{not json", "not JSON"),
    ('{"goal": "g", "phase": "sideways"}', "'phase' must be one of expand"),
    ('{"phase": "qa"}', "'goal' is missing"),
    ('{"goal": "g", "loops": "two"}', "'loops'"),
    ('["g"]', "must be an object"),
])
def test_a_broken_file_is_one_line_naming_it(tmp_path, text, says):
    path = tmp_path / ".nyzhi" / "state" / "autopilot.json"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    with pytest.raises(ap.AutopilotError) as caught:
        ap.start_or_resume(tmp_path, "g")
    message = str(caught.value)
    assert str(path) in message and says in message and "\n" not in message
    assert "/autopilot clear" in message


@pytest.mark.parametrize(("review", "ok"), [
    ("All good.\nVERDICT: APPROVE", True),
    ("verdict: approve", True),
    ("Missing tests.\nVERDICT: REJECT", False),
    ("first VERDICT: APPROVE, then on reflection VERDICT: REJECT", False),
    ("Looks fine to me, I approve.", False),  # no verdict line: no approval
    ("", False),
])
def test_only_a_verdict_line_approves(review, ok):
    assert ap.approved(review) is ok
