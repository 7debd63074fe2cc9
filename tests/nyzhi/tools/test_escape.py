"""The sandbox-escape suite: every attempt to write outside the writable roots must fail."""

import os
from pathlib import Path

import attrs
import pytest
import trio

from nyzhi.tools.base import SandboxLevel
from nyzhi.tools.executors import LocalExecutor
from nyzhi.tools.sandbox import SandboxPolicy, SandboxViolation


@pytest.fixture
def layout(tmp_path: Path):
    ws = tmp_path / "ws"
    outside = tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    # allow_temp off: tmp_path itself is inside the temp dir.
    return ws, outside, SandboxPolicy(SandboxLevel.WORKSPACE_WRITE, ws, allow_temp=False)


def test_symlink_to_outside(layout):
    ws, outside, p = layout
    (ws / "link").symlink_to(outside)
    with pytest.raises(SandboxViolation) as err:
        p.check_write(ws / "link" / "evil.txt")
    assert str(outside.resolve()) in str(err.value)  # says where it really goes


def test_dotdot(layout):
    ws, outside, p = layout
    with pytest.raises(SandboxViolation):
        p.check_write(ws / ".." / "outside" / "evil.txt")
    with pytest.raises(SandboxViolation):
        p.check_write("../outside/evil.txt")


def test_absolute_path_outside(layout):
    _, outside, p = layout
    with pytest.raises(SandboxViolation):
        p.check_write(str(outside / "evil.txt"))


def test_symlinked_parent_directory(layout):
    ws, outside, p = layout
    (ws / "sub").symlink_to(outside, target_is_directory=True)
    with pytest.raises(SandboxViolation):
        p.check_write(ws / "sub" / "deeper" / "new.txt")  # parent does not exist yet


def test_final_component_symlink_and_dangling_symlink(layout):
    ws, outside, p = layout
    (outside / "target.txt").write_text("x")
    (ws / "file.txt").symlink_to(outside / "target.txt")
    (ws / "dangling.txt").symlink_to(outside / "not-yet.txt")
    with pytest.raises(SandboxViolation):
        p.check_write(ws / "file.txt")
    with pytest.raises(SandboxViolation):
        p.check_write(ws / "dangling.txt")


def test_rename_racing_the_check(layout):
    """Gate passes on a real directory; then it is swapped for a symlink to outside. The re-check
    (which write tools do right before writing) must refuse."""
    ws, outside, p = layout
    (ws / "dir").mkdir()
    assert p.check_write(ws / "dir" / "f.txt") == ws.resolve() / "dir" / "f.txt"
    os.rename(ws / "dir", ws / "dir.old")
    (ws / "dir").symlink_to(outside, target_is_directory=True)
    with pytest.raises(SandboxViolation):
        p.check_write(ws / "dir" / "f.txt")


async def _bash(p: SandboxPolicy, command: str, cwd: Path):
    return await LocalExecutor().run(command, cwd=cwd, sandbox=p, timeout=20)


async def test_bash_under_bwrap_cannot_write_outside_but_can_inside(layout):
    ws, outside, p = layout
    res = await _bash(p, f"echo in > inside.txt; echo out > {outside}/evil.txt; echo done", ws)
    assert res.sandboxed
    assert (ws / "inside.txt").read_text() == "in\n"
    assert not (outside / "evil.txt").exists()
    assert "Read-only file system" in res.output


async def test_bash_cannot_escape_through_a_symlink_either(layout):
    ws, outside, p = layout
    (ws / "link").symlink_to(outside)
    await _bash(p, "echo out > link/evil.txt", ws)
    assert not (outside / "evil.txt").exists()


async def test_read_only_sandbox_blocks_bash_writes_to_the_workspace(layout):
    ws, _, _ = layout
    ro = SandboxPolicy(SandboxLevel.READ_ONLY, ws, allow_temp=True)
    (ws / "existing.txt").write_text("keep")
    res = await _bash(ro, "echo x > new.txt; echo y > existing.txt; cat existing.txt", ws)
    assert not (ws / "new.txt").exists()
    assert (ws / "existing.txt").read_text() == "keep"
    assert "keep" in res.output  # reading still works


async def test_network_off_blocks_a_loopback_connection(layout):
    ws, _, p = layout
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    accepted = []

    async def handler(stream):
        accepted.append(stream)
        await stream.aclose()

    probe = f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"
    async with trio.open_nursery() as nursery:
        await nursery.start(trio.serve_listeners, handler, listeners)
        on = await _bash(attrs.evolve(p, network=True), probe, ws)  # control: network on connects
        off = await _bash(p, probe, ws)  # the default: off
        nursery.cancel_scope.cancel()
    assert "connected" in on.output and on.exit_code == 0
    assert "connected" not in off.output and off.exit_code != 0


# ---------------------------------------------------------------------------------------------
# Code planted from inside the sandbox must never run outside it (issue 29, items 1-3).
# Each attempt is driven as an attacker would: the fake LLM scripts the model's tool calls to a
# real `nyz run` (real bwrap, real git), and a marker file or a secret is the evidence.

MARK = "ESCAPED-MARKER"


