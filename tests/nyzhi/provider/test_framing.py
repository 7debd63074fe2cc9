"""The SSE and NDJSON parsers, fed in arbitrary chunks; decoders fed from memory."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nyzhi.provider.build import adapter_for
from nyzhi.provider.framing import LineParser, SSEParser
from nyzhi.provider.http import parse_retry_after
from nyzhi.testing.fake_llm import reply, tool_call
from nyzhi.testing.fake_llm_wire import RENDERERS


def _feed(parser: SSEParser | LineParser, chunks: list[bytes]) -> list[tuple[str, str]]:
    out = []
    for c in chunks:
        out += parser.feed(c)
    return out + parser.close()


def test_sse_fields_comments_multiline_and_line_endings() -> None:
    raw = (
        b": a comment\r\n"
        b"event: first\r\n"
        b"id: 7\r\nretry: 100\r\n"
        b"data: line one\r\n"
        b"data:line two\r\n\r\n"
        b"data: lf only\n\n"
        b"data: cr only\r\r"
        b"garbage line without colon\n\n"
        b"event: last\ndata: {\"a\": 1}"  # no blank line at the very end
    )
    assert _feed(SSEParser(), [raw]) == [
        ("first", "line one\nline two"),
        ("", "lf only"),
        ("", "cr only"),
        ("last", '{"a": 1}'),
    ]


def test_event_name_resets_after_dispatch() -> None:
    assert _feed(SSEParser(), [b"event: x\n\nevent: y\ndata: 1\n\ndata: 2\n\n"]) == [("y", "1"), ("", "2")]


def test_invalid_utf8_is_replaced_not_raised() -> None:
    events = _feed(SSEParser(), [b"data: \xff\xfe ok\n\n"])
    assert events == [("", "\ufffd\ufffd ok")]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=30), st.sampled_from([b"\n", b"\r\n", b"\r"]))
def test_sse_any_chunking_gives_the_same_events(cuts: list[int], eol: bytes) -> None:
    raw = b"".join(
        b"event: e%d%sdata: {\"t\": \"h\xc3\xa9llo %d\"}%sdata: more%s%s" % (i, eol, i, eol, eol, eol)
        for i in range(8)
    )
    chunks, pos = [], 0
    for n in cuts:
        chunks.append(raw[pos : pos + n])
        pos += n
    chunks.append(raw[pos:])
    assert _feed(SSEParser(), chunks) == _feed(SSEParser(), [raw])
    assert len(_feed(SSEParser(), [raw])) == 8


def test_ndjson_lines_across_chunks() -> None:
    assert _feed(LineParser(), [b'{"a":', b' 1}\n\n{"b"', b": 2}\n{\"c\": 3}"]) == [
        ("", '{"a": 1}'), ("", '{"b": 2}'), ("", '{"c": 3}')]


def test_decoders_from_memory_byte_by_byte() -> None:
    """Each adapter's decoder gives the same events whether the bytes come whole or one by one."""
    rep = reply("héllo wörld", thinking="thinking…", tool_calls=[tool_call("f", {"x": "ü"}, id="c1"), tool_call("g", {}, id="c2")])
    for style, render in RENDERERS.items():
        adapter = adapter_for(style)
        raw = b"".join(render(rep, "m", {"stream_options": {"include_usage": True}}))

        def run(chunks: list[bytes], adapter=adapter) -> list[object]:
            parser = SSEParser() if adapter.framing == "sse" else LineParser()
            decoder = adapter.decoder()
            events = [e for name, data in _feed(parser, chunks) for e in decoder.feed(name, data)]
            return events + decoder.finish()

        whole = run([raw])
        assert run([raw[i : i + 1] for i in range(len(raw))]) == whole, style
        assert whole[-1].reason == "tool_use", style  # type: ignore[attr-defined]


def test_retry_after_forms() -> None:
    assert parse_retry_after("12") == 12.0
    assert parse_retry_after("1.5") == 1.5
    assert parse_retry_after("-3") == 0.0
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    # HTTP-date 90 s after "now"
    assert parse_retry_after("Wed, 21 Oct 2015 07:29:30 GMT", now=1445412480.0) == 90.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:29:30 GMT", now=1445412600.0) == 0.0
