"""The prompt of ``nyz run`` from argv and piped stdin, as text whatever bytes came.

Python hands argv over with undecodable bytes as lone surrogates (``surrogateescape``) and a
strict text stdin raises on them; either way a prompt that is not UTF-8 used to end in raw
``UnicodeEncodeError`` lines from the session and checkpoint writers, the prompt lost and an
empty session left behind. Here each part is decoded from its bytes with U+FFFD for what is
not UTF-8, and one line says so, naming where and the first bad byte's position, so the user
knows what the model got.

A root module under every layer (it imports nothing of nyzhi): ``cli`` reads ``nyz run``'s
prompt with it and the line chat (``nyzhi.linechat``) its lines, and neither front end may
import the other or ``cli``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence


def decode_part(raw: bytes, where: str) -> tuple[str, str | None]:
    """``raw`` as text, and the note to print when it was not UTF-8 (else None)."""
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        note = (f"nyz: the prompt {where} is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at "
                f"position {exc.start}); sent with each invalid byte replaced by U+FFFD")
        return raw.decode("utf-8", "replace"), note


def argv_prompt(words: Sequence[str]) -> tuple[str, str | None]:
    """The prompt words joined, from the bytes the shell passed (``os.fsencode`` undoes
    Python's surrogateescape)."""
    return decode_part(b" ".join(os.fsencode(w) for w in words), "in the arguments")


def stdin_prompt(raw: bytes) -> tuple[str, str | None]:
    return decode_part(raw, "on stdin")