def _git(ws: Path, *args: str) -> None:
    import subprocess

    subprocess.run(["git", "-c", "core.hooksPath=/dev/null", *args], cwd=ws, check=True,
                   capture_output=True)


def _repo(ws: Path) -> None:
    """A repository with one commit (the `workspace` fixture's `git init` has none)."""
    _git(ws, "config", "user.email", "u@example.com")
    _git(ws, "config", "user.name", "u")
    (ws / "a.txt").write_text("one\n")
    _git(ws, "add", "a.txt")
    _git(ws, "commit", "-qm", "one")
    _git(ws, "branch", "-M", "trunk")


def _planter(marker: Path) -> str:
    """A shell command that leaves ``marker`` behind when it runs (and passes stdin through,
    so it also works as a filter or a pager)."""
    return f"sh -c 'touch {marker}; cat'"


def _hook(path: Path, marker: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\ntouch {marker}\n")
    path.chmod(0o755)


def _calls(*calls: tuple[str, dict]) -> list:
    from nyzhi.testing.fake_llm import reply, tool_call

    return [*(reply(tool_calls=[tool_call(n, a)]) for n, a in calls), reply("done")]


async def _nyz(ws: Path, home: Path, configure, calls, *args: str, extra: str = ""):
    """`nyz run ARGS go` with the model calling ``calls`` one per step; (process, results)."""
    from nyzhi.testing.cli import run_nyz
    from nyzhi.testing.fake_llm import open_fake_llm

    async with open_fake_llm(script=_calls(*calls)) as server:
        configure(ws, server.url_for("openai"), extra=extra, approve=False)
        proc = await run_nyz(ws, home, "run", *args, "go")
    # the last request carries every result of the turn, in order
    results = server.requests[-1].tool_results() if server.requests else []
    return proc, results, server


# -- 1. git configuration planted from the sandbox ---------------------------------------------


async def test_issue_fsmonitor_planted_then_git_status_under_trust_off_read_only(
        workspace, home, configure, tmp_path):
    """The issue's example: an fsmonitor in .git/config (planted earlier) and `git_status`
    under `--trust off --sandbox read-only`: git runs on the host, but not the fsmonitor."""
    _repo(workspace)
    marker = tmp_path / MARK
    _git(workspace, "config", "core.fsmonitor", _planter(marker))
    proc, results, _ = await _nyz(workspace, home, configure, [("git_status", {})],
                                  "--trust", "off", "--sandbox", "read-only")
    assert proc.returncode == 0, proc.stderr.decode()
    assert "Branch:" in results[0]
    assert not marker.exists()


async def test_sandboxed_bash_cannot_write_git_config_hooks_or_move_git(
        workspace, home, configure):
    """`.git` is read-only to sandboxed bash: config, hooks, info/attributes, and renaming it
    away to plant a fresh one (a mount point cannot be renamed)."""
    _repo(workspace)
    config_before = (workspace / ".git" / "config").read_text()
    attempts = [
        "git config core.fsmonitor 'touch /tmp/x'",
        "printf '[core]\\n\\tfsmonitor = touch /tmp/x\\n' >> .git/config",
        "mkdir -p .git/hooks && printf '#!/bin/sh\\ntouch /tmp/x\\n' > .git/hooks/pre-commit",
        "mkdir -p .git/info && echo '* filter=evil' > .git/info/attributes",
        "mv .git .git-old && mkdir .git",
        "rm -rf .git",
    ]
    proc, results, _ = await _nyz(workspace, home, configure,
                                  [("bash", {"command": c}) for c in attempts], "--trust", "full")
    assert proc.returncode == 0, proc.stderr.decode()
    assert len(results) == len(attempts)
    assert (workspace / ".git" / "config").read_text() == config_before
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
    assert not (workspace / ".git" / "info" / "attributes").exists()
    assert not (workspace / ".git-old").exists()
    for result in results:
        assert "Read-only file system" in result or "Device or resource busy" in result, result


async def test_planted_pre_commit_and_post_commit_hooks_do_not_run_from_git_commit(
        workspace, home, configure, tmp_path):
    _repo(workspace)
    marker = tmp_path / MARK
    for name in ("pre-commit", "commit-msg", "prepare-commit-msg", "post-commit"):
        _hook(workspace / ".git" / "hooks" / name, marker)
    (workspace / "b.txt").write_text("b\n")
    proc, results, _ = await _nyz(workspace, home, configure,
                                  [("git_commit", {"message": "add b"})], "--trust", "full")
    assert proc.returncode == 0, proc.stderr.decode()
    assert results[0].startswith("Committed "), results[0]  # our tool committed, no hook ran
    assert not marker.exists()


async def test_hooks_path_pointing_into_the_workspace_is_ignored(
        workspace, home, configure, tmp_path):
    _repo(workspace)
    marker = tmp_path / MARK
    _hook(workspace / "myhooks" / "pre-commit", marker)
    _hook(workspace / "myhooks" / "post-checkout", marker)
    _git(workspace, "config", "core.hooksPath", str(workspace / "myhooks"))
    calls = [("git_commit", {"message": "hooks dir"}),
             ("git_checkout", {"branch": "side", "create": True})]
    proc, results, _ = await _nyz(workspace, home, configure, calls, "--trust", "full")
    assert results[0].startswith("Committed ") and "Created and switched" in results[1], results
    assert not marker.exists()


async def test_clean_smudge_and_process_filters_do_not_run_from_any_git_tool(
        workspace, home, configure, tmp_path):
    """`.gitattributes` (written from the sandbox) names a filter the repository's config
    defines: status, diff and commit would run `clean`, checkout `smudge`."""
    _repo(workspace)
    marker = tmp_path / MARK
    for leaf in ("clean", "smudge", "process"):
        _git(workspace, "config", f"filter.evil.{leaf}", _planter(marker))
    _git(workspace, "config", "filter.evil.required", "true")
    (workspace / ".gitattributes").write_text("* filter=evil\n")
    (workspace / "a.txt").write_text("changed\n")
    calls = [("git_status", {}), ("git_diff", {}), ("git_commit", {"message": "filtered"}),
             ("git_checkout", {"branch": "other", "create": True}),
             ("git_checkout", {"branch": "trunk"})]
    proc, results, _ = await _nyz(workspace, home, configure, calls, "--trust", "full")
    assert proc.returncode == 0, proc.stderr.decode()
    assert "a.txt" in results[0] and "+changed" in results[1]
    assert results[2].startswith("Committed "), results[2]
    assert not marker.exists()


async def test_external_diff_textconv_and_pager_do_not_run(workspace, home, configure, tmp_path):
    _repo(workspace)
    marker = tmp_path / MARK
    _git(workspace, "config", "diff.external", _planter(marker))
    _git(workspace, "config", "diff.evil.command", _planter(marker))
    _git(workspace, "config", "diff.evil.textconv", _planter(marker))
    _git(workspace, "config", "core.pager", _planter(marker))
    _git(workspace, "config", "pager.log", _planter(marker))
    _git(workspace, "config", "log.showSignature", "true")
    _git(workspace, "config", "gpg.program", str(workspace / "gpg"))
    _hook(workspace / "gpg", marker)
    (workspace / ".gitattributes").write_text("*.txt diff=evil\n")
    (workspace / "a.txt").write_text("two\n")
    calls = [("git_diff", {}), ("git_show", {"ref": "HEAD"}), ("git_log", {}),
             ("git_branch", {})]
    proc, results, _ = await _nyz(workspace, home, configure, calls, "--trust", "full")
    assert proc.returncode == 0, proc.stderr.decode()
    assert "+two" in results[0] and "+one" in results[1] and " one" in results[2]
    assert not marker.exists()


async def test_gpg_signing_and_editor_do_not_run_from_git_commit(
        workspace, home, configure, tmp_path):
    _repo(workspace)
    marker = tmp_path / MARK
    _hook(workspace / "gpg", marker)
    _git(workspace, "config", "commit.gpgSign", "true")
    _git(workspace, "config", "gpg.program", str(workspace / "gpg"))
    _git(workspace, "config", "core.editor", _planter(marker))
    _git(workspace, "config", "sequence.editor", _planter(marker))
    (workspace / "c.txt").write_text("c\n")
    proc, results, _ = await _nyz(workspace, home, configure,
                                  [("git_commit", {"message": "unsigned"})], "--trust", "full")
    assert results[0].startswith("Committed "), results[0]
    assert not marker.exists()


async def test_config_pulled_in_by_include_path_is_overridden(
        workspace, home, configure, tmp_path):
    """`include.path` to a file in the workspace: command-line overrides still win."""
    _repo(workspace)
    marker = tmp_path / MARK
    (workspace / "evil.cfg").write_text(f"[core]\n\tfsmonitor = {_planter(marker)}\n"
                                       f"\tpager = {_planter(marker)}\n")
    _git(workspace, "config", "include.path", str(workspace / "evil.cfg"))
    proc, results, _ = await _nyz(workspace, home, configure, [("git_status", {})])
    assert "Branch:" in results[0]
    assert not marker.exists()


async def test_a_repository_created_by_sandboxed_bash_cannot_run_its_config(
        tmp_path, home, configure):
    """No `.git` yet: bash cannot create one (issue 49: a missing protected path is stood
    in for, read-only), so neither its fsmonitor nor its filter exists for any git to run,
    and the workspace is left as it was (no stand-in behind)."""
    ws = tmp_path / "fresh"
    (ws / ".nyzhi").mkdir(parents=True)
    marker = tmp_path / MARK
    plant = (f"git init -q && git config core.fsmonitor \"{_planter(marker)}\" && "
             f"git config filter.x.clean \"{_planter(marker)}\" && "
             "echo '* filter=x' > .gitattributes && echo hi > f.txt && echo planted")
    calls = [("bash", {"command": plant}), ("git_status", {}), ("git_diff", {})]
    proc, results, _ = await _nyz(ws, home, configure, calls, "--trust", "full")
    assert proc.returncode == 0, proc.stderr.decode()
    assert "planted" not in results[0] and "Read-only file system" in results[0], results
    assert not (ws / ".git").exists()
    assert not marker.exists()


async def test_a_planted_bare_repository_is_not_discovered(tmp_path, home, configure):
    """A bare repository's files at the top of a workspace that is no repository: git would
    take the workspace itself for the repository, and obey its `config`."""
    ws = tmp_path / "bare"
    (ws / ".nyzhi").mkdir(parents=True)
    marker = tmp_path / MARK
    _git(ws, "init", "-q", "--bare", str(ws))
    config = (ws / "config").read_text()
    (ws / "config").write_text(config + f"[core]\n\tfsmonitor = {_planter(marker)}\n"
                                        f"\tbare = false\n\tworktree = {ws}\n")
    proc, results, _ = await _nyz(ws, home, configure, [("git_status", {})])
    assert "cannot use bare repository" in results[0], results[0]
    assert not marker.exists()


async def test_core_worktree_cannot_point_the_git_tools_outside_the_workspace(
        workspace, home, configure, tmp_path):
    """A planted `core.worktree` would make `git add -A` commit (and show) files from
    elsewhere: the work tree is pinned to where `.git` is."""
    _repo(workspace)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "stolen.txt").write_text("OUTSIDE-SECRET\n")
    _git(workspace, "config", "core.worktree", str(outside))
    calls = [("git_status", {}), ("git_commit", {"message": "all"}), ("git_show", {"ref": "HEAD"})]
    proc, results, _ = await _nyz(workspace, home, configure, calls, "--trust", "full")
    assert proc.returncode == 0, proc.stderr.decode()
    assert len(results) == 3, results  # the three git tools ran and answered the model
    assert all("stolen.txt" not in r and "OUTSIDE-SECRET" not in r for r in results), results


