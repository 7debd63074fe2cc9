"""Images end to end: ``nyz run -i``, ``@shot.png`` mentions and ``read`` of an image, against
the scripted fake LLM in all five wire formats; each provider's size limit; models without
vision; images stored once beside the session and sent again after a resume."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from nyzhi.testing.cli import json_lines, read_until, run_nyz, start_chat
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call

# wire format -> a model with vision, and the longest edge its provider takes
MODELS = {
    "openai": ("gpt-4.1", 2048),
    "openai-responses": ("gpt-5", 2048),
    "anthropic": ("claude-sonnet-4-5", 1568),
    "gemini": ("gemini-2.5-flash", 3072),
    "ollama": ("llama3.2-vision", 2048),
}


def png(path: Path, size: tuple[int, int], colour: str = "red") -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, colour).save(out, "PNG")
    path.write_bytes(out.getvalue())
    return out.getvalue()


def images_in(wire: str, body: dict[str, Any]) -> list[tuple[str, str, bytes]]:
    """Every image a request carries, as (where, media type, bytes), in order. ``where`` is
    "user" for a prompt's image and "tool" for one inside a tool result (Anthropic only)."""
    found: list[tuple[str, str, bytes]] = []
    if wire == "anthropic":
        for msg in body["messages"]:
            for block in msg["content"] if isinstance(msg["content"], list) else ():
                inner = block.get("content") if block.get("type") == "tool_result" else None
                for part, where in ([(block, "user")] + [(b, "tool") for b in inner or ()
                                                          if isinstance(inner, list)]):
                    if part.get("type") == "image":
                        src = part["source"]
                        assert src["type"] == "base64"
                        found.append((where, src["media_type"], base64.b64decode(src["data"])))
    elif wire == "gemini":
        for content in body["contents"]:
            for part in content["parts"]:
                if "inlineData" in part:
                    data = part["inlineData"]
                    found.append(("user", data["mimeType"], base64.b64decode(data["data"])))
    elif wire == "ollama":
        for msg in body["messages"]:
            for data in msg.get("images") or ():
                found.append(("user", "", base64.b64decode(data)))
    else:
        kind = "image_url" if wire == "openai" else "input_image"
        for msg in body.get("messages") or body.get("input"):
            for part in msg.get("content") if isinstance(msg.get("content"), list) else ():
                if part.get("type") == kind:
                    url = part["image_url"]["url"] if wire == "openai" else part["image_url"]
                    head, data = url.split(",", 1)
                    found.append(("user", head[5:].split(";")[0], base64.b64decode(data)))
    return found


def size_of(data: bytes) -> tuple[int, int]:
    with Image.open(io.BytesIO(data)) as img:
        return img.size


@pytest.mark.parametrize("wire", list(MODELS))
async def test_image_flag_and_mention_downscaled_stored_once_and_resumed(
        wire, workspace, home, configure):
    model, edge = MODELS[wire]
    big = png(workspace / "big.png", (4000, 1000), "blue")
    small = png(workspace / "shot.png", (64, 48))
    async with open_fake_llm(script=[reply("a blue bar and a red box"), reply("still")]) as server:
        configure(workspace, server.url_for(wire), api_style=wire)
        first = await run_nyz(workspace, home, "run", "--model", model, "-i", "big.png",
                              "--output-format", "json", "what is in these and @shot.png?")
        assert first.returncode == 0, first.stderr.decode()
        again = await run_nyz(workspace, home, "run", "--continue", "--model", model, "and now?")
        assert again.returncode == 0, again.stderr.decode()
    sent = images_in(wire, server.requests[0].json)
    assert [w for w, _, _ in sent] == ["user", "user"]
    (_, _, scaled), (_, media, original) = sent
    assert max(size_of(scaled)) == edge and size_of(scaled)[0] == 4 * size_of(scaled)[1]
    assert original == small and media in ("image/png", "")  # within limits: as it was
    assert max(size_of(big)) > edge  # precondition: the big image had to be scaled
    assert len(scaled) < len(big) or max(size_of(big)) > edge
    # the session keeps each image once, by hash, beside a log that holds no image bytes
    session_id = json_lines(first.stdout)[-1]["session_id"]
    sessions = home / ".local" / "share" / "nyzhi" / "sessions"
    stored = sorted(p.name for p in (sessions / f"{session_id}.images").iterdir())
    assert len(stored) == 2 and all(len(name) == 64 for name in stored)
    log = (sessions / f"{session_id}.jsonl").read_text()
    assert base64.b64encode(small).decode()[:40] not in log and stored[0] in log
    # resumed: the first prompt's images are read back from disk and sent again
    assert images_in(wire, server.requests[1].json) == sent


