"""Byte-stream framing: Server-Sent Events and newline-delimited JSON, fed chunk by chunk.

Both parsers are incremental (``feed(bytes) -> list[...]``) and do no I/O, so the provider
feeds them from ``httpx.Response.aiter_bytes()`` and the benchmark feeds them from memory.
Chunk boundaries may fall anywhere: inside a UTF-8 sequence, between ``\\r`` and ``\\n``.

SSE rules kept (WHATWG): lines end in CRLF, LF or CR; a blank line dispatches the event;
``:comment`` lines are ignored; ``data:`` lines accumulate, joined by ``\\n``; one space after
the colon is dropped; ``id:`` and ``retry:`` are ignored (we never reconnect mid-stream);
a field line without a colon is a field with an empty value (so garbage lines are ignored).
Invalid UTF-8 is replaced, never raised: malformed bytes must not crash the process.

Both buffer one record at a time, so a record is bounded (``max_record`` characters): a server
sending one endless line or event would otherwise hold it all in memory. Past the bound,
``RecordTooLarge``.
"""

from __future__ import annotations

import codecs
import sys

SSEEvent = tuple[str, str]  # (event name, "" when absent; data)
NO_LIMIT = sys.maxsize


class RecordTooLarge(ValueError):
    """One record (an SSE event, an NDJSON line) longer than the parser's bound."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"one stream record exceeded {limit:,} characters")
        self.limit = limit


class SSEParser:
    __slots__ = ("_decoder", "_buf", "_event", "_data", "_pending_cr", "_max", "_size")

    def __init__(self, max_record: int = NO_LIMIT) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buf = ""
        self._event = ""
        self._data: list[str] = []
        self._pending_cr = False
        self._max = max_record
        self._size = 0  # characters of the event's data lines so far

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        text = self._decoder.decode(chunk)
        if self._pending_cr:
            # A CR ended the previous chunk: a LF right here belongs to the same line end.
            self._pending_cr = False
            if text.startswith("\n"):
                text = text[1:]
        if not text:
            return []
        if "\r" in text:
            if text.endswith("\r"):
                self._pending_cr = True
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        buf = self._buf + text
        cut = buf.rfind("\n")
        if cut < 0:
            if len(buf) + self._size > self._max:
                raise RecordTooLarge(self._max)
            self._buf = buf
            return []
        self._buf = buf[cut + 1 :]
        if len(self._buf) + self._size > self._max:
            raise RecordTooLarge(self._max)
        return self._lines(buf[:cut].split("\n"))

    def close(self) -> list[SSEEvent]:
        """End of stream: a final event without its blank line is still dispatched."""
        rest = self._buf + self._decoder.decode(b"", final=True)
        self._buf = ""
        lines = rest.split("\n") if rest else []
        lines.append("")
        return self._lines(lines)

    def _lines(self, lines: list[str]) -> list[SSEEvent]:
        out: list[SSEEvent] = []
        data = self._data
        for line in lines:
            if not line:
                if data:
                    out.append((self._event, "\n".join(data)))
                    data.clear()
                self._size = 0
                self._event = ""
                continue
            if line[0] == ":":
                continue
            field, sep, value = line.partition(":")
            if sep and value[:1] == " ":
                value = value[1:]
            if field == "data":
                self._size += len(value) + 1
                if self._size > self._max:
                    raise RecordTooLarge(self._max)
                data.append(value)
            elif field == "event":
                self._event = value
            # id, retry and unknown fields: ignored
        return out


class LineParser:
    """Newline-delimited records (Ollama's NDJSON). Blank lines are skipped."""

    __slots__ = ("_decoder", "_buf", "_max")

    def __init__(self, max_record: int = NO_LIMIT) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buf = ""
        self._max = max_record

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        buf = self._buf + self._decoder.decode(chunk)
        cut = buf.rfind("\n")
        if cut < 0:
            if len(buf) > self._max:
                raise RecordTooLarge(self._max)
            self._buf = buf
            return []
        self._buf = buf[cut + 1 :]
        if len(self._buf) > self._max:
            raise RecordTooLarge(self._max)
        return [("", line) for line in buf[:cut].split("\n") if line.strip()]

    def close(self) -> list[SSEEvent]:
        rest = (self._buf + self._decoder.decode(b"", final=True)).strip()
        self._buf = ""
        return [("", rest)] if rest else []