async def test_session_start_git_status_runs_no_planted_config(
        workspace, home, configure, tmp_path):
    """A plain `nyz run hi`: session start asks git for the branch and dirtiness."""
    _repo(workspace)
    marker = tmp_path / MARK
    _git(workspace, "config", "core.fsmonitor", _planter(marker))
    _git(workspace, "config", "filter.evil.clean", _planter(marker))
    (workspace / ".gitattributes").write_text("* filter=evil\n")
    (workspace / "a.txt").write_text("eno\n")  # the same size: git must hash it, through `clean`
    proc, _results, server = await _nyz(workspace, home, configure, [])
    assert proc.returncode == 0, proc.stderr.decode()
    assert "git: branch" in server.requests[0].system_text()
    assert not marker.exists()


async def test_mcp_serve_git_tools_run_no_planted_config(workspace, home, tmp_path):
    import sys

    from mcp import Client, StdioServerParameters

    from nyzhi.testing.cli import nyz_env

    _repo(workspace)
    marker = tmp_path / MARK
    _git(workspace, "config", "core.fsmonitor", _planter(marker))
    _git(workspace, "config", "diff.external", _planter(marker))
    _hook(workspace / ".git" / "hooks" / "pre-commit", marker)
    (workspace / "a.txt").write_text("served\n")
    env = {k: v for k, v in nyz_env(home).items() if k in ("HOME", "PYTHONPATH", "PATH")}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "nyzhi", "mcp", "serve", "--trust", "full",
                                      "--sandbox", "workspace-write"],
        env=env, cwd=str(workspace))
    async with Client(params) as client:
        status = await client.call_tool("git_status", {})
        diff = await client.call_tool("git_diff", {})
        commit = await client.call_tool("git_commit", {"message": "over mcp"})
    assert "a.txt" in status.content[0].text and "+served" in diff.content[0].text
    assert commit.content[0].text.startswith("Committed "), commit.content[0].text
    assert not marker.exists()