@pytest.mark.parametrize("wire", list(MODELS))
async def test_read_of_a_png_reaches_the_model(wire, workspace, home, configure):
    model, _edge = MODELS[wire]
    picture = png(workspace / "diagram.png", (32, 32), "green")
    script = [reply(tool_calls=[tool_call("read", {"file_path": "diagram.png"})]),
              reply("a green square")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for(wire), api_style=wire)
        proc = await run_nyz(workspace, home, "run", "--model", model, "look at diagram.png")
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.decode().strip() == "a green square"
    body = server.requests[1].json
    [(where, _media, data)] = images_in(wire, body)
    assert data == picture
    if wire == "anthropic":  # inside the tool result itself
        assert where == "tool"
    elif wire == "gemini":  # in the same user turn as the function response, after it
        turn = next(c for c in body["contents"] if any("functionResponse" in p for p in c["parts"]))
        kinds = [next(iter(p)) for p in turn["parts"]]
        assert kinds == ["functionResponse", "inlineData"]
    else:  # a user message right after the tool results
        items = body.get("messages") or body.get("input")
        at = next(n for n, m in enumerate(items)
                  if m.get("role") == "tool" or m.get("type") == "function_call_output")
        assert items[at + 1]["role"] == "user"
        assert images_in(wire, {("messages" if "messages" in body else "input"): [items[at + 1]]})
    assert "diagram.png: an image (PNG" in json.dumps(body)


@pytest.mark.parametrize("wire,model", [
    ("openai", "o3-mini"), ("openai-responses", "o3-mini"), ("anthropic", "deepseek-chat"),
    ("gemini", "deepseek-chat"), ("ollama", "llama3.1"),
])
async def test_a_model_without_vision_is_refused_before_any_request(
        wire, model, workspace, home, configure):
    png(workspace / "shot.png", (10, 10))
    async with open_fake_llm(script=[reply("never")]) as server:
        configure(workspace, server.url_for(wire), api_style=wire)
        flag = await run_nyz(workspace, home, "run", "--model", model, "-i", "shot.png", "hi")
        mention = await run_nyz(workspace, home, "run", "--model", model, "see @shot.png")
    for proc in (flag, mention):
        err = proc.stderr.decode()
        assert proc.returncode == 1
        assert f"{model} does not take images" in err and "Traceback" not in err
    assert server.requests == []


