"""Images for the model: recognising them, fitting them to each provider's limit, encoding them.

Images reach a thread three ways (``nyz run -i``, ``@path/shot.png`` in a prompt, ``read`` of an
image file) and leave in five encodings (each adapter's). What they share lives here:

* ``sniff`` tells PNG, JPEG, GIF and WebP from their first bytes (never from the file name);
* ``load_image`` reads a file into an ``ImagePart`` or raises ``ImageError`` saying why not;
* ``fitted`` downscales an image whose long edge or size is above its provider's documented
  limit (``LIMITS``). Pillow is imported only then, when an image is actually sent;
* ``base64_of`` is the encoding every wire format uses (a data URL for the OpenAI ones);
* ``dimensions`` reads width and height from the header alone (PNG, JPEG, GIF, WebP), so an
  image too big to decode (``MAX_PIXELS``, ``MAX_EDGE``) is refused before Pillow sees it. A
  47 KB PNG of 400 Mpx once ended the run at decoding, and every ``--continue`` after it:
  ``image_from_bytes`` (every way in) refuses it in one line, and a session that already
  holds one (``usable``, when it is loaded) goes on without it.

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
from nyzhi.config.textfile import read_regular
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
        data = read_regular(path)  # a FIFO given as an image must not hang the start
    except FileNotFoundError:
        raise ImageError(f"image not found: {name}") from None
    except IsADirectoryError:
        raise ImageError(f"{name} is a directory, not an image") from None
    except OSError as exc:
        raise ImageError(f"cannot read image {name}: {exc.strerror or exc}") from None
    return image_from_bytes(data, name)


def image_from_bytes(data: bytes, name: str) -> ImagePart:
    """``data`` as an image; ``ImageError`` naming it when it is not one, or one too big to
    decode (``check_dimensions``)."""
    media_type = sniff(data[:16])
    if media_type is None:
        raise ImageError(f"{name} is not a PNG, JPEG, GIF or WebP image")
    check_dimensions(data, media_type, name)
    return ImagePart(media_type, data)


# Decoding takes width x height x 4 bytes (RGBA) before any downscale: 50 Mpx is 200 MB, past
# any camera or screenshot a model needs, far from what a bomb asks for.
MAX_PIXELS = 50_000_000
MAX_EDGE = 30_000


def check_dimensions(data: bytes, media_type: str, name: str) -> tuple[int, int]:
    """(width, height) of the image, from its header; ``ImageError`` naming it when the header
    cannot be read or the image is past ``MAX_PIXELS`` / ``MAX_EDGE``."""
    size = dimensions(data, media_type)
    if size is None:
        raise ImageError(f"{name}: its {media_type.split('/')[1].upper()} header gives no "
                         "width and height; not attached")
    width, height = size
    if width * height > MAX_PIXELS or max(width, height) > MAX_EDGE:
        raise ImageError(f"{name} is {width} x {height} pixels ({width * height / 1e6:.0f} Mpx), "
                         f"past the {MAX_PIXELS // 1_000_000} Mpx nyz decodes; not attached")
    return size


def usable(image: ImagePart) -> bool:
    """Whether ``image`` passes ``check_dimensions``: a session saved before the check may
    hold one that does not, and is then resumed without it."""
    try:
        check_dimensions(image.data, image.media_type, "image")
    except ImageError:
        return False
    return True


def dimensions(data: bytes, media_type: str) -> tuple[int, int] | None:
    """(width, height) from the header of a PNG, JPEG, GIF or WebP; None when unreadable."""
    try:
        if media_type == "image/png":
            if data[12:16] != b"IHDR":
                return None
            return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
        if media_type == "image/gif":
            return int.from_bytes(data[6:8], "little"), int.from_bytes(data[8:10], "little")
        if media_type == "image/webp":
            return _webp_size(data)
        if media_type == "image/jpeg":
            return _jpeg_size(data)
    except IndexError:
        return None
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8 " and data[23:26] == b"\x9d\x01\x2a":
        return (int.from_bytes(data[26:28], "little") & 0x3FFF,
                int.from_bytes(data[28:30], "little") & 0x3FFF)
    if chunk == b"VP8L" and data[20:21] == b"\x2f":
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X" and len(data) >= 30:
        return int.from_bytes(data[24:27], "little") + 1, int.from_bytes(data[27:30], "little") + 1
    return None


# Start-of-frame markers (they carry the size): C0-CF but DHT (C4), JPG (C8) and DAC (CC).
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    i, n = 2, len(data)
    while i + 4 <= n:
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0x01, *range(0xD0, 0xD8)):  # no length
            i += 2
            continue
        length = int.from_bytes(data[i + 2:i + 4], "big")
        if marker in _SOF:
            if i + 9 > n:
                return None
            return int.from_bytes(data[i + 7:i + 9], "big"), int.from_bytes(data[i + 5:i + 7], "big")
        if marker in (0xD9, 0xDA) or length < 2:  # end, or scan data before any frame
            return None
        i += 2 + length
    return None


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
    check_dimensions(image.data, image.media_type, "an image of the thread")  # before decoding
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