# -- 2. configuration that runs things is read-only to the sandbox, and approved once ---------


def _session_start_hook(marker: Path) -> str:
    return f'\n[[agent.hooks]]\nevent = "session_start"\ncommand = "touch {marker}"\n'


def _claude_hook(marker: Path) -> str:
    import json

    return json.dumps({"hooks": {"SessionStart": [
        {"hooks": [{"type": "command", "command": f"touch {marker}"}]}]}})


async def test_issue_hook_written_into_project_config_by_bash_never_runs(
        workspace, home, configure, tmp_path):
    """The issue's example: bash appends a session_start hook to .nyzhi/config.toml; the next
    `nyz run --trust off` would run it as the user."""
    marker = tmp_path / MARK
    append = f"printf '{_session_start_hook(marker)}' >> .nyzhi/config.toml"
    proc, results, _ = await _nyz(workspace, home, configure, [("bash", {"command": append})],
                                  "--trust", "full")
    assert "Read-only file system" in results[0], results[0]
    assert "session_start" not in (workspace / ".nyzhi" / "config.toml").read_text()
    proc, _, _ = await _nyz(workspace, home, configure, [], "--trust", "off")
    assert proc.returncode == 0, proc.stderr.decode()
    assert not marker.exists()


async def test_bash_cannot_replace_protected_files_by_rename_link_or_symlink(
        workspace, home, configure, tmp_path):
    marker = tmp_path / MARK
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text("{}")
    (workspace / ".mcp.json").write_text('{"mcpServers": {}}')
    settings = _claude_hook(marker).replace("'", "")
    attempts = [
        f"echo '{settings}' > .claude/settings.json",
        f"mkdir -p .claude && echo '{settings}' > .claude/settings.local.json",
        "mv .claude .claude-old && mkdir .claude",
        "mv .nyzhi .nyzhi-old && mkdir .nyzhi",
        "ln .nyzhi/config.toml hard && echo '[[agent.hooks]]' >> hard",
        "ln -s .nyzhi/config.toml soft && echo '[[agent.hooks]]' >> soft",
        """echo '{"mcpServers": {"x": {"command": "touch"}}}' > .mcp.json""",
        "rm -f .mcp.json",
    ]
    proc, results, _ = await _nyz(workspace, home, configure,
                                  [("bash", {"command": c}) for c in attempts], "--trust", "full")
    assert proc.returncode == 0, proc.stderr.decode()
    assert len(results) == len(attempts)
    assert (workspace / ".claude" / "settings.json").read_text() == "{}"
    assert not (workspace / ".claude" / "settings.local.json").exists()
    assert not (workspace / ".claude-old").exists() and not (workspace / ".nyzhi-old").exists()
    assert "[[agent.hooks]]" not in (workspace / ".nyzhi" / "config.toml").read_text()
    assert (workspace / ".mcp.json").read_text() == '{"mcpServers": {}}'
    for result in results:
        assert any(e in result for e in ("Read-only file system", "Device or resource busy",
                                         "Invalid cross-device link")), result


