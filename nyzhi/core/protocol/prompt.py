"""What a front end puts with a prompt before it submits it: ``@path`` files read into the
text, and an image pasted as bytes.

A prompt's ``@path`` is read like every prompt file (``config.prompt_files``): only from the
workspace and nyz's config folders, never /proc, /sys or /dev, at most ``ATTACH_LIMIT`` bytes
a file; a refused one is named in the prompt instead. An ``@image`` is left in the text for
``Runtime.submit``, which sends it as an image. Importing this module loads nothing of the
readers: each function imports what it uses.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nyzhi.provider.images import ImageError as ImageError

ATTACH_LIMIT = 100_000  # bytes of one @file put into a prompt
_ATTACH = re.compile(r"(?<!\S)@(\S+)")


async def read_attachments(text: str, cwd: Path) -> str:
    """``attach_files`` with its reads in a worker thread, as the file tools read: a large
    file or a slow disk must not freeze a front end's event loop (a screen, the other
    agents' streams)."""
    if "@" not in text:
        return text
    from nyzhi.tools.offload import run_blocking

    return await run_blocking(attach_files, text, cwd)


def attach_files(text: str, cwd: Path) -> str:
    """The prompt with each ``@path`` that exists followed by the file's contents (or the
    directory's listing); other ``@words`` (e-mail addresses, handles) are left alone.
    Blocking: an event loop calls it through ``read_attachments``."""
    from nyzhi.config.prompt_files import prompt_roots, read_prompt_bytes
    from nyzhi.config.workspace import find_root
    from nyzhi.provider.images import sniff

    roots = prompt_roots(find_root(cwd))
    blocks = []
    for m in _ATTACH.finditer(text):
        name = m.group(1)
        if not (cwd / name).exists():
            name = name.rstrip(".,;:!?)'\"")  # "see @notes.md." ends a sentence
        path = (cwd / name).resolve()
        if path.is_file():
            try:
                raw = read_prompt_bytes(cwd / name, roots, ATTACH_LIMIT)
            except OSError as exc:  # refused (or unreadable): the reason, not the file
                blocks.append(f'<file path="{name}" not-attached="{exc}"/>')
                continue
            if sniff(raw[:16]):
                continue  # an image goes to the model as an image (Runtime.submit)
            data = raw.decode("utf-8", errors="replace")
            blocks.append(f'<file path="{name}">\n{data}\n</file>')
        elif path.is_dir():
            names = sorted(p.name + ("/" if p.is_dir() else "") for p in path.iterdir())
            blocks.append(f'<directory path="{name}">\n' + "\n".join(names[:500])
                          + "\n</directory>")
    return text if not blocks else text + "\n\n" + "\n\n".join(blocks)


def pasted_image(data: bytes, name: str) -> Any:
    """``data`` (a clipboard's image, called ``name``) as the image part a prompt sends with
    its text; ``ImageError`` (a ``ValueError``) naming it when it is not a PNG, JPEG, GIF or
    WebP image, or one too big to decode."""
    from nyzhi.provider.images import image_from_bytes

    return image_from_bytes(data, name)


def __getattr__(name: str) -> Any:
    # ``ImageError``, what ``pasted_image`` raises, loaded with the image readers
    if name == "ImageError":
        from nyzhi.provider.images import ImageError

        return ImageError
    raise AttributeError(f"module 'nyzhi.core.protocol.prompt' has no attribute {name!r}")


__all__ = ["ATTACH_LIMIT", "ImageError", "attach_files", "pasted_image", "read_attachments"]
