"""The sliding window that redacts streamed deltas (issue 29 §7), cut at every place.

The end-to-end tests (test_leaks_exits.py) cut a key where the fake model's chunk size puts
the boundaries; here the real ``EventBus`` gets every two- and three-piece cut of a text with
secrets in it (as written, base64, hex, folded over lines), two interleaved tool streams, and
a stream whose tail is only flushed by the next event. What comes out, joined, must be exactly
the redacted text, with no secret in any event and never more held back than a secret's
length.
"""

from __future__ import annotations

import base64
import itertools

import pytest
import trio

from nyzhi.config.secrets import Redactor
from nyzhi.core import events as ev
from nyzhi.core.event_bus import EventBus

KEY = "sk-live-0123456789abcdefWXYZ"
TOKEN = "ghp_tokenABCDEFGHIJ987"


def redactor() -> Redactor:
    r = Redactor()
    r.add("OPENAI_API_KEY", KEY)
    r.add("GITHUB_TOKEN", TOKEN)
    return r


async def deliver(events: list[ev.Event]) -> list[ev.Event]:
    """Publish ``events`` on a bus with the redactor; what a subscriber received."""
    bus = EventBus(redactor=redactor())
    async with bus.subscribe() as got:
        for event in events:
            await bus.publish(event)
        out = []
        while True:
            try:
                out.append(got.receive_nowait())
            except trio.WouldBlock:
                return out


def text_of(events: list[ev.Event], kind: type[ev.Event], **match: str) -> str:
    return "".join(e.text for e in events if isinstance(e, kind)  # type: ignore[attr-defined]
                   and all(getattr(e, k) == v for k, v in match.items()))


def assert_clean(events: list[ev.Event]) -> None:
    for event in events:
        shown = repr(event)
        for secret in (KEY, TOKEN):
            assert secret not in shown
            assert base64.b64encode(secret.encode()).decode()[4:20] not in shown


TEXTS = {
    "plain": f"key {KEY} then {TOKEN}.",
    "adjacent": f"{KEY}{TOKEN}",
    "base64": "b64 " + base64.b64encode(f'{{"key": "{KEY}"}}'.encode()).decode() + " end",
    "hex": f"hex {KEY.encode().hex()} end",
    "folded": "folded " + "\n".join(KEY[i:i + 5] for i in range(0, len(KEY), 5)) + " end",
}


@pytest.mark.parametrize("name", TEXTS)
async def test_every_two_piece_cut_of_model_text(name):
    text = TEXTS[name]
    expected = redactor().redact(text)
    assert expected != text  # there is a secret to find
    for i in range(len(text) + 1):
        pieces = [text[:i], text[i:]]
        out = await deliver([ev.TextDelta(text=p) for p in pieces]
                            + [ev.TurnComplete(turn_id="t")])
        assert_clean(out)
        assert text_of(out, ev.TextDelta) == expected, (i, out)


async def test_every_three_piece_cut_of_tool_output():
    text = TEXTS["plain"]
    expected = redactor().redact(text)
    for i, j in itertools.combinations(range(len(text) + 1), 2):
        pieces = [text[:i], text[i:j], text[j:]]
        out = await deliver([ev.ToolOutputDelta(call_id="c1", text=p) for p in pieces]
                            + [ev.ToolDone(call_id="c1", name="bash", output="")])
        assert_clean(out)
        assert text_of(out, ev.ToolOutputDelta) == expected, (i, j)
        assert isinstance(out[-1], ev.ToolDone)  # the held tail came out before it


async def test_interleaved_tool_streams_are_windowed_apart():
    """Two parallel calls each print half a secret at a time, interleaved."""
    a, b = f"A:{KEY}", f"B:{TOKEN}"
    steps = []
    for k in range(0, max(len(a), len(b)), 4):
        steps += [ev.ToolOutputDelta(call_id="a", text=a[k:k + 4]),
                  ev.ToolOutputDelta(call_id="b", text=b[k:k + 4])]
    steps = [s for s in steps if s.text]
    out = await deliver([*steps, ev.ToolDone(call_id="a", name="bash"),
                         ev.ToolDone(call_id="b", name="bash")])
    assert_clean(out)
    assert text_of(out, ev.ToolOutputDelta, call_id="a") == "A:[redacted: OPENAI_API_KEY]"
    assert text_of(out, ev.ToolOutputDelta, call_id="b") == "B:[redacted: GITHUB_TOKEN]"


async def test_the_hold_is_at_most_a_secret_long_and_ordinary_text_flows():
    r = redactor()
    released, held = r.split_release("plain words with no secret at all")
    assert (released, held) == ("plain words with no secret at all", "")
    released, held = r.split_release("pay with " + KEY[:-1])
    assert released == "pay with " and held == KEY[:-1]
    assert len(held) < r.longest
    # Thinking is its own stream: the text stream's next delta flushes it, in order.
    out = await deliver([ev.ThinkingDelta(text="think " + KEY[:6]),
                         ev.TextDelta(text="answer"), ev.TurnComplete(turn_id="t")])
    kinds = [type(e).__name__ for e in out]
    assert kinds == ["ThinkingDelta", "ThinkingDelta", "TextDelta", "TurnComplete"]
    assert text_of(out, ev.ThinkingDelta) == "think " + KEY[:6]  # never completed: released


def test_each_recognised_form_is_redacted_with_its_label():
    """The forms docs/security.md lists, each also cut by line breaks (LF and CRLF)."""
    r = redactor()
    raw = KEY.encode()
    cases = {
        KEY: "OPENAI_API_KEY",
        KEY[::-1]: "OPENAI_API_KEY reversed",
        raw.hex(): "OPENAI_API_KEY as hex",
        raw.hex().upper(): "OPENAI_API_KEY as hex",
    }
    for pad in (b"", b"x", b"xy"):  # the three alignments inside a longer encoded text
        cases[base64.b64encode(pad + raw + b"\n").decode()] = "OPENAI_API_KEY as base64"
        cases[base64.urlsafe_b64encode(pad + b"\xfb\xff" + raw).decode()] = (
            "OPENAI_API_KEY as base64")
    for form, label in cases.items():
        for cut in (form, form[:7] + "\n" + form[7:], "\r\n".join(form[i:i + 5]
                                                               for i in range(0, len(form), 5))):
            out = r.redact(f"<{cut}>")
            assert f"[redacted: {label}]" in out, (cut, out)
            assert KEY not in out.replace("\n", "").replace("\r", "")
    assert r.redact("ordinary words, numbers 12345678 and sk-live-0123") == (
        "ordinary words, numbers 12345678 and sk-live-0123")  # a fragment is not the key


def test_url_safe_base64_differs_from_standard_and_both_are_found():
    r = Redactor()
    secret = "pw-~~?>-0123456789~~?>"  # bytes whose base64 has '+' and '/'
    r.add("DB_PASSWORD", secret)
    for pad in (b"", b"x", b"xy"):
        std = base64.b64encode(pad + secret.encode()).decode()
        url = base64.urlsafe_b64encode(pad + secret.encode()).decode()
        assert std != url
        for form in (std, url):
            assert "[redacted: DB_PASSWORD as base64]" in r.redact(form), form