async def test_claude_hooks_created_where_none_existed_wait_for_approval(
        workspace, home, configure, tmp_path):
    """`.claude` does not exist: bash cannot create it (a read-only stand-in, issue 49),
    and none is left behind. A hook that arrives another way (a `git pull`, written here by
    the test) is new since the user last approved the project: not run, with a notice;
    `nyz config trust --yes` approves it, and only then does it run (the control)."""
    from nyzhi.testing.cli import run_nyz

    marker = tmp_path / MARK
    plant = f"mkdir .claude; cat > .claude/settings.json <<'EOF'\n{_claude_hook(marker)}\nEOF"
    proc, results, _ = await _nyz(workspace, home, configure, [("bash", {"command": plant})],
                                  "--trust", "full")
    assert "Read-only file system" in results[0], results
    assert not (workspace / ".claude").exists()
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text(_claude_hook(marker))
    proc, _, _ = await _nyz(workspace, home, configure, [])
    assert not marker.exists()
    notice = proc.stderr.decode()
    assert "not used in this run" in notice and "nyz config trust" in notice, notice
    approved = await run_nyz(workspace, home, "config", "trust", "--yes")
    assert approved.returncode == 0, approved.stderr.decode()
    assert "SessionStart" in approved.stdout.decode()
    await _nyz(workspace, home, configure, [])
    assert marker.exists()  # approved: it runs


async def test_an_approved_hook_that_changes_is_not_run_until_approved_again(
        workspace, home, configure, tmp_path, approve_project):
    first, second = tmp_path / "first", tmp_path / MARK
    await _nyz(workspace, home, configure, [], extra=_session_start_hook(first))
    assert not first.exists()  # never approved
    approve_project(workspace)
    await _nyz(workspace, home, configure, [], extra=_session_start_hook(first))
    assert first.exists()
    # the same file, now with another command: a new approval is needed
    await _nyz(workspace, home, configure, [], extra=_session_start_hook(second))
    assert not second.exists()


async def test_mcp_json_created_by_bash_does_not_start_its_server(
        workspace, home, configure, tmp_path):
    marker = tmp_path / MARK
    server = f'{{"mcpServers": {{"x": {{"command": "sh", "args": ["-c", "touch {marker}"]}}}}}}'
    plant = f"cat > .mcp.json <<'EOF'\n{server}\nEOF"
    _, results, _ = await _nyz(workspace, home, configure, [("bash", {"command": plant})],
                               "--trust", "full")
    assert "Is a directory" in results[0], results  # the read-only stand-in (issue 49)
    assert not (workspace / ".mcp.json").exists()
    proc, _, _ = await _nyz(workspace, home, configure, [])
    assert proc.returncode == 0, proc.stderr.decode()
    assert not marker.exists()


@pytest.mark.parametrize("trust", ["autoedit", "limited"])
async def test_file_tools_need_approval_for_protected_files_short_of_full_trust(
        workspace, home, configure, tmp_path, trust):
    """The gated way in still asks: in autoedit and limited trust a write to protected
    configuration is not auto-approved, and headless nobody can approve it."""
    marker = tmp_path / MARK
    _hook(workspace / "h", marker)
    calls = [
        ("write", {"file_path": ".nyzhi/config.local.toml",
                   "content": _session_start_hook(marker)}),
        ("write", {"file_path": ".git/hooks/pre-commit", "content": f"touch {marker}\n"}),
        ("write", {"file_path": ".claude/settings.json", "content": _claude_hook(marker)}),
        ("write", {"file_path": ".mcp.json", "content": "{}"}),
        ("write", {"file_path": "ordinary.txt", "content": "fine"}),  # the control
    ]
    extra = '\n[agent.trust]\nallow_tools = ["write"]\n' if trust == "limited" else ""
    proc, results, _ = await _nyz(workspace, home, configure, calls, "--trust", trust,
                                  extra=extra)
    assert proc.returncode == 0, proc.stderr.decode()
    for result in results[:4]:
        assert "needs the user's approval" in result, result
    assert not (workspace / ".nyzhi" / "config.local.toml").exists()
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
    assert not (workspace / ".claude").exists() and not (workspace / ".mcp.json").exists()
    assert (workspace / "ordinary.txt").read_text() == "fine"


