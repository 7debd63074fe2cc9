"""Images for the model: recognising them, fitting them to each provider's limit, encoding them.

Images reach a thread three ways (``nyz run -i``, ``@path/shot.png`` in a prompt, ``read`` of an
image file) and leave in five encodings (each adapter's). What they share lives here:

* ``sniff`` tells PNG, JPEG, GIF and WebP from their first bytes (never from the file name);
* ``load_image`` reads a file into an ``ImagePart`` or raises ``ImageError`` saying why not;
* ``fitted`` downscales an image whose long edge or size is above its provider's documented
  limit (``LIMITS``). Pillow is imported only then, when an image is actually sent;
* ``base64_of`` is the encoding every wire format uses (a data URL for the OpenAI ones).

Every step of a turn sends the whole thread again, so fitted and encoded images are cached by
content hash: a screenshot is decoded, scaled and encoded once, not once per step.
"""

from __future__ import annotations

import base64
import io
from collections import OrderedDict
from pathlib import Path

from nyzhi import records
from nyzhi.config.modes import ApiStyle
from nyzhi.provider.types import ImagePart

_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")


class ImageError(ValueError):
    """An image that cannot be sent: missing, not an image, or the model takes none."""


@records.frozen
class ImageLimit:
    """A provider's documented limit: the longest edge in pixels and the bytes per image."""

    max_edge: int
    max_bytes: int


_MB = 1024 * 1024
# Anthropic scales any image whose long edge is over 1568 px down before use and takes at most
# 5 MB per image; OpenAI fits high-detail images into 2048 x 2048; Gemini scales images to fit
# 3072 x 3072 and takes 20 MB of inline data per request. Ollama documents no limit: 2048 px
# (as OpenAI) keeps local models' prompt processing bounded.
LIMITS: dict[str, ImageLimit] = {
    ApiStyle.ANTHROPIC: ImageLimit(1568, 5 * _MB),
    ApiStyle.OPENAI: ImageLimit(2048, 20 * _MB),
    ApiStyle.OPENAI_RESPONSES: ImageLimit(2048, 20 * _MB),
    ApiStyle.GEMINI: ImageLimit(3072, 20 * _MB),
    ApiStyle.OLLAMA: ImageLimit(2048, 20 * _MB),
    ApiStyle.LLAMA_CPP: ImageLimit(2048, 20 * _MB),
}


def sniff(head: bytes) -> str | None:
    """The media type of an image from its first bytes (12 are enough), or None."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def looks_like_image_path(text: str) -> bool:
    """Whether a name ends like an image file (``@mention`` candidates; the bytes decide)."""
    return text.lower().endswith(_SUFFIXES)


def load_image(path: Path | str, shown: str | None = None) -> ImagePart:
    """The image at ``path``; ``ImageError`` naming it (as ``shown``) when it cannot be one."""
    name = shown or str(path)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise ImageError(f"image not found: {name}") from None
    except IsADirectoryError:
        raise ImageError(f"{name} is a directory, not an image") from None
    except OSError as exc:
        raise ImageError(f"cannot read image {name}: {exc.strerror or exc}") from None
    return image_from_bytes(data, name)


def image_from_bytes(data: bytes, name: str) -> ImagePart:
    """``data`` as an image; ``ImageError`` naming it when it is not one."""
    media_type = sniff(data[:16])
    if media_type is None:
        raise ImageError(f"{name} is not a PNG, JPEG, GIF or WebP image")
    return ImagePart(media_type, data)


def describe(image: ImagePart) -> str:
    """``PNG, 12 KB``: what the text beside an image says of it."""
    kind = image.media_type.split("/", 1)[1].upper()
    size = len(image.data)
    return f"{kind}, {size / 1024:.0f} KB" if size >= 1024 else f"{kind}, {size} bytes"


class _Cache(OrderedDict):
    """A small LRU of fitted/encoded images keyed by their bytes (a thread rarely has many).
    A ``bytes`` object computes its hash once and keeps it, so a lookup on every re-sent step
    costs a dict probe, where a SHA-256 of the content would cost a pass over every byte."""

    def __init__(self, size: int = 32) -> None:
        super().__init__()
        self.size = size

    def put(self, key: object, value: object) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.size:
            self.popitem(last=False)


_FITTED = _Cache()
_ENCODED = _Cache()


def fitted(image: ImagePart, api_style: str) -> ImagePart:
    """``image`` within ``api_style``'s limit: as it is when it fits, else downscaled (aspect
    kept) to the longest edge allowed, and re-encoded smaller until under the byte limit."""
    limit = LIMITS.get(api_style, LIMITS[ApiStyle.OPENAI])
    key = (image.data, limit)
    cached = _FITTED.get(key)
    if cached is None:
        cached = _downscale(image, limit)
        _FITTED.put(key, cached)
    return cached


def _downscale(image: ImagePart, limit: ImageLimit) -> ImagePart:
    from PIL import Image  # only when an image is sent (Pillow costs ~30 ms to import)

    with Image.open(io.BytesIO(image.data)) as img:
        width, height = img.size
        if max(width, height) <= limit.max_edge and len(image.data) <= limit.max_bytes:
            return image
        edge = limit.max_edge
        while True:
            scale = min(1.0, edge / max(width, height))
            size = (max(1, round(width * scale)), max(1, round(height * scale)))
            frame = img.convert("RGBA" if img.mode in ("RGBA", "LA", "P") else "RGB")
            small = frame.resize(size, Image.LANCZOS)
            out = io.BytesIO()
            if image.media_type == "image/jpeg" or len(image.data) > limit.max_bytes:
                small.convert("RGB").save(out, "JPEG", quality=85)
                media_type = "image/jpeg"
            else:
                small.save(out, "PNG", optimize=True)
                media_type = "image/png"
            data = out.getvalue()
            if len(data) <= limit.max_bytes or edge <= 256:
                return ImagePart(media_type, data)
            edge = int(edge * 0.75)


def base64_of(image: ImagePart) -> str:
    """The image's bytes in base64 (cached: the thread is re-sent every step)."""
    key = image.data
    cached = _ENCODED.get(key)
    if cached is None:
        cached = base64.b64encode(image.data).decode("ascii")
        _ENCODED.put(key, cached)
    return cached


def data_url(image: ImagePart, api_style: str) -> str:
    """``image`` fitted to ``api_style`` as a ``data:`` URL (the OpenAI formats take these)."""
    media_type, data = encoded(image, api_style)
    return f"data:{media_type};base64,{data}"


def encoded(image: ImagePart, api_style: str) -> tuple[str, str]:
    """(media type, base64) of ``image`` fitted to ``api_style``."""
    fit = fitted(image, api_style)
    return fit.media_type, base64_of(fit)
