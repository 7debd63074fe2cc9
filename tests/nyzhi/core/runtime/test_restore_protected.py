"""Restores (``nyz rewind --code``, ``/undo``) ask the one protected-path check and never
follow a symlink (issue 49, item 3).

The issue's vector: nyz deleted an executable file, a sandboxed command swapped the folder
that held it for a symlink to ``.git/hooks``, and the rewind wrote an executable
``pre-commit``, which the user's next commit ran. Each vector below swaps something for a
symlink after nyz recorded the change, then restores: nothing may land in ``.git``,
``.nyzhi`` or ``.claude``, and the refusal is one line. Controls: a plain restore still
writes, and ``--force`` (the user's explicit word) restores a protected file nyz itself
changed, still without following a symlink."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from nyzhi.config.modes import SandboxLevel
from nyzhi.core.runtime.checkpoints import CheckpointStore
from nyzhi.core.runtime.checkpoints.actions import rewind_saved
from nyzhi.core.runtime.checkpoints.store import digest
from nyzhi.core.runtime.sessions import SessionStore
from nyzhi.testing.cli import run_nyz
from nyzhi.tools.base import ToolContext
from nyzhi.tools.paths import ToolPathError
from nyzhi.tools.sandbox import SandboxPolicy
from nyzhi.tools.undo import Planned, apply, record, undo_last

HOOK = b"#!/bin/sh\ntouch /tmp/pwned\n"


def _repo(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    return Path(os.path.realpath(ws))


def _saved(ws: Path, befores: list[tuple[Path, bytes | None, int | None]],
           afters: dict[Path, str | None]) -> str:
    """A saved session whose journal says nyz changed ``befores`` in its first turn."""
    from nyzhi.provider.types import Message

    writer = SessionStore().create(cwd=ws, workspace_root=ws, sync="never")
    writer.append_message(Message("user", "p"))  # its first turn (an empty one is not kept)
    writer.close()
    journal = CheckpointStore().journal(writer.id)
    journal.append({"k": "point", "seq": 1, "kind": "prompt", "label": "p", "log": None})
    for path, data, mode in befores:
        blob = journal.put_blob(data) if data is not None else None
        journal.append({"k": "before", "seq": 1, "path": str(path), "blob": blob,
                        "type": "file", "mode": mode})
    for path, fp in afters.items():
        journal.append({"k": "after", "path": str(path), "blob": fp})
    journal.close()
    return writer.id


def _swap(ws: Path, vector: str) -> tuple[Path, Path]:  # noqa: PLR0911
    """Make the swap; (the path nyz recorded, where a followed write would land)."""
    hooks = ws / ".git" / "hooks"
    if vector == "dir-to-hooks":  # the issue's: tools/ became a link to .git/hooks
        (ws / "tools").symlink_to(hooks, target_is_directory=True)
        return ws / "tools" / "pre-commit", hooks / "pre-commit"
    if vector == "relative-link-to-git":  # a relative link, one level up
        (ws / "scripts").mkdir()
        (ws / "scripts" / "hooks").symlink_to("../.git/hooks", target_is_directory=True)
        return ws / "scripts" / "hooks" / "pre-commit", hooks / "pre-commit"
    if vector == "chain-to-nyzhi":  # a link to a link to .nyzhi
        (ws / ".nyzhi").mkdir(exist_ok=True)
        (ws / "b").symlink_to(ws / ".nyzhi", target_is_directory=True)
        (ws / "conf").symlink_to(ws / "b", target_is_directory=True)
        return ws / "conf" / "config.toml", ws / ".nyzhi" / "config.toml"
    if vector == "file-link-to-claude":  # the file itself became a dangling link
        (ws / ".claude").mkdir()
        (ws / "settings.json").symlink_to(ws / ".claude" / "settings.json")
        return ws / "settings.json", ws / ".claude" / "settings.json"
    raise AssertionError(vector)


VECTORS = ["dir-to-hooks", "relative-link-to-git", "chain-to-nyzhi", "file-link-to-claude"]


@pytest.mark.parametrize("vector", VECTORS)
@pytest.mark.parametrize("force", [False, True])
def test_rewind_never_follows_a_symlink_into_protected_configuration(vector, force, tmp_path,
                                                                     home):
    ws = _repo(tmp_path)
    recorded, landing = _swap(ws, vector)
    # nyz deleted the (executable) file at ``recorded``: nothing is there now, as nyz left it
    sid = _saved(ws, [(recorded, HOOK, 0o755)], {recorded: None})
    with pytest.raises(ToolPathError) as caught:
        rewind_saved(sid, "1", "code", force=force)
    line = str(caught.value)
    assert "\n" not in line and "symlink" in line and str(recorded) in line
    assert not landing.exists()


async def test_nyz_rewind_cli_refuses_the_hooks_swap_in_one_line(tmp_path, home):
    """The issue's vector end to end: ``nyz rewind --to 1 --code`` exits 1, one line."""
    ws = _repo(tmp_path)
    recorded, landing = _swap(ws, "dir-to-hooks")
    sid = _saved(ws, [(recorded, HOOK, 0o755)], {recorded: None})
    proc = await run_nyz(ws, home, "rewind", sid, "--to", "1", "--code")
    err = proc.stderr.decode()
    assert proc.returncode == 1, err
    assert err.count("\n") == 1 and "never follow symlinks" in err and "Traceback" not in err
    assert not landing.exists() and not (ws / ".git" / "hooks" / "pre-commit").exists()