async def test_unapproved_project_settings_cannot_loosen_the_sandbox_or_trust(
        workspace, home, configure, tmp_path):
    """A project file asking for full-access and full trust: until approved, bash still runs
    confined and still needs approval."""
    outside = tmp_path / "outside-target"
    extra = '\n[agent.sandbox]\nlevel = "full-access"\n[agent.trust]\nmode = "full"\n'
    proc, results, _ = await _nyz(workspace, home, configure,
                                  [("bash", {"command": f"touch {outside}"})], extra=extra)
    assert proc.returncode == 0, proc.stderr.decode()
    assert "needs approval" in results[0], results[0]
    assert not outside.exists()
    proc, results, _ = await _nyz(workspace, home, configure,
                                  [("bash", {"command": f"touch {outside}"})], "--trust", "autoedit",
                                  extra='\n[agent.sandbox]\nlevel = "full-access"\n'
                                        'writable_roots = ["/"]\n[agent.trust]\nmode = "full"\n'
                                        'auto_approve = ["bash"]\n')
    assert not outside.exists(), results


async def test_bash_cannot_approve_the_project_for_itself(workspace, home, configure, tmp_path):
    """The record of approvals lives in the user's state directory, which the sandbox masks:
    bash can neither read it nor forge an approval there."""
    from nyzhi.config import paths

    approvals = paths.approvals_path()
    approvals.parent.mkdir(parents=True, exist_ok=True)
    approvals.write_text('{"version": 1, "workspaces": {}, "trusted": {}}')
    forge = (f"cat {approvals}; echo '{{\"trusted\": {{}}}}' > {approvals}; "
             f"ls {approvals.parent}; echo tried")
    proc, results, _ = await _nyz(workspace, home, configure, [("bash", {"command": forge})],
                                  "--trust", "full")
    assert "tried" in results[0]
    assert "version" not in results[0]
    assert approvals.read_text() == '{"version": 1, "workspaces": {}, "trusted": {}}'


# -- 3. credential files are masked in the sandbox and refused to the read tools ---------------

SECRET = "SECRET-CREDENTIAL-VALUE-0123456789"
CREDENTIALS = (
    ".ssh/id_ed25519", ".aws/credentials", ".config/gcloud/credentials.db", ".azure/token",
    ".kube/config", ".gnupg/private.key", ".netrc", ".docker/config.json", ".codex/auth.json",
    ".claude/.credentials.json", ".config/gh/hosts.yml",
)


AUTH_KEY = "sk-auth-json-planted-key-9876543210"


def _plant_credentials(home: Path) -> bytes:
    """Every listed credential file holding SECRET (no redaction knows it: only the mask can
    keep it out), and nyz's own auth.json with AUTH_KEY; returns auth.json's bytes."""
    import json

    from nyzhi.config import paths

    for rel in CREDENTIALS:
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{SECRET} in {rel}\n")
    auth = paths.auth_path()
    auth.parent.mkdir(parents=True, exist_ok=True)
    body = json.dumps({"version": 1, "providers": {"openai": [{"label": "default",
                                                              "key": AUTH_KEY}]}}).encode()
    auth.write_bytes(body)
    return body


async def test_issue_cat_ssh_key_and_base64_auth_json_reach_nobody(workspace, home, configure):
    """The issue's example: `cat ~/.ssh/id_ed25519` and base64 of nyz's own auth.json."""
    import base64

    from nyzhi.config import paths

    auth = _plant_credentials(home)
    calls = [("bash", {"command": "cat ~/.ssh/id_ed25519; echo end"}),
             ("bash", {"command": f"base64 -w0 {paths.auth_path()}; echo; echo end"}),
             ("bash", {"command": f"rev {paths.auth_path()}; echo end"})]
    proc, results, server = await _nyz(workspace, home, configure, calls, "--trust", "full")
    assert proc.returncode == 0, proc.stderr.decode()
    body = b"".join(r.body for r in server.requests).decode()
    assert SECRET not in body
    assert base64.b64encode(auth).decode()[:24] not in body  # redaction cannot see this form
    assert AUTH_KEY[::-1] not in body
    assert all("end" in r for r in results)


