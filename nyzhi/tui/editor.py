"""Ctrl-G and ``/editor``: the prompt written in the person's own editor (``$VISUAL``, then
``$EDITOR``), as Claude Code's and Codex's consoles offer.

The draft goes into a file of a private temporary directory (0700, the file 0600: a prompt
may hold what nobody else on the machine should read), the console's screen is handed to the
editor and taken back, and what was saved is returned; the directory is removed either way.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from pathlib import Path

DRAFT_LIMIT = 1_000_000  # bytes of a saved draft read back (a prompt, not a data file)


class EditorError(Exception):
    """No editor could be run; the message says what to set."""


def editor_command(env: Mapping[str, str]) -> list[str]:
    """The editor's argv from ``$VISUAL`` or ``$EDITOR`` (which may carry flags:
    ``code --wait``), else ``vi`` where it exists."""
    for name in ("VISUAL", "EDITOR"):
        value = env.get(name, "").strip()
        if value:
            try:
                argv = shlex.split(value)
            except ValueError as exc:
                raise EditorError(f"${name}: cannot parse {value!r}: {exc}") from None
            if argv:
                return argv
    if shutil.which("vi"):
        return ["vi"]
    raise EditorError("no editor: set $VISUAL or $EDITOR (for example EDITOR=nano)")


def edit_text(draft: str, paused: Callable[[], AbstractContextManager[object]],
              env: Mapping[str, str] | None = None) -> str:
    """Run the editor on ``draft`` with the screen handed over by ``paused`` (urwid's
    ``MainLoop.paused``); the saved text, without the final newline editors add. Blocking on
    purpose: the terminal belongs to the editor until it exits."""
    env = os.environ if env is None else env
    argv = editor_command(env)
    with tempfile.TemporaryDirectory(prefix="nyz-prompt-") as tmp:
        os.chmod(tmp, 0o700)
        path = Path(tmp) / "prompt.md"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(draft)
        with paused():
            try:
                done = subprocess.run([*argv, str(path)], check=False)
            except OSError as exc:
                raise EditorError(f"cannot run the editor {argv[0]!r}: {exc}") from None
        if done.returncode != 0:
            raise EditorError(f"the editor {argv[0]!r} exited with status {done.returncode}; "
                              "nothing sent")
        with path.open("rb") as f:
            saved = f.read(DRAFT_LIMIT + 1)
    if len(saved) > DRAFT_LIMIT:
        raise EditorError(f"the saved prompt is over {DRAFT_LIMIT} bytes; nothing sent")
    return saved.decode("utf-8", errors="replace").rstrip("\n")
