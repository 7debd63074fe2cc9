"""The images a user gives with a prompt: ``nyz run -i PATH`` and ``@path/shot.png`` mentions.

Every front end submits through ``Runtime.submit``, which asks ``prompt_images`` here, so an
``@image`` mention means the same in the console, the line chat and ``nyz run``. A mention is
an ``@`` at the start of a word followed by a path ending like an image file; it is attached
when that file exists and is an image (its text stays in the prompt, so the model also knows
the name). ``check_vision`` refuses, before any request, to send images to a model the table
says cannot see them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from nyzhi.provider.images import ImageError, image_from_bytes, load_image, looks_like_image_path
from nyzhi.provider.models import model_info
from nyzhi.provider.types import ImagePart

_MENTION = re.compile(r"(?<!\S)@(\S+)")
_TRAILING = ".,;:!?)]}'\""


def _resolve(raw: str, cwd: Path) -> Path:
    path = Path(os.path.expanduser(raw))
    return path if path.is_absolute() else cwd / path


def mentioned_paths(text: str) -> list[str]:
    """The ``@path`` mentions of ``text`` that name image files, in order, each once."""
    found: list[str] = []
    for match in _MENTION.finditer(text):
        raw = match.group(1).rstrip(_TRAILING)
        if looks_like_image_path(raw) and raw not in found:
            found.append(raw)
    return found


def prompt_images(text: str, cwd: Path, given: Iterable[ImagePart | str | Path] = (),
                  workspace_root: Path | None = None) -> tuple[ImagePart, ...]:
    """``given`` (images, or paths as ``-i`` gives them) then the images ``text`` mentions
    that exist; ``ImageError`` naming a given path that is no image. A mention of a missing
    file is left as text (an ``@name.png`` can be something else).

    A mention is read like every prompt file (``config.prompt_files``): one resolving outside
    the workspace and nyz's config folders (a planted symlink), or into /proc, /sys or /dev,
    is left as text. A ``-i`` path is the person's explicit choice and is read as given."""
    from nyzhi.config.prompt_files import PromptFileRefused, prompt_roots, read_prompt_bytes

    images: list[ImagePart] = []
    for item in given:
        images.append(item if isinstance(item, ImagePart) else load_image(_resolve(str(item), cwd), str(item)))
    roots = prompt_roots(workspace_root if workspace_root is not None else cwd)
    for raw in mentioned_paths(text):
        path = _resolve(raw, cwd)
        if not path.is_file():
            continue
        try:
            data = read_prompt_bytes(path, roots)
        except PromptFileRefused:
            continue
        except OSError as exc:
            raise ImageError(f"cannot read image {raw}: {exc.strerror or exc}") from None
        images.append(image_from_bytes(data, raw))
    seen: set[str] = set()
    unique = []
    for image in images:
        if image.sha256 not in seen:
            seen.add(image.sha256)
            unique.append(image)
    return tuple(unique)


def takes_images(model: str) -> bool:
    """Whether ``model`` can be sent images: the table's word, or yes for a model it does not
    know (its server judges)."""
    info = model_info(model)
    return info.vision or not info.known


def check_vision(model: str, images: tuple[ImagePart, ...]) -> None:
    if images and not takes_images(model):
        count = f"{len(images)} image{'s' if len(images) != 1 else ''}"
        raise ImageError(
            f"{model} does not take images, so the {count} given cannot be sent: choose a model "
            "with vision (--model) or leave the image out"
        )