async def test_every_listed_credential_is_masked_from_bash(workspace, home, configure):
    _plant_credentials(home)
    reads = [f"cat ~/{rel} 2>&1" for rel in CREDENTIALS]
    calls = [("bash", {"command": "; ".join(reads) + "; echo end"}),
             ("bash", {"command": "grep -r SECRET ~ /proc/self/root/$HOME 2>/dev/null; echo end"}),
             ("bash", {"command": "tar c -C ~ . 2>/dev/null | strings | grep SECRET; echo end"})]
    proc, results, server = await _nyz(workspace, home, configure, calls, "--trust", "full")
    assert proc.returncode == 0, proc.stderr.decode()
    assert len(results) == 3 and all("end" in r for r in results)
    assert SECRET not in b"".join(r.body for r in server.requests).decode()


async def test_links_from_the_workspace_to_credentials_are_masked_too(
        workspace, home, configure):
    """A symlink resolves inside the sandbox's own mount namespace; a hard link would have to
    be made outside it (the workspace is another mount than HOME here, and HOME is read-only)."""
    _plant_credentials(home)
    (workspace / "key").symlink_to(home / ".ssh" / "id_ed25519")
    (workspace / "awsdir").symlink_to(home / ".aws")
    calls = [("bash", {"command": "cat key awsdir/credentials; "
                                  "ln ~/.netrc hard 2>&1; cp ~/.netrc copy 2>&1; cat copy; echo end"})]
    proc, results, server = await _nyz(workspace, home, configure, calls, "--trust", "full")
    assert "end" in results[0]
    assert SECRET not in b"".join(r.body for r in server.requests).decode()
    assert not (workspace / "copy").exists() or SECRET not in (workspace / "copy").read_text()
    assert not (workspace / "hard").exists()


async def test_read_and_search_tools_refuse_the_same_list(workspace, home, configure):
    _plant_credentials(home)
    calls = [("read", {"file_path": str(home / rel)}) for rel in CREDENTIALS[:4]]
    calls += [("read", {"file_path": str(home / ".netrc")}),
              ("grep", {"pattern": "SECRET", "path": str(home)})]
    proc, results, server = await _nyz(workspace, home, configure, calls)
    assert proc.returncode == 0, proc.stderr.decode()
    for result in results[:5]:
        assert "refused" in result and "credential" in result, result
    assert SECRET not in b"".join(r.body for r in server.requests).decode()


async def test_hide_adds_paths_masked_from_bash_and_refused_to_read(workspace, home, configure):
    vault = home / ".vault-token"
    vault.write_text(f"{SECRET}\n")
    (home / "tokens").mkdir()
    (home / "tokens" / "t").write_text(f"{SECRET}\n")
    extra = '\n[agent.sandbox]\nhide = ["~/.vault-token", "~/tokens"]\n'
    calls = [("bash", {"command": "cat ~/.vault-token ~/tokens/t; echo end"}),
             ("read", {"file_path": str(vault)})]
    proc, results, server = await _nyz(workspace, home, configure, calls, "--trust", "full",
                                       extra=extra)
    assert proc.returncode == 0, proc.stderr.decode()
    assert "end" in results[0] and "refused" in results[1]
    assert SECRET not in b"".join(r.body for r in server.requests).decode()


async def test_a_project_cannot_unmask_the_built_in_list(workspace, home, configure):
    """`hide` only adds (a union across layers); an empty list in the project changes nothing."""
    _plant_credentials(home)
    proc, results, server = await _nyz(
        workspace, home, configure, [("bash", {"command": "cat ~/.ssh/id_ed25519; echo end"})],
        "--trust", "full", extra="\n[agent.sandbox]\nhide = []\n")
    assert "end" in results[0]
    assert SECRET not in b"".join(r.body for r in server.requests).decode()


async def test_full_access_is_unchanged_and_still_redacts_nothing_new(workspace, home, configure):
    """The control: full-access runs unconfined, so the file is readable there (docs say so)."""
    _plant_credentials(home)
    proc, results, _ = await _nyz(
        workspace, home, configure, [("bash", {"command": "cat ~/.aws/credentials"})],
        "--trust", "full", "--sandbox", "full-access")
    assert SECRET in results[0]


async def test_masks_hold_in_the_read_only_sandbox_and_through_mcp_serve(workspace, home):
    import sys

    from mcp import Client, StdioServerParameters

    from nyzhi.testing.cli import nyz_env

    _plant_credentials(home)
    env = {k: v for k, v in nyz_env(home).items() if k in ("HOME", "PYTHONPATH", "PATH")}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "nyzhi", "mcp", "serve", "--trust", "full"],
        env=env, cwd=str(workspace))
    async with Client(params) as client:
        out = await client.call_tool("bash", {"command": "cat ~/.ssh/id_ed25519 ~/.netrc; echo end"})
        read = await client.call_tool("read", {"file_path": str(home / ".kube" / "config")})
    assert "end" in out.content[0].text and SECRET not in out.content[0].text
    assert read.is_error and SECRET not in read.content[0].text