def test_rewind_of_a_protected_path_itself_needs_force(tmp_path, home):
    """nyz changed .git/hooks/pre-commit itself (approved at the time): a restore asks the
    protected-path check and writes it only with --force; a plain file beside it follows
    the same all-or-nothing rule."""
    ws = _repo(tmp_path)
    hook = ws / ".git" / "hooks" / "pre-commit"
    plain = ws / "a.txt"
    plain.write_text("new\n")
    sid = _saved(ws, [(hook, HOOK, 0o755), (plain, b"old\n", 0o644)],
                 {hook: None, plain: digest(b"new\n")})
    with pytest.raises(ToolPathError) as caught:
        rewind_saved(sid, "1", "code", force=False)
    assert ".git" in str(caught.value) and "--force restores it" in str(caught.value)
    assert not hook.exists() and plain.read_text() == "new\n"  # nothing was written
    rewind_saved(sid, "1", "code", force=True)
    assert hook.read_bytes() == HOOK and plain.read_text() == "old\n"


def test_control_a_plain_rewind_still_restores(tmp_path, home):
    ws = _repo(tmp_path)
    (ws / "src").mkdir()
    target = ws / "src" / "run.sh"
    sid = _saved(ws, [(target, b"echo hi\n", 0o755)], {target: None})
    lines = rewind_saved(sid, "1", "code", force=False)
    assert target.read_bytes() == b"echo hi\n" and os.stat(target).st_mode & 0o111
    assert any("restored src/run.sh" in line for line in lines)


# ---- /undo ---------------------------------------------------------------------------------

def _ctx(ws: Path) -> ToolContext:
    policy = SandboxPolicy(level=SandboxLevel.WORKSPACE_WRITE, workspace_root=ws,
                           allow_temp=False)
    return ToolContext(workspace_root=ws, cwd=ws, sandbox=policy)


def _done(ctx: ToolContext, path: Path, after: bytes | None) -> None:
    record(ctx.changes, apply(ctx, "write", [Planned(path=path, after=after)]))


@pytest.mark.parametrize("vector", ["delete-then-dir-to-hooks", "edit-then-dir-to-hooks",
                                    "create-then-file-link"])
def test_undo_never_follows_a_symlink(vector, tmp_path, home):
    ws = _repo(tmp_path)
    hooks = ws / ".git" / "hooks"
    (ws / "tools").mkdir()
    tool = ws / "tools" / "pre-commit"
    ctx = _ctx(ws)
    if vector == "delete-then-dir-to-hooks":  # undo of a delete writes the old bytes back
        tool.write_bytes(HOOK)
        tool.chmod(0o755)
        _done(ctx, tool, None)
    elif vector == "edit-then-dir-to-hooks":
        tool.write_bytes(HOOK)
        tool.chmod(0o755)
        _done(ctx, tool, b"#!/bin/sh\nexit 0\n")
        (hooks / "pre-commit").write_bytes(b"#!/bin/sh\nexit 0\n")  # so the undo would match
    else:  # undo of a create removes the file: through a link, the user's own hook
        _done(ctx, tool, b"x\n")
        (hooks / "pre-commit").write_bytes(b"x\n")
    os.rename(ws / "tools", ws / "tools.old")
    (ws / "tools").symlink_to(hooks, target_is_directory=True)
    before = sorted(p.name for p in hooks.iterdir())
    held = {p: p.read_bytes() for p in hooks.iterdir() if p.is_file()}
    with pytest.raises(ToolPathError, match="never follow symlinks"):
        undo_last(ctx.changes, force=True)
    assert sorted(p.name for p in hooks.iterdir()) == before
    assert {p: p.read_bytes() for p in hooks.iterdir() if p.is_file()} == held
    assert len(ctx.changes.changes) == 1  # the change stays recorded


def test_undo_of_protected_configuration_is_refused_in_one_line(tmp_path, home):
    ws = _repo(tmp_path)
    (ws / ".nyzhi").mkdir()
    ctx = _ctx(ws)
    _done(ctx, ws / ".nyzhi" / "config.toml", b"[agent]\n")  # an approved write
    with pytest.raises(ToolPathError) as caught:
        undo_last(ctx.changes)
    assert "\n" not in str(caught.value) and ".nyzhi" in str(caught.value)
    assert (ws / ".nyzhi" / "config.toml").read_bytes() == b"[agent]\n"


def test_control_undo_still_reverts_a_plain_file(tmp_path, home):
    ws = _repo(tmp_path)
    ctx = _ctx(ws)
    (ws / "a.txt").write_text("one\n")
    _done(ctx, ws / "a.txt", b"two\n")
    assert undo_last(ctx.changes) == [f"reverted {ws / 'a.txt'}"]
    assert (ws / "a.txt").read_text() == "one\n"
