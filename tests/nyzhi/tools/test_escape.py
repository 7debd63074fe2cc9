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
