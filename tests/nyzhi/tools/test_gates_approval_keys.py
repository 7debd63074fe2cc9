"""``agent.trust.auto_approve`` and ``agent.trust.remember_approvals`` through the gates."""

import json
from pathlib import Path

import pytest
from _fakes import Fetch, Recorder, Writer

from nyzhi.config import paths
from nyzhi.config.approvals import remember_tool, remembered_tools
from nyzhi.config.modes import SandboxLevel, TrustMode
from nyzhi.tools.base import ToolContext
from nyzhi.tools.builtin.bash import BashTool
from nyzhi.tools.gates import (
    APPROVAL,
    DENY_RULES,
    SANDBOX,
    TRUST,
    ApprovalDecision,
    ApprovalMemory,
    Gates,
    TrustPolicy,
)
from nyzhi.tools.sandbox import SandboxPolicy


@pytest.fixture
def ws(tmp_path: Path, home) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    return root


def ctx_for(ws: Path, level=SandboxLevel.WORKSPACE_WRITE) -> ToolContext:
    return ToolContext(workspace_root=ws, cwd=ws, sandbox=SandboxPolicy(level, ws, allow_temp=False))


# ---- auto_approve ----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", list(TrustMode))
async def test_auto_approve_globs_approve_in_every_mode_without_asking(ws, mode):
    approver = Recorder()
    gates = Gates(trust=TrustPolicy(mode=mode, auto_approve=("WRI*", "git_status")),
                  approver=approver)
    d = await gates.check(Writer(), {"path": "src/a.py"}, ctx_for(ws))
    assert d.allowed and d.gate == TRUST and d.approved_by == "trust"
    if mode is TrustMode.OFF:
        assert d.reason == "agent.trust.auto_approve pattern 'WRI*'"
    assert approver.requests == []


async def test_auto_approve_leaves_other_tools_asking(ws):
    approver = Recorder(ApprovalDecision.deny("no"))
    gates = Gates(trust=TrustPolicy(auto_approve=("writer",)), approver=approver)
    d = await gates.check(Fetch(), {}, ctx_for(ws))
    assert not d.allowed and d.gate == APPROVAL and len(approver.requests) == 1


async def test_auto_approve_does_not_bypass_sandbox_deny_rules_or_always_ask(ws, tmp_path):
    trust = TrustPolicy(auto_approve=("*",), deny_paths=("secrets",), always_ask=("fetch",))
    gates = Gates(trust=trust, approver=Recorder(ApprovalDecision.deny("asked")))
    outside = await gates.check(Writer(), {"path": str(tmp_path / "x")}, ctx_for(ws))
    assert not outside.allowed and outside.gate == SANDBOX
    secret = await gates.check(Writer(), {"path": "secrets/k"}, ctx_for(ws))
    assert not secret.allowed and secret.gate == DENY_RULES
    dangerous = await gates.check(BashTool(), {"command": "rm -rf /"}, ctx_for(ws))
    assert not dangerous.allowed and dangerous.gate == DENY_RULES
    asked = await gates.check(Fetch(), {}, ctx_for(ws))
    assert not asked.allowed and asked.gate == APPROVAL and "asked" in asked.reason


def test_trust_policy_reads_both_keys_from_config():
    t = TrustPolicy.from_config({"auto_approve": ["bash"], "remember_approvals": True})
    assert t.auto_approve == ("bash",) and t.remember_approvals is True
    assert TrustPolicy.from_config({}).remember_approvals is False


# ---- remember_approvals ----------------------------------------------------------------------


async def test_always_is_remembered_across_sessions_when_enabled(ws):
    trust = TrustPolicy(remember_approvals=True)
    first = Gates(trust=trust, approver=Recorder(ApprovalDecision.always()))
    assert (await first.check(Writer(), {"path": "src/a"}, ctx_for(ws))).approved_by == "user"
    stored = json.loads(paths.approvals_path().read_text())
    assert stored["workspaces"] == {str(ws.resolve()): ["writer"]}
    assert paths.approvals_path().stat().st_mode & 0o777 == 0o600
    # a later session (fresh memory, fresh gates) in the same workspace does not ask
    later = Gates(trust=trust, approver=Recorder(), memory=ApprovalMemory())
    d = await later.check(Writer(), {"path": "src/b"}, ctx_for(ws))
    assert d.allowed and d.gate == TRUST and d.approved_by == "remembered"
    assert later.approver.requests == []
    # another tool still asks
    assert not (await Gates(trust=trust, approver=Recorder(ApprovalDecision.deny())).check(
        Fetch(), {}, ctx_for(ws))).allowed


async def test_without_remember_approvals_always_lasts_for_the_session_only(ws):
    first = Gates(approver=Recorder(ApprovalDecision.always()))
    await first.check(Writer(), {"path": "src/a"}, ctx_for(ws))
    assert not paths.approvals_path().exists()
    later = Gates(trust=TrustPolicy(remember_approvals=True),
                  approver=Recorder(ApprovalDecision.approve()))
    assert (await later.check(Writer(), {"path": "src/a"}, ctx_for(ws))).approved_by == "user"


async def test_remembered_answers_are_per_workspace_and_ignored_when_disabled(ws, tmp_path):
    remember_tool(ws, "writer")
    other = tmp_path / "other"
    other.mkdir()
    asked = Gates(trust=TrustPolicy(remember_approvals=True),
                  approver=Recorder(ApprovalDecision.approve()))
    assert (await asked.check(Writer(), {"path": "a"}, ctx_for(other))).approved_by == "user"
    off = Gates(approver=Recorder(ApprovalDecision.approve()))
    assert (await off.check(Writer(), {"path": "src/a"}, ctx_for(ws))).approved_by == "user"


async def test_always_ask_beats_remembered_answers(ws):
    remember_tool(ws, "writer")
    gates = Gates(trust=TrustPolicy(remember_approvals=True, always_ask=("writer",)),
                  approver=Recorder(ApprovalDecision.always()))
    assert (await gates.check(Writer(), {"path": "src/a"}, ctx_for(ws))).approved_by == "user"
    assert remembered_tools(ws) == {"writer"}  # not added twice, not removed


async def test_a_state_dir_that_cannot_be_written_still_approves_for_the_session(ws, home):
    state = paths.state_dir()
    state.parent.mkdir(parents=True)
    state.write_text("not a directory")  # so approvals.json cannot be created
    gates = Gates(trust=TrustPolicy(remember_approvals=True),
                  approver=Recorder(ApprovalDecision.always()))
    d = await gates.check(Writer(), {"path": "src/a"}, ctx_for(ws))
    assert d.allowed and "not remembered for later sessions" in d.reason
    again = await gates.check(Writer(), {"path": "src/b"}, ctx_for(ws))
    assert again.approved_by == "session"


def test_a_corrupt_store_counts_as_empty_and_is_replaced(ws):
    path = paths.approvals_path()
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert remembered_tools(ws) == frozenset()
    remember_tool(ws, "bash")
    remember_tool(ws, "bash")
    assert remembered_tools(ws) == {"bash"}
