"""The checkpoint store on real files: blobs checked against their names, pruning by age and
size, and a restore that never writes outside the workspace (a directory or a file swapped
for a symlink since the checkpoint, a journal naming a path outside it)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from nyzhi.core.runtime.checkpoints import CheckpointError, CheckpointStore
from nyzhi.core.runtime.checkpoints.actions import rewind_saved
from nyzhi.core.runtime.checkpoints.store import digest
from nyzhi.core.runtime.sessions import SessionStore
from nyzhi.provider.types import Message


def test_a_damaged_blob_is_refused_not_restored(tmp_path):
    store = CheckpointStore(tmp_path / "cp")
    name, written = store.blobs.put(b"the code\n")
    assert written is not None and store.blobs.get(name) == b"the code\n"
    assert store.blobs.put(b"the code\n")[1] is None  # stored once
    written.write_bytes(b"the c0de\n")
    with pytest.raises(CheckpointError, match="damaged"):
        store.blobs.get(name)
    with pytest.raises(CheckpointError, match="not a SHA-256"):
        store.blobs.get("../../etc/passwd")


def _journal(store: CheckpointStore, session: str, blob: bytes, age_days: float) -> str:
    journal = store.journal(session)
    name = journal.put_blob(blob)
    journal.append({"k": "point", "seq": 1, "kind": "prompt", "label": "p"})
    journal.append({"k": "before", "seq": 1, "path": "/w/a", "blob": name})
    journal.close()
    old = time.time() - age_days * 86400
    os.utime(journal.path, (old, old))
    os.utime(store.blobs.path(name), (old, old))
    return name


def test_prune_drops_old_journals_then_the_oldest_over_the_size_limit(tmp_path):
    store = CheckpointStore(tmp_path / "cp")
    ancient = _journal(store, "ancient", b"a" * 100, age_days=40)
    older = _journal(store, "older", b"b" * 100, age_days=5)
    newer = _journal(store, "newer", b"c" * 100, age_days=1)
    running = _journal(store, "running", b"d" * 100, age_days=50)
    stray = store.blobs.put(b"named by no journal")[0]
    os.utime(store.blobs.path(stray), (0, 0))
    dropped = store.prune(keep="running", max_bytes=250)
    assert dropped == ["ancient", "older"]  # too old, then the oldest until 200 bytes fit
    for name in (ancient, older, stray):
        assert not store.blobs.path(name).exists()
    for name in (newer, running):
        assert store.blobs.get(name)
    assert store.journal("running").load().befores[0].blob == running


def _saved_session(home: Path, ws: Path, befores: list[tuple[str, bytes | None]],
                   after: dict[str, str | None]) -> str:
    """A saved session whose journal says the files of ``befores`` were changed by nyz in
    its first turn (what they held before) and hold ``after`` now."""
    writer = SessionStore().create(cwd=ws, workspace_root=ws, sync="never")
    writer.append_message(Message("user", "p"))  # its first turn (an empty one is not kept)
    writer.close()
    store = CheckpointStore()
    journal = store.journal(writer.id)
    journal.append({"k": "point", "seq": 1, "kind": "prompt", "label": "p", "log": None})
    for path, data in befores:
        blob = journal.put_blob(data) if data is not None else None
        journal.append({"k": "before", "seq": 1, "path": path, "blob": blob})
    for path, fp in after.items():
        journal.append({"k": "after", "path": path, "blob": fp})
    journal.close()
    return writer.id


@pytest.mark.parametrize("vector", ["file-symlink", "dir-symlink", "path-outside"])
def test_a_restore_never_writes_outside_the_workspace(vector, tmp_path, home):
    ws = tmp_path / "ws"
    outside = tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    (outside / "a.txt").write_text("not yours\n")
    if vector == "file-symlink":  # nyz wrote ws/a.txt; it is now a link to a file outside
        target = ws / "a.txt"
        target.symlink_to(outside / "a.txt")
    elif vector == "dir-symlink":  # nyz wrote ws/sub/a.txt; ws/sub is now a link outside
        (ws / "sub").symlink_to(outside)
        target = ws / "sub" / "a.txt"
    else:  # a journal naming a path outside the workspace
        target = outside / "a.txt"
    sid = _saved_session(home, ws, [(str(target), b"old\n")],
                         {str(target): digest(b"not yours\n")})
    with pytest.raises(Exception, match="sandbox|symlink|outside the workspace") as caught:
        rewind_saved(sid, "1", "code", force=True)
    assert not isinstance(caught.value, AssertionError)
    assert (outside / "a.txt").read_text() == "not yours\n"
