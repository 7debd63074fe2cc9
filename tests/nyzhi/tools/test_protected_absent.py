"""Protected paths that do not exist when a sandboxed command starts cannot be created by it
(issue 49, item 3), on a real bubblewrap sandbox.

``.git``, ``.nyzhi``, ``.claude`` and ``.mcp.json`` are missing from the workspace; each
vector tries to create one (mkdir -p, a rename of a prepared directory, a symlink, Python's
``open``, ``git init``, removing the stand-in first). None may leave a file there, and once
the command has ended the empty stand-ins are gone too (git never sees one). Controls: the
ordinary writes of a command still land, an empty ``.claude`` the user made is not removed,
and a command that ends while another still runs does not pull the other's stand-ins away.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import trio

from nyzhi.tools.base import SandboxLevel
from nyzhi.tools.executors import LocalExecutor
from nyzhi.tools.sandbox import SandboxPolicy

PLANTED = (".nyzhi/config.toml", ".mcp.json", ".claude/settings.json", ".git/hooks/pre-commit",
           ".git/config")

VECTORS = {
    "mkdir-p": "mkdir -p .nyzhi .claude .git/hooks; echo '[[agent.hooks]]' > .nyzhi/config.toml;"
               " echo '{}' > .claude/settings.json; echo x > .git/hooks/pre-commit",
    "redirect": "echo '{\"mcpServers\": {}}' > .mcp.json",
    "mv-dir": "mkdir -p stage/hooks && echo x > stage/hooks/pre-commit && echo c > "
              "stage/config.toml && mv stage .nyzhi; mkdir s2 && mv s2 .git; mv stage .git",
    "mv-file": "echo '{}' > m.json && mv -f m.json .mcp.json; mv -T m.json .mcp.json",
    "symlink": "mkdir -p real && echo '{}' > real/settings.json && ln -sfn real .claude; "
               "echo '{}' > j && ln -sf j .mcp.json; ln -s real .nyzhi",
    "python-open": "python3 -c \"import os\nfor p in ('.claude/settings.json', '.mcp.json', "
                   "'.nyzhi/config.toml'):\n  os.makedirs(os.path.dirname(p) or '.', "
                   "exist_ok=True)\n  open(p, 'w').write('{}')\"",
    "python-rename": "python3 -c \"import os; os.mkdir('d'); open('d/config.toml','w'); "
                     "os.rename('d', '.nyzhi')\"",
    "git-init": "git init -q . && git config core.hooksPath .githooks",
    "remove-standin-first": "rmdir .nyzhi .claude .git .mcp.json; rm -rf .nyzhi; "
                            "mkdir .nyzhi && echo x > .nyzhi/config.toml",
}


@pytest.fixture
def ws(tmp_path: Path, home: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return Path(os.path.realpath(ws))


def _policy(ws: Path) -> SandboxPolicy:
    # allow_temp off: tmp_path itself is in the temp dir, which would be writable
    return SandboxPolicy(SandboxLevel.WORKSPACE_WRITE, ws, allow_temp=False)


async def _bash(ws: Path, command: str, policy: SandboxPolicy | None = None):
    return await LocalExecutor().run(command + "\necho END", cwd=ws,
                                     sandbox=policy or _policy(ws), timeout=60)


def _left(ws: Path) -> list[str]:
    return sorted(os.listdir(ws))


def _there(path: Path) -> bool:
    """Anything at ``path``, a dangling symlink included."""
    return os.path.lexists(path)


def _git_init(ws: Path) -> None:
    import subprocess

    subprocess.run(["git", "init", "-q", str(ws)], check=True)


@pytest.mark.parametrize("vector", sorted(VECTORS))
async def test_a_missing_protected_path_cannot_be_created(ws, vector):
    result = await _bash(ws, VECTORS[vector])
    assert "END" in result.output and result.sandboxed, result.output
    for rel in PLANTED:
        assert not _there(ws / rel), (rel, result.output)
    for name in (".nyzhi", ".claude", ".mcp.json", ".git"):
        assert not _there(ws / name), (name, _left(ws), result.output)


async def test_control_ordinary_writes_still_land_and_nothing_is_left_behind(ws):
    (ws / "src").mkdir()
    result = await _bash(ws, "echo a > new.txt && mkdir -p pkg/sub && echo b > pkg/sub/f.py && "
                             "echo c >> src/main.py && mv new.txt moved.txt && ls -a")
    assert "END" in result.output, result.output
    assert (ws / "moved.txt").read_text() == "a\n"
    assert (ws / "pkg" / "sub" / "f.py").read_text() == "b\n"
    assert (ws / "src" / "main.py").read_text() == "c\n"
    assert _left(ws) == ["moved.txt", "pkg", "src"]


async def test_control_the_users_own_empty_claude_dir_stays(ws):
    (ws / ".claude").mkdir()
    result = await _bash(ws, "echo '{}' > .claude/settings.json")
    assert "Read-only file system" in result.output
    assert (ws / ".claude").is_dir() and not any((ws / ".claude").iterdir())


async def test_an_existing_git_repository_stays_usable_read_only(ws):
    _git_init(ws)
    result = await _bash(ws, "git status --porcelain; echo x > .git/hooks/pre-commit")
    assert "Read-only file system" in result.output
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()


async def test_a_command_that_ends_does_not_pull_the_stand_ins_from_one_still_running(ws):
    """Two commands in one workspace: the short one ends while the long one runs. Removing
    the stand-ins then would unmount them under the long one, which could create
    ``.nyzhi/config.toml`` after all; they stay until the last one ends."""
    long = ("echo STARTED; while [ ! -e go ]; do sleep 0.05; done; "
            "mkdir -p .nyzhi && echo x > .nyzhi/config.toml; echo '{}' > .mcp.json")
    box: dict[str, object] = {}
    started = trio.Event()

    async def seen(text: str) -> None:
        if "STARTED" in text:
            started.set()

    async def run_long() -> None:
        box["long"] = await LocalExecutor().run(long + "\necho END", cwd=ws,
                                                sandbox=_policy(ws), timeout=100,
                                                on_output=seen)

    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_long)
            await started.wait()  # bwrap has mounted the stand-ins: the command runs
            short = await _bash(ws, "echo short")
            assert "short" in short.output
            assert (ws / ".nyzhi").is_dir()  # still there: the long one stands on it
            (ws / "go").touch()
    out = box["long"].output  # type: ignore[attr-defined]
    assert "END" in out and "Read-only file system" in out, out
    assert not (ws / ".nyzhi" / "config.toml").exists() and not (ws / ".mcp.json").exists()
    assert _left(ws) == ["go"]


async def test_in_a_teammates_worktree_its_missing_entries_are_stood_in_for_too(ws):
    mate = ws / ".nyzhi" / "worktrees" / "ana"
    mate.mkdir(parents=True)
    result = await LocalExecutor().run(
        "echo '{}' > .mcp.json; mkdir -p .claude; echo ok > work.txt; echo END", cwd=mate,
        sandbox=_policy(ws), timeout=60)
    assert "END" in result.output
    assert (mate / "work.txt").read_text() == "ok\n"
    assert not _there(mate / ".mcp.json") and not _there(mate / ".claude")


async def test_nyz_reads_a_stand_in_mcp_json_as_no_file(ws):
    """While a command stands on it, another nyz starting in the workspace sees an empty
    directory at ``.mcp.json``: no servers, no error."""
    from nyzhi.config.mcp_sources import read_mcp_json

    (ws / ".mcp.json").mkdir()
    assert read_mcp_json(ws) == []


async def test_the_workspace_itself_cannot_be_renamed_away_when_home_is_beside_it(ws, home):
    """Temp dir writable, HOME and the workspace both in it: the directories above HOME's
    protected parts are pinned (mount points); the workspace below them stays a mount point
    of its own, so it cannot be moved aside for a fresh one without protections."""
    policy = SandboxPolicy(SandboxLevel.WORKSPACE_WRITE, ws, allow_temp=True)
    plant = (f"mv {ws} {ws}-old; mkdir -p {ws}/.nyzhi && echo x > {ws}/.nyzhi/config.toml; "
             f"mv {home} {home}-old; mv {home}/.config {home}/c2")
    result = await LocalExecutor().run(plant + "; echo END", cwd=ws, sandbox=policy,
                                       timeout=60)
    assert "END" in result.output and "busy" in result.output.lower(), result.output
    assert not _there(Path(f"{ws}-old")) and not _there(Path(f"{home}-old"))
    assert not _there(ws / ".nyzhi" / "config.toml") and not _there(home / "c2")


async def test_stand_ins_left_by_a_killed_holder_are_removed_by_the_next_command(ws):
    """A holder that dies without cleaning up (killed nyz) drops its lock with its process;
    the stand-ins it noted are removed when the next sandboxed command ends."""
    policy = _policy(ws)
    held = policy.standins(ws)
    held.enter()
    argv = policy.wrap("true", ws).argv
    held.note(argv)
    await trio.run_process(argv)
    assert (ws / ".mcp.json").is_dir() and (ws / ".claude").is_dir()
    for fd, _lock in held._held.values():  # as the kernel does for a killed process
        os.close(fd)
    held._held = {}
    result = await _bash(ws, "echo later")
    assert "later" in result.output
    assert _left(ws) == []