async def test_read_of_an_image_for_a_blind_model_says_so(workspace, home, configure):
    png(workspace / "shot.png", (10, 10))
    script = [reply(tool_calls=[tool_call("read", {"file_path": "shot.png"})]), reply("ok")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        proc = await run_nyz(workspace, home, "run", "--model", "o3-mini", "read shot.png")
    assert proc.returncode == 0, proc.stderr.decode()
    body = server.requests[1].json
    assert images_in("openai", body) == []
    assert "the image is not shown: o3-mini does not take images" in server.requests[1].tool_results()[0]


async def test_bad_image_arguments_are_one_line(workspace, home, configure):
    (workspace / "notes.txt").write_text("not a picture")
    configure(workspace, "http://127.0.0.1:9/v1")
    missing = await run_nyz(workspace, home, "run", "-i", "nope.png", "hi")
    text = await run_nyz(workspace, home, "run", "-i", "notes.txt", "hi")
    assert missing.returncode == 1 and "image not found: nope.png" in missing.stderr.decode()
    assert text.returncode == 1
    assert "notes.txt is not a PNG, JPEG, GIF or WebP image" in text.stderr.decode()
    assert "Traceback" not in missing.stderr.decode() + text.stderr.decode()


async def test_image_mention_in_the_line_chat(workspace, home, configure):
    picture = png(workspace / "shot.png", (16, 16))
    async with open_fake_llm(script=[reply("seen")]) as server:
        configure(workspace, server.url_for("openai"))
        proc, out = await start_chat(workspace, home)
        await proc.stdin.send_all(b"what is @shot.png?\n")
        await read_until(proc.stdout, out, b"seen")
        await proc.stdin.send_all(b"/exit\n")
        assert await proc.wait() == 0
    [(_, media, data)] = images_in("openai", server.requests[0].json)
    assert (media, data) == ("image/png", picture)


async def test_image_flag_with_the_prompt_on_stdin(workspace, home, configure):
    picture = png(workspace / "shot.png", (20, 10))
    async with open_fake_llm(script=[reply("a red box")]) as server:
        configure(workspace, server.url_for("anthropic"), api_style="anthropic")
        proc = await run_nyz(workspace, home, "run", "--model", "claude-sonnet-4-5",
                             "-i", "shot.png", "-i", "shot.png", stdin=b"describe the picture")
    assert proc.returncode == 0, proc.stderr.decode()
    body = server.requests[0].json
    [(_, media, data)] = images_in("anthropic", body)  # the same image given twice: sent once
    assert (media, data) == ("image/png", picture)
    blocks = body["messages"][0]["content"]
    assert blocks[0]["type"] == "image" and blocks[-1]["text"] == "describe the picture"


async def test_redaction_leaves_image_bytes_intact(workspace, home, configure):
    """Every request leaves through the redactor (``RedactingProvider``): it replaces the
    config's key in the text, but an image that happens to hold the same bytes (here in a PNG
    text chunk) reaches the model exactly as read, both from ``-i`` and from ``read``."""
    from PIL.PngImagePlugin import PngInfo

    info = PngInfo()
    info.add_text("Comment", "key sk-test-key in the picture")
    out = io.BytesIO()
    Image.new("RGB", (40, 30), "purple").save(out, "PNG", pnginfo=info)
    picture = out.getvalue()
    assert b"sk-test-key" in picture
    (workspace / "keyed.png").write_bytes(picture)
    script = [reply(tool_calls=[tool_call("read", {"file_path": "keyed.png"})]), reply("purple")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))  # api_key = "sk-test-key"
        proc = await run_nyz(workspace, home, "run", "--model", "gpt-4.1", "-i", "keyed.png",
                             "my key is sk-test-key; read keyed.png")
    assert proc.returncode == 0, proc.stderr.decode()
    first, second = server.requests[0].json, server.requests[1].json
    said = json.dumps([p for p in first["messages"][-1]["content"] if p["type"] == "text"])
    assert "my key is" in said and "sk-test-key" not in said  # the text is redacted
    assert [data for _, _, data in images_in("openai", first)] == [picture]
    assert [data for _, _, data in images_in("openai", second)] == [picture, picture]


async def test_a_mention_resolving_outside_the_workspace_is_not_attached(
        workspace, home, configure, tmp_path):
    """``@name.png`` is read like every prompt file: a symlink the agent could have planted,
    pointing at an image outside the workspace (or a link chain to one), is left as text,
    while an image inside the workspace is attached (the control)."""
    outside = tmp_path / "private"
    outside.mkdir()
    png(outside / "secret.png", (8, 8), "blue")
    (workspace / "leak.png").symlink_to(outside / "secret.png")
    (workspace / "hop.png").symlink_to(workspace / "leak.png")
    (workspace / "pics").symlink_to(outside, target_is_directory=True)
    picture = png(workspace / "shot.png", (16, 16))
    async with open_fake_llm(script=[reply("seen")]) as server:
        configure(workspace, server.url_for("openai"))
        proc = await run_nyz(workspace, home, "run",
                             "compare @leak.png @hop.png @pics/secret.png and @shot.png")
    assert proc.returncode == 0, proc.stderr.decode()
    [(_, media, data)] = images_in("openai", server.requests[0].json)
    assert (media, data) == ("image/png", picture)
