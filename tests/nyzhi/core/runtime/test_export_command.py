"""``/export`` writes through the one atomic write (``config.fsutil.atomic_write``: fsynced,
renamed, the directory fsynced): the thread lands whole, an existing file is replaced with
its mode kept, a symlink at the target is refused (neither it nor the file it points to
changes), and a file that cannot be written is one line naming it."""

from __future__ import annotations

import os
import stat

from nyzhi.core.runtime.commands.builtin import export_thread
from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime
from nyzhi.testing.fake_llm import open_fake_llm, reply


async def test_export_replaces_the_file_whole_or_says_why_not(workspace, home, configure):
    async with open_fake_llm(script=[reply("the answer")]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            await (await rt.submit("the question")).wait()
            target = workspace / "thread.md"
            target.write_text("old")
            os.chmod(target, 0o640)
            kind, line = export_thread(rt, workspace, "thread.md")
            assert (kind, line) == ("notice", f"exported 2 message(s) to {target}")
            text = target.read_text()
            assert "## user\n\nthe question" in text and "## assistant\n\nthe answer" in text
            assert stat.S_IMODE(target.stat().st_mode) == 0o640  # the mode it had
            assert [p.name for p in workspace.iterdir() if p.name.endswith(".tmp")] == []
            elsewhere = workspace / "elsewhere.md"
            elsewhere.write_text("theirs")
            (workspace / "link.md").symlink_to(elsewhere)
            kind, line = export_thread(rt, workspace, "link.md")
            assert kind == "error" and "\n" not in line and "symbolic link" in line, line
            assert line.startswith(f"could not write the export {workspace / 'link.md'}: ")
            assert elsewhere.read_text() == "theirs" and (workspace / "link.md").is_symlink()
            blocked = workspace / "blocked"
            blocked.write_text("a file, not a directory")
            kind, line = export_thread(rt, workspace, "blocked/thread.md")
    assert kind == "error" and "\n" not in line
    assert line.startswith(f"could not write the export {blocked / 'thread.md'}: ")
