"""SandboxPolicy: path resolution, roots per level, bwrap command construction, missing bwrap."""

import os
import tempfile
from pathlib import Path

import pytest

from nyzhi.tools.base import SandboxLevel
from nyzhi.tools.sandbox import SandboxPolicy, SandboxUnavailable, SandboxViolation


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


def policy(ws: Path, level=SandboxLevel.WORKSPACE_WRITE, **kw) -> SandboxPolicy:
    kw.setdefault("allow_temp", False)  # tmp_path lives in the temp dir: keep "outside" outside
    return SandboxPolicy(level, ws, **kw)


def test_workspace_paths_are_allowed_and_resolved(ws: Path):
    p = policy(ws)
    assert p.check_write(ws / "a.txt") == ws.resolve() / "a.txt"
    assert p.check_write("sub/new/file.py") == ws.resolve() / "sub/new/file.py"
    assert p.check_write(ws / "sub" / ".." / "b.txt") == ws.resolve() / "b.txt"


def test_outside_refused_with_path_and_roots_in_message(ws: Path, tmp_path: Path):
    p = policy(ws)
    with pytest.raises(SandboxViolation) as err:
        p.check_write(tmp_path / "outside.txt")
    msg = str(err.value)
    assert "outside.txt" in msg and str(ws.resolve()) in msg and "workspace-write" in msg


def test_extra_writable_roots_and_temp(ws: Path, tmp_path: Path):
    extra = tmp_path / "extra"
    extra.mkdir()
    p = policy(ws, writable_roots=(extra,))
    assert p.check_write(extra / "x") == extra.resolve() / "x"
    with_temp = policy(ws, allow_temp=True)
    tmp_file = Path(tempfile.gettempdir()) / "nyzhi-sandbox-test"
    assert with_temp.check_write(tmp_file) == Path(os.path.realpath(tmp_file))
    with pytest.raises(SandboxViolation):
        policy(ws).check_write("/etc/passwd")


def test_read_only_refuses_everything_and_full_access_allows_everything(ws: Path):
    ro = policy(ws, SandboxLevel.READ_ONLY, allow_temp=True)
    with pytest.raises(SandboxViolation, match="read-only"):
        ro.check_write(ws / "a.txt")
    assert ro.check_read(ws / "a.txt") == ws.resolve() / "a.txt"
    full = policy(ws, SandboxLevel.FULL_ACCESS)
    assert full.check_write("/etc/passwd") == Path("/etc/passwd")


def test_symlink_loop_is_refused_not_crashing(ws: Path):
    (ws / "loop").symlink_to(ws / "loop")
    p = policy(ws)
    # realpath gives up on loops and returns the lexical path; it stays inside, so either an
    # explicit refusal or an inside path is acceptable, but never an exception other than ours.
    try:
        assert p.check_write(ws / "loop").is_relative_to(ws.resolve())
    except SandboxViolation:
        pass


def test_wrap_command_workspace_write(ws: Path):
    p = policy(ws, network=False)
    argv = p.wrap_command("echo hi", ws)
    assert argv[0].endswith("bwrap")
    joined = " ".join(argv)
    assert "--ro-bind / /" in joined
    assert f"--bind {ws.resolve()} {ws.resolve()}" in joined
    assert "--unshare-net" in argv and "--die-with-parent" in argv and "--unshare-pid" in argv
    assert "--new-session" not in argv  # would hide the command from our process-group kill
    assert argv[argv.index("--chdir") + 1] == str(ws.resolve())
    assert argv[-3:][1:] == ["-c", "echo hi"]


def test_wrap_command_read_only_binds_nothing_writable(ws: Path):
    argv = policy(ws, SandboxLevel.READ_ONLY, allow_temp=True).wrap_command("true", ws)
    assert "--bind" not in argv
    assert "--tmpfs" in argv  # private scratch temp dir
    assert "--unshare-net" in argv  # network off by default


def test_full_access_does_not_wrap(ws: Path):
    wrapped = policy(ws, SandboxLevel.FULL_ACCESS).wrap("echo hi", ws)
    assert not wrapped.sandboxed and "bwrap" not in wrapped.argv[0]


def test_missing_bwrap_refuses_with_install_hint(ws: Path):
    p = policy(ws, bwrap_path="/nonexistent/bwrap")
    with pytest.raises(SandboxUnavailable) as err:
        p.wrap("echo hi", ws)
    assert "bubblewrap" in str(err.value) and "apt-get install bubblewrap" in str(err.value)


def test_missing_bwrap_fallback_is_never_silent(ws: Path):
    p = policy(ws, bwrap_path="/nonexistent/bwrap", bwrap_fallback="unsandboxed")
    wrapped = p.wrap("echo hi", ws)
    assert not wrapped.sandboxed
    assert "WITHOUT" in wrapped.note and "bubblewrap" in wrapped.note


def test_offloaded_output_of_this_project_is_readable_and_other_state_is_not(
    ws: Path, tmp_path: Path, monkeypatch
):
    """nyz's state directory is refused to the read tools, except this project's offloaded
    tool output (redacted when written), which the model reads back from there."""
    from nyzhi.config.paths import state_dir, tool_results_dir

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    mine = tool_results_dir(ws) / "call-1.txt"
    other = tool_results_dir(tmp_path / "another-project") / "call-1.txt"
    approvals = state_dir() / "approvals.json"
    for path in (mine, other, approvals):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    policy = SandboxPolicy(SandboxLevel.WORKSPACE_WRITE, ws)
    assert policy.check_read(mine) == mine.resolve()
    for refused in (other, approvals):
        with pytest.raises(SandboxViolation):
            policy.check_read(refused)
