"""Disk size of a session with one image: stored once by hash vs inline in every record.

    python -m benchmarks images [--json]

A 10-step session: the first prompt carries a screenshot, then ten tool-using steps; after
each step the thread is snapshotted (as compaction does), so the image is in 11 records. The
runtime's ``SessionWriter`` stores it once in ``<id>.images/`` and refers to it by hash; the
baseline is the same log with the image inline (base64) in every record that carries it,
written in the same run. Sizes are bytes on disk; the ratio is baseline / ours.
"""

from __future__ import annotations

import base64
import io
import json
import sys
import tempfile
from pathlib import Path

from nyzhi.core.runtime.sessions import SessionStore, message_to_json
from nyzhi.provider.types import ImagePart, Message, ToolCall

STEPS = 10


def screenshot() -> ImagePart:
    """A 1280x800 PNG of ~400 KB like a real screenshot: flat background, a busy region
    (seeded noise, which PNG cannot compress)."""
    import random

    from PIL import Image

    img = Image.new("RGB", (1280, 800), (240, 240, 240))
    noise = random.Random(32).randbytes(640 * 200 * 3)
    img.paste(Image.frombytes("RGB", (640, 200), noise), (320, 300))
    out = io.BytesIO()
    img.save(out, "PNG")
    return ImagePart("image/png", out.getvalue())


def thread(image: ImagePart) -> list[list[Message]]:
    """The thread after each step (the first element: just the prompt)."""
    msgs = [Message("user", "why does this page look broken?", images=(image,))]
    states = [list(msgs)]
    for i in range(STEPS):
        call = ToolCall(f"c{i}", "read", json.dumps({"file_path": f"src/page{i}.css"}))
        msgs += [Message("assistant", "Checking the stylesheet.", tool_calls=(call,)),
                 Message("tool", ".page { display: grid }\n" * 20, tool_call_id=call.id,
                         name="read")]
        states.append(list(msgs))
    return states


def ours(root: Path, states: list[list[Message]]) -> int:
    store = SessionStore(root)
    writer = store.create(sync="never")
    writer.append_message(states[0][0])
    for before, after in zip(states, states[1:], strict=False):
        for m in after[len(before):]:
            writer.append_message(m)
        writer.replace_thread(after)
    writer.close()
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def inline(root: Path, states: list[list[Message]]) -> int:
    """The same records, each message's image written into it as base64."""
    def as_json(m: Message) -> dict:
        out = message_to_json(m)
        if m.images:
            out["images"] = [{"media_type": i.media_type,
                              "data": base64.b64encode(i.data).decode()} for i in m.images]
        return out

    path = root / "inline.jsonl"
    with path.open("w") as fh:
        fh.write(json.dumps({"kind": "message", "message": as_json(states[0][0])}) + "\n")
        for before, after in zip(states, states[1:], strict=False):
            for m in after[len(before):]:
                fh.write(json.dumps({"kind": "message", "message": as_json(m)}) + "\n")
            fh.write(json.dumps({"kind": "thread", "messages": [as_json(m) for m in after]}) + "\n")
    return path.stat().st_size


def main(argv: list[str]) -> None:
    image = screenshot()
    states = thread(image)
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        stored, baseline = ours(Path(a), states), inline(Path(b), states)
    figures = {"image_bytes": len(image.data), "steps": STEPS, "by_hash_bytes": stored,
               "inline_bytes": baseline, "ratio": round(baseline / stored, 1)}
    if "--json" in argv:
        print(json.dumps(figures))
        return
    print(f"  one {len(image.data) / 1024:.0f} KB PNG, {STEPS} steps, a thread snapshot each step")
    print(f"  stored once by hash   {stored / 1024:9.0f} KB (log + images/)")
    print(f"  inline in each record {baseline / 1024:9.0f} KB  ({figures['ratio']}x)")


if __name__ == "__main__":
    main(sys.argv[1:])
