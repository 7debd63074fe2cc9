"""Images too big to decode are refused from their header, before Pillow sees them, in every
format (PNG, JPEG, GIF, WebP); the header parser agrees with Pillow on real files; a session
that already holds such an image resumes without it. ``nyz run -i``, the ``read`` tool and
``--continue`` are driven for real (a subprocess against the fake LLM)."""

from __future__ import annotations

import io
import struct
import zlib

import pytest
import trio
from PIL import Image

from nyzhi.provider.images import (
    MAX_PIXELS,
    ImageError,
    dimensions,
    encoded,
    image_from_bytes,
    sniff,
)
from nyzhi.provider.types import ImagePart
from nyzhi.testing.cli import run_nyz
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call


def png_header(width: int, height: int) -> bytes:
    """A PNG of ``width`` x ``height``: header, a small IDAT of zeros, end (a bomb: 47 KB of
    deflate can claim hundreds of megapixels; Pillow refuses or tries from the header)."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return (struct.pack(">I", len(body)) + kind + body
                + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
            + chunk(b"IDAT", zlib.compress(b"\0" * 200_000)) + chunk(b"IEND", b""))


def jpeg_header(width: int, height: int) -> bytes:
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\0\x01\x01\0\0\x01\0\x01\0\0"
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + app0 + sof + b"\xff\xd9"


def gif_header(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\0\0\0;"


def webp_vp8x(width: int, height: int) -> bytes:
    body = b"VP8X" + struct.pack("<I", 10) + b"\0\0\0\0" + (width - 1).to_bytes(3, "little") \
        + (height - 1).to_bytes(3, "little")
    return b"RIFF" + struct.pack("<I", len(body) + 4) + b"WEBP" + body


BOMBS = {
    "png-400mpx": png_header(20_000, 20_000),
    "png-long-edge": png_header(40_000, 10),
    "jpeg": jpeg_header(30_000, 30_000),
    "gif": gif_header(65_535, 65_535),
    "webp-vp8x": webp_vp8x(16_000_000, 16_000),
    "png-no-ihdr": b"\x89PNG\r\n\x1a\n" + b"\0" * 40,
}


@pytest.mark.parametrize("name", list(BOMBS))
def test_refused_from_the_header(name: str) -> None:
    with pytest.raises(ImageError) as info:
        image_from_bytes(BOMBS[name], "bomb.img")
    [line] = str(info.value).splitlines()
    assert "bomb.img" in line and "not attached" in line


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "GIF", "WEBP"])
@pytest.mark.parametrize("size", [(1, 1), (37, 501), (1920, 1080)])
def test_header_size_agrees_with_pillow(fmt: str, size: tuple[int, int]) -> None:
    out = io.BytesIO()
    Image.new("RGB", size, (10, 20, 30)).save(out, fmt, **({"lossless": True}
                                                          if fmt == "WEBP" else {}))
    data = out.getvalue()
    assert dimensions(data, sniff(data[:16])) == size
    image_from_bytes(data, "ok")  # the control: a real image is attached


def test_webp_lossy_and_progressive_jpeg() -> None:
    for fmt, kw in (("WEBP", {"quality": 50}), ("JPEG", {"progressive": True})):
        out = io.BytesIO()
        Image.new("RGB", (640, 480)).save(out, fmt, **kw)
        data = out.getvalue()
        assert dimensions(data, sniff(data[:16])) == (640, 480)


def test_an_image_in_the_thread_is_checked_before_decoding() -> None:
    with pytest.raises(ImageError):
        encoded(ImagePart("image/png", BOMBS["png-400mpx"]), "anthropic")
    assert 20_000 * 20_000 > MAX_PIXELS


async def test_nyz_run_image_bomb_is_one_line_and_nothing_sent(workspace, home, configure):
    (workspace / "bomb.png").write_bytes(BOMBS["png-400mpx"])
    async with open_fake_llm(None, script=[reply("never")]) as server:
        configure(workspace, server.url_for("anthropic"), api_style="anthropic")
        with trio.fail_after(60):
            proc = await run_nyz(workspace, home, "run", "-i", "bomb.png", "look")
        assert server.requests == []
    err = proc.stderr.decode()
    assert proc.returncode != 0 and "Traceback" not in err
    [line] = [ln for ln in err.splitlines() if "bomb.png" in ln]
    assert "20000 x 20000 pixels" in line


async def test_read_of_a_bomb_is_a_tool_error_and_the_session_resumes(
        workspace, home, configure):
    (workspace / "bomb.png").write_bytes(BOMBS["png-400mpx"])
    script = [reply(tool_calls=[tool_call("read", {"file_path": "bomb.png"})]),
              reply("could not see it"), reply("resumed fine")]
    async with open_fake_llm(None, script=script) as server:
        configure(workspace, server.url_for("anthropic"), api_style="anthropic")
        with trio.fail_after(60):
            proc = await run_nyz(workspace, home, "run", "look at bomb.png")
            again = await run_nyz(workspace, home, "run", "--continue", "again")
        tool_text = str(server.requests[1].json)
    assert proc.returncode == 0, proc.stderr.decode()
    assert "past the 50 Mpx nyz decodes" in tool_text
    assert again.returncode == 0 and again.stdout.decode().strip() == "resumed fine"


async def test_a_session_already_holding_a_bomb_resumes_without_it(
        workspace, home, configure):
    small = io.BytesIO()
    Image.new("RGB", (8, 8)).save(small, "PNG")
    (workspace / "small.png").write_bytes(small.getvalue())
    async with open_fake_llm(None, script=[reply("saw it"), reply("resumed fine")]) as server:
        configure(workspace, server.url_for("anthropic"), api_style="anthropic")
        with trio.fail_after(60):
            first = await run_nyz(workspace, home, "run", "-i", "small.png", "look")
            assert first.returncode == 0, first.stderr.decode()
            # as a version without the check saved it: the stored image is a bomb
            [stored] = [p for p in (home / ".local" / "share" / "nyzhi" / "sessions").rglob("*")
                        if p.is_file() and len(p.name) == 64]
            stored.write_bytes(BOMBS["png-400mpx"])
            again = await run_nyz(workspace, home, "run", "--continue", "again")
        assert again.returncode == 0, again.stderr.decode()
        assert again.stdout.decode().strip() == "resumed fine"
        assert "image" not in str(server.requests[1].json["messages"][0]["content"]).lower() \
            or "base64" not in str(server.requests[1].json["messages"][0])
