"""Every other writer on a full and on a read-only disk (a real tmpfs): ``nyz config set``,
``nyz login``, remembered approvals, large-output offloading and the compaction archive.
Each names its file and the reason, and loses nothing: the old file keeps what it held."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import trio

from nyzhi.oserror import StorageError
from nyzhi.testing import machine_faults as mf
from nyzhi.testing.cli import NYZ, nyz_env

pytestmark = pytest.mark.skipif(mf.skip_reason() is not None, reason=mf.skip_reason() or "")

REASONS = {"full": "no space left on device", "read-only": "read-only file system"}


@pytest.fixture(params=["full", "read-only"])
def fault(request, tmp_path):
    """``(mount point, break_it)``: a tmpfs that ``break_it()`` fills up or makes read-only;
    ``fault.reason`` is what the kernel will say."""
    with mf.small_tmpfs(tmp_path / "disk") as root:

        def break_it() -> None:
            if request.param == "full":
                mf.fill(root)
            else:
                mf.remount(root, read_only=True)

        break_it.reason = REASONS[request.param]  # type: ignore[attr-defined]
        yield root, break_it


def env_for(home: Path, **xdg: str) -> dict[str, str]:
    return {**nyz_env(home), **xdg}


async def test_config_set(fault, home, tmp_path):
    root, break_it = fault
    config = root / "nyzhi" / "config.toml"
    config.parent.mkdir()
    config.write_text("[agent]\nmax_steps = 7\n")
    break_it()
    proc = await trio.run_process(
        [*NYZ, "config", "set", "agent.max_steps", "9"], cwd=tmp_path,
        env=env_for(home, XDG_CONFIG_HOME=str(root)),
        capture_stdout=True, capture_stderr=True, check=False,
    )
    err = proc.stderr.decode()
    assert proc.returncode == 1
    assert err.startswith(f"nyz: could not write the config file {config}: {break_it.reason}")
    assert "Traceback" not in err
    assert config.read_text() == "[agent]\nmax_steps = 7\n"
    assert sorted(os.listdir(config.parent)) == ["config.toml"]  # no temp file left


async def test_login_stores_nothing_and_says_where(fault, home, tmp_path):
    root, break_it = fault
    auth = root / "nyzhi" / "auth.json"
    auth.parent.mkdir()
    auth.write_text('{"version": 1, "providers": {}}\n')
    break_it()
    proc = await trio.run_process(
        [*NYZ, "login", "openai", "--api-key"], cwd=tmp_path, stdin=b"sk-secret-123\n",
        env=env_for(home, XDG_DATA_HOME=str(root)),
        capture_stdout=True, capture_stderr=True, check=False,
    )
    err = proc.stderr.decode()
    assert proc.returncode == 1, err
    assert f"could not write the credentials file {auth}: {break_it.reason}" in err
    assert "API key environment variable" in err and "sk-secret-123" not in err
    assert auth.read_text() == '{"version": 1, "providers": {}}\n'


def test_remembered_approval(fault, home, monkeypatch):
    from nyzhi.config.approvals import remember_tool, remembered_tools

    root, break_it = fault
    monkeypatch.setenv("XDG_STATE_HOME", str(root))
    remember_tool("/ws", "bash")
    break_it()
    with pytest.raises(StorageError) as caught:
        remember_tool("/ws", "write")
    path = root / "nyzhi" / "approvals.json"
    assert str(caught.value).startswith(
        f"could not remember the approval in {path}: {break_it.reason}"
    )
    assert "XDG_STATE_HOME" in str(caught.value)
    assert remembered_tools("/ws") == {"bash"}


def test_large_output_offloading_keeps_head_and_tail_and_says_why(fault, monkeypatch):
    from nyzhi.tools.base import ToolContext, ToolResult
    from nyzhi.tools.output import cap_output, results_dir

    root, break_it = fault
    monkeypatch.setenv("XDG_STATE_HOME", str(root))  # the offload files are run-time state
    results_dir(root).mkdir(parents=True)
    break_it()
    text = "\n".join(f"line {i}" for i in range(2000))
    capped = cap_output(ToolResult(text), ToolContext(workspace_root=root, cwd=root), "bash")
    assert f"could not save the full text to {results_dir(root)}/" in capped.output
    assert break_it.reason in capped.output
    assert "line 0" in capped.output and "line 1999" in capped.output
    assert capped.metadata["truncated"] is True
    assert [p for p in results_dir(root).iterdir()] == []


def test_compaction_archive(fault):
    from nyzhi.core.loop.compaction import archive_history
    from nyzhi.provider.types import Message

    root, break_it = fault
    history = root / "history"
    history.mkdir()
    break_it()
    thread = [Message("user", "x" * 100_000), Message("assistant", "ok")]
    with pytest.raises(StorageError) as caught:
        archive_history(thread, history, "s1")
    message = str(caught.value)
    assert message.startswith(f"could not write the compaction archive {history / 's1-1.jsonl'}")
    assert break_it.reason in message and "the thread was not compacted" in message
    assert list(history.iterdir()) == []  # no partial archive left
