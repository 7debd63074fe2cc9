"""Recognising and masking secrets, so no command ever prints one.

Masking is shared by ``nyz config show/get`` (api_key, tokens, secret-looking headers and env
values) and by ``nyzhi.auth`` (``nyz whoami``). Redaction (``Redactor``) is what every way out
of nyz applies to text: the model's requests, events (stream-json, front ends), session files,
tool-output files and ``nyz mcp serve`` results (docs/security.md lists where).
"""

from __future__ import annotations

import re

_SECRET_NAME = re.compile(r"(api[_-]?key|token|secret|password|passwd|authorization|credential"
                          r"|webhook)",
                          re.IGNORECASE)


def is_secret_key(path: tuple) -> bool:
    """True when the last (string) component of a key path names a secret."""
    names = [p for p in path if isinstance(p, str)]
    return bool(names) and bool(_SECRET_NAME.search(names[-1]))


def mask_secret(secret: str | None) -> str:
    """``sk-…abcd`` for long secrets, ``****`` for short ones: enough to tell keys apart,
    never enough to use one."""
    if not secret:
        return ""
    if len(secret) < 16:
        return "****"
    return f"{secret[:3]}…{secret[-4:]}"


# ---- redaction -------------------------------------------------------------------------------

MIN_REDACT_LEN = 8  # shorter values are too likely to be ordinary words or numbers
_BREAKS = "\r\n"


def _flat(text: str) -> str:
    """``text`` without line breaks: a secret folded over lines (``fold``, ``base64 -w``,
    ``xxd -p``) is found in it."""
    return text.replace("\r", "").replace("\n", "") if "\r" in text or "\n" in text else text


