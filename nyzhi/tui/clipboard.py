"""Ctrl-V: an image on the clipboard, read with the desktop's own tool (``wl-paste`` on
Wayland, ``xclip`` on X11), for the prompt as an attachment.

Text pastes need none of this (the terminal types them); an image never reaches a terminal,
so it is asked for. Where neither tool is installed the message says which to install.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping

CLIP_LIMIT = 32 * 1024 * 1024  # bytes of one pasted image read at most
CLIP_TIMEOUT_S = 10  # a clipboard owner that never answers must not hang the paste

WAYLAND = ["wl-paste", "--no-newline", "--type", "image/png"]
X11 = ["xclip", "-selection", "clipboard", "-target", "image/png", "-out"]


class ClipboardError(Exception):
    """No image could be read; the message says why (or what to install)."""


def paste_command(env: Mapping[str, str] | None = None,
                  which: Callable[[str], str | None] = shutil.which) -> list[str]:
    """The command that prints the clipboard's PNG: ``wl-paste`` in a Wayland session,
    else ``xclip``, else whichever of them exists."""
    env = os.environ if env is None else env
    have_wl, have_x = which("wl-paste") is not None, which("xclip") is not None
    if have_wl and (env.get("WAYLAND_DISPLAY") or not have_x):
        return WAYLAND
    if have_x:
        return X11
    raise ClipboardError("Ctrl-V pastes an image with wl-paste or xclip, and neither is "
                         "installed: install wl-clipboard (Wayland) or xclip (X11), e.g. "
                         "`sudo apt install wl-clipboard xclip`")


async def paste_image() -> bytes:
    """The clipboard's image as PNG bytes; ``ClipboardError`` when there is none."""
    import subprocess

    import trio

    argv = paste_command()
    try:
        with trio.fail_after(CLIP_TIMEOUT_S):
            done = await trio.run_process(argv, capture_stdout=True, capture_stderr=True,
                                          stdin=subprocess.DEVNULL, check=False)
    except trio.TooSlowError:
        raise ClipboardError(f"{argv[0]} did not answer in {CLIP_TIMEOUT_S} s") from None
    except OSError as exc:
        raise ClipboardError(f"cannot run {argv[0]}: {exc}") from None
    if done.returncode != 0 or not done.stdout:
        why = done.stderr.decode(errors="replace").strip().splitlines()
        raise ClipboardError("no image on the clipboard"
                             + (f" ({argv[0]}: {why[-1][:120]})" if why else ""))
    if len(done.stdout) > CLIP_LIMIT:
        raise ClipboardError(f"the clipboard's image is over {CLIP_LIMIT // 2**20} MiB")
    return done.stdout