async def test_a_workspace_at_home_cannot_write_the_users_own_config(home, configure, tmp_path):
    """With HOME itself the workspace, ~/.gitconfig and nyz's user config are in the writable
    tree, yet nyz and git trust them as the user's own: they are bound read-only (made first
    when missing), so neither a global git filter nor a global hook can be planted."""
    from nyzhi.config import paths

    _git(home, "init", "-q")
    (home / ".nyzhi").mkdir(exist_ok=True)
    marker = tmp_path / MARK
    plant = [
        f"git config --global filter.x.clean \"{_planter(marker)}\" 2>&1",
        f"mkdir -p {paths.config_dir()} && printf '{_session_start_hook(marker)}' "
        f">> {paths.global_config_path()} 2>&1",
        "mkdir -p ~/.config/git && echo '[core] fsmonitor = x' > ~/.config/git/config 2>&1",
    ]
    proc, results, _ = await _nyz(home, home, configure,
                                  [("bash", {"command": c}) for c in plant], "--trust", "full")
    assert proc.returncode == 0, proc.stderr.decode()
    for result in results:  # read-only, or masked (the user's config holds the api_key)
        assert any(why in result for why in ("Read-only file system", "Device or resource busy",
                                             "Permission denied")), result
    assert "filter" not in (home / ".gitconfig").read_text()
    # the user's config holds the test's provider (configure, approve=False: base_url is a
    # gated key since issue 49), bound read-only: the planted hook is not in it
    assert "agent.hooks" not in paths.global_config_path().read_text()
    assert not (home / ".config" / "git" / "config").exists()
    await _nyz(home, home, configure, [], "--trust", "full")
    assert not marker.exists()


async def test_a_workspace_at_home_cannot_make_up_an_approval_in_a_missing_state_dir(
        home, configure, tmp_path):
    """The state dir holds the project-trust approvals. With HOME the workspace and no state
    dir yet, a sandboxed command must not create one holding a forged approval: nyz creates
    it before the sandbox starts and masks it, so what the command writes never lands."""
    import shutil

    from nyzhi.config import paths

    _git(home, "init", "-q")
    (home / ".nyzhi").mkdir(exist_ok=True)
    state = paths.state_dir()
    forge = (f"mkdir -p {state} && echo PLANTED-APPROVAL > {state}/approvals.json && "
             f"cat {state}/approvals.json")
    shutil.rmtree(state, ignore_errors=True)
    assert not state.exists()
    proc, results, _ = await _nyz(home, home, configure, [("bash", {"command": forge})],
                                  "--trust", "full")
    assert proc.returncode == 0, proc.stderr.decode()
    assert len(results) == 1, results
    for path in state.rglob("*") if state.exists() else ():
        if path.is_file():
            assert "PLANTED-APPROVAL" not in path.read_text(errors="replace"), path


@pytest.mark.parametrize("answer", ["y", "n"])
async def test_the_console_asks_once_about_an_unapproved_project_hook(
        workspace, home, configure, tmp_path, answer):
    """Interactive: the session runs without the new hook and asks about it once; a yes is
    recorded (the hook runs from the next session on), a no is not."""
    from nyzhi.config import load_config
    from nyzhi.config.project_trust import check
    from nyzhi.testing.cli import read_until, start_chat
    from nyzhi.testing.fake_llm import open_fake_llm

    marker = tmp_path / MARK
    async with open_fake_llm(script=[]) as server:
        configure(workspace, server.url_for("openai"), extra=_session_start_hook(marker),
                  approve=False)
        proc, out = await start_chat(workspace, home)
        await read_until(proc.stdout, out, b"/project asks: Approve project configuration")
        assert not marker.exists()  # not run in this session
        await proc.stdin.send_all(f"{answer}\n".encode())
        await read_until(proc.stdout, out, b"> ")
        await proc.stdin.send_all(b"/exit\n")
        with trio.fail_after(20):
            await proc.wait()
    assert not marker.exists()
    assert b"touch " in out  # the user saw the command they were asked about
    assert check(load_config(workspace)).approved is (answer == "y")


async def test_an_unapproved_project_cannot_let_provider_keys_into_the_sandbox(
        workspace, home, configure):
    """`[shell.env] exclude = []` in a project file would hand the provider key to bash, where
    any encoding of it gets past redaction; until approved, the default list holds."""
    from nyzhi.config import paths
    from nyzhi.testing.cli import NYZ, nyz_env
    from nyzhi.testing.fake_llm import open_fake_llm

    key = "sk-provider-key-for-the-sandbox-0123"
    # the user's own config lets bash run without asking (no --trust full: that would accept
    # the project's settings for the run)
    paths.global_config_path().parent.mkdir(parents=True, exist_ok=True)
    paths.global_config_path().write_text('[agent.trust]\nauto_approve = ["bash"]\n')
    script = _calls(("bash", {"command": "echo $OPENAI_API_KEY | rev; echo end"}))
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"), extra='\n[shell.env]\nexclude = []\n',
                  approve=False)
        proc = await trio.run_process(
            [*NYZ, "run", "go"], cwd=workspace, env={**nyz_env(home), "OPENAI_API_KEY": key},
            capture_stdout=True, capture_stderr=True, check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    [result] = server.requests[-1].tool_results()
    assert "end" in result and key[::-1] not in result, result
    assert "not used in this run" in proc.stderr.decode()