def _base64_cores(value: bytes) -> list[str]:
    """The base64 characters that depend on ``value`` alone, for each of the three alignments
    it can have inside a longer encoded text (``base64 auth.json`` puts a key at any offset).

    Each 3-byte group becomes 4 characters, so with ``r`` unknown bytes before it only the
    groups wholly inside the value are fixed; those are what the text must contain."""
    import base64

    cores = []
    for r in range(3):
        encoded = base64.b64encode(b"\0" * r + value).decode("ascii")
        first = -(-r // 3)  # the first group wholly inside the value
        last = (r + len(value)) // 3  # groups ending at or before the value's end
        core = encoded[4 * first:4 * last]
        cores.append(core)
        url = core.replace("+", "-").replace("/", "_")
        if url != core:
            cores.append(url)
    return cores


def encoded_forms(name: str, value: str) -> dict[str, str]:
    """The forms of a secret redaction recognises, each with its label: the value, the value
    reversed (``rev``), hex in lower and upper case (``xxd -p``) and base64
    at each alignment, standard and URL-safe. Line breaks inside any of them are tolerated
    when matching (see ``Redactor``)."""
    raw = value.encode("utf-8")
    forms = {value: name, value[::-1]: f"{name} reversed",
             raw.hex(): f"{name} as hex", raw.hex().upper(): f"{name} as hex"}
    for core in _base64_cores(raw):
        forms.setdefault(core, f"{name} as base64")
    return {f: label for f, label in forms.items() if len(f) >= MIN_REDACT_LEN}


class Redactor:
    """The secret values nyz knows, and their replacement by ``[redacted: NAME]``.

    Known secrets are the provider keys nyz resolved, secret-named config values (MCP tokens,
    headers), the values of environment variables the shell policy keeps out of tool processes,
    and the entries of auth.json. Each is matched as written and in the encodings a command
    makes with one pipe (``encoded_forms``: reversed, hex, base64), also when line breaks cut
    it into pieces. Values shorter than ``MIN_REDACT_LEN`` characters are ignored, so ordinary
    output is not mangled. Longer forms are matched first, so a secret that contains another is
    replaced whole.

    ``split_release`` is the streaming form: text that arrives in chunks (tool output, model
    deltas) is released up to the point where a secret could still be starting, and the rest
    is held for the next chunk (``nyzhi.core.event_bus`` keeps the held text per stream).
    """

    def __init__(self) -> None:
        self._names: dict[str, str] = {}  # value -> name
        self._forms: dict[str, str] | None = None  # every recognised form -> label
        self._by_flat: dict[str, str] = {}
        self._by_first: dict[str, tuple[str, ...]] = {}
        self._longest = 0
        self._patterns: dict[tuple[str, ...], re.Pattern[str]] = {}

    def __bool__(self) -> bool:
        return bool(self._names)

    def add(self, name: str, value: str | None) -> None:
        """Register ``value`` (a secret known as ``name``); short or empty values are ignored."""
        if not isinstance(value, str) or len(value) < MIN_REDACT_LEN or value in self._names:
            return
        self._names[value] = name
        self._forms = None

    def add_all(self, secrets: dict[str, str]) -> None:
        for name, value in secrets.items():
            self.add(name, value)

    @property
    def longest(self) -> int:
        """The length of the longest form matched: the most a stream ever holds back."""
        self._compiled()
        return self._longest

    def _compiled(self) -> dict[str, str]:
        if self._forms is None:
            forms: dict[str, str] = {}
            for value, name in sorted(self._names.items(), key=lambda kv: -len(kv[0])):
                for form, label in encoded_forms(name, value).items():
                    forms.setdefault(form, label)
            self._by_flat = {_flat(f): label for f, label in forms.items()}
            first: dict[str, list[str]] = {}
            for flat in self._by_flat:
                first.setdefault(flat[0], []).append(flat)
            self._by_first = {c: tuple(fs) for c, fs in first.items()}
            self._longest = max((len(f) for f in self._by_flat), default=0)
            self._patterns = {}
            self._forms = forms
        return self._forms

    def _pattern(self, hits: tuple[str, ...]) -> re.Pattern[str]:
        pattern = self._patterns.get(hits)
        if pattern is None:
            if len(self._patterns) >= 64:  # a handful of hit sets recur; never grow unbounded
                self._patterns.clear()
            # Line breaks may fall between any two characters of a form.
            pattern = re.compile("|".join(
                "[\\r\\n]*".join(re.escape(c) for c in form) for form in hits))
            self._patterns[hits] = pattern
        return pattern

    def spans(self, text: str) -> list[tuple[int, int, str]]:
        """(start, end, label) of every secret form in ``text``, in order, not overlapping."""
        if not self._names or not text:
            return []
        self._compiled()
        flat = _flat(text)
        hits = [f for f in self._by_flat if f in flat]
        if not hits:
            return []
        ordered = tuple(sorted(set(hits), key=lambda f: (-len(f), f)))
        return [(m.start(), m.end(), self._label(m.group(0)))
                for m in self._pattern(ordered).finditer(text)]

    def _label(self, matched: str) -> str:
        return self._by_flat.get(_flat(matched)) or self._forms.get(matched, "secret")  # type: ignore[union-attr]

    @staticmethod
    def _render(text: str, spans: list[tuple[int, int, str]]) -> str:
        out: list[str] = []
        at = 0
        for start, end, label in spans:
            out += [text[at:start], f"[redacted: {label}]"]
            at = end
        out.append(text[at:])
        return "".join(out)

    def redact(self, text: str) -> str:
        """``text`` with every known secret replaced by ``[redacted: NAME]``."""
        spans = self.spans(text)
        return self._render(text, spans) if spans else text

    def split_release(self, text: str) -> tuple[str, str]:
        """(what can be released now, redacted; what to hold, raw) for ``text``, the held
        text of a stream followed by its new chunk.

        The held part is the longest tail that could still become a secret: a proper prefix
        of a recognised form (line breaks aside), so at most ``longest`` - 1 of its characters.
        Everything before it is final, because no secret that starts there can grow."""
        if not self._names or not text:
            return text, ""
        spans = self.spans(text)
        cut = len(text) - self._holdback(text, spans[-1][1] if spans else 0)
        if spans and spans[-1][1] == len(text) and self._is_prefix(_flat(text[spans[-1][0]:])):
            cut = spans.pop()[0]  # a whole form that a longer one may continue: wait
        return self._render(text[:cut], spans), text[cut:]

    def _is_prefix(self, flat: str) -> bool:  # used once per chunk, for a whole match
        """True when ``flat`` is a proper prefix of a recognised form."""
        return bool(flat) and any(
            len(f) > len(flat) and f.startswith(flat) for f in self._by_first.get(flat[0], ()))

    def _holdback(self, text: str, start: int) -> int:
        """How many characters at the end of ``text`` (none before ``start``) may begin a
        secret that the next chunk completes."""
        self._compiled()
        need = self._longest - 1
        j = max(start, len(text) - need)
        if any(c in text[j:] for c in _BREAKS):  # back over ``need`` characters, breaks aside
            j, seen = len(text), 0
            while j > start and seen < need:
                j -= 1
                if text[j] not in _BREAKS:
                    seen += 1
        window = text[j:]
        kept = [i for i, c in enumerate(window) if c not in _BREAKS]
        flat = window if len(kept) == len(window) else "".join(window[i] for i in kept)
        by_first = self._by_first
        for k, c in enumerate(flat):
            forms = by_first.get(c)
            if forms:
                tail = flat[k:]
                if any(len(f) > len(tail) and f.startswith(tail) for f in forms):
                    return len(window) - kept[k]
        return 0

    def redact_value(self, value: object) -> object:
        """``value`` with secrets redacted in every string inside it (dicts, lists, tuples);
        the same object when nothing changed, so callers can tell cheaply."""
        if not self._names:
            return value
        if isinstance(value, str):
            redacted = self.redact(value)
            return value if redacted == value else redacted
        if isinstance(value, dict):
            out = {k: self.redact_value(v) for k, v in value.items()}
            return value if all(out[k] is value[k] for k in value) else out
        if isinstance(value, list | tuple):
            items = [self.redact_value(v) for v in value]
            if all(a is b for a, b in zip(items, value, strict=True)):
                return value
            return type(value)(items) if isinstance(value, tuple) else items
        return value
