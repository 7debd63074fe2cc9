"""Which keys the schema knows, which of them do nothing yet, and what a layer sets that is neither.

The converter's one pass over a layer (``convert.walk``) structures it and reports each key
the schema lacks and each known key set. Here that serves three callers:

- the loader: keys nothing knows (typos) become warnings naming the file, the key and a close
  match, and are dropped before merging, so a typo never stops nyz from starting;
- the loader again: keys that are known but not wired yet (``INACTIVE``) get a notice, so a
  setting that has no effect never looks as if it had one;
- the docs test: ``schema_keys()`` lists every key in one regular form (free names written
  ``NAME``, array entries without an index: ``agent.hooks.event``), read from the converter's
  plans (``convert.shape``), compared with the keys docs/config.md documents.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from nyzhi.config.convert import Free, dotted, shape, walk
from nyzhi.config.errors import ConfigError, ConfigWarning
from nyzhi.config.schema import Config

NAME = "NAME"  # how a free name (a provider, a server, a role) is written in the regular form

# Known keys that nothing reads yet, and the issue that will wire each. An entry covers the key
# and everything under it. The issue that wires one removes it here and its mark in
# docs/config.md (tests/nyzhi/config/test_config_docs.py keeps the two equal).
INACTIVE: dict[str, str] = {
    "models": "legacy: use [provider.NAME] keys",
    "tui.accent": "issue: console",
    "tui.output_style": "issue: console",
    "tui.colors": "issue: console",
    "tui.notify": "legacy: use [notify]",
    "provider.NAME.options": "not planned yet",
    "agent.enforce_todos": "not planned yet",
    "agent.auto_simplify": "not planned yet",
    "agent.auto_commit": "not planned yet",
    "agent.model_profile": "not planned yet",
    "agent.routing": "not planned yet",
    "agent.verify": "not planned yet",
    "agent.sharing": "not planned yet",
    "agent.voice": "not planned yet",
    "agent.hooks.prompt": "not planned yet",
    "agent.hooks.instructions": "not planned yet",
    "agent.hooks.model": "not planned yet",
    "shell.sandbox": "legacy: use [agent.sandbox]",
    "browser.enabled": "not planned yet",
    "update": "not planned yet",
    "external_notify": "legacy: use [notify]",
}


_INACTIVE_PARTS = {tuple(key.split(".")): key for key in INACTIVE}


def form(path: tuple) -> tuple:
    """The regular form of a key's path: free names as ``NAME``, array indices left out."""
    return tuple(NAME if isinstance(p, Free) else p for p in path if not isinstance(p, int))


def schema_keys(t: Any = Config, at: tuple = ()) -> Iterator[str]:
    """Every key of the schema in the regular form (``provider.NAME.model``,
    ``agent.hooks.event``), tables included (``agent.trust``)."""
    found = shape(t)
    if found is None:
        return
    kind, sub = found
    if kind == "provider":
        yield ".".join((*at, "default"))
        yield ".".join((*at, NAME))
        yield from schema_keys(sub, (*at, NAME))
    elif kind == "sections":  # [lsp]: its settings, and [lsp.NAME] tables
        settings, entry = sub
        for name, hint in settings.items():
            if name != "servers":
                yield ".".join((*at, name))
                yield from schema_keys(hint, (*at, name))
        yield ".".join((*at, NAME))
        yield from schema_keys(entry, (*at, NAME))
    elif kind == "server":
        seen: set[str] = set()
        for cls in sub:
            for key in schema_keys(cls, at):
                if key not in seen:
                    seen.add(key)
                    yield key
    elif kind == "table":
        for name, hint in sub.items():
            yield ".".join((*at, name))
            yield from schema_keys(hint, (*at, name))
    elif kind == "map" and shape(sub) is not None:
        yield ".".join((*at, NAME))
        yield from schema_keys(sub, (*at, NAME))
    elif kind == "array" and shape(sub) is not None:
        yield from schema_keys(sub, at)


def check_layer(
    raw: dict, file: Path | None,
) -> tuple[dict, list[ConfigWarning], ConfigError | None]:
    """One pass over a layer: ``raw`` without the keys the schema lacks, the warnings for
    ``file`` (one per such key, with a close match when there is one; one per inactive table
    or key that is set), and the layer's problems (wrong types, ...) or None."""
    walked = walk(raw, file)
    warnings: list[ConfigWarning] = []
    for path, known in walked.unknown:
        import difflib  # only for a name that is wrong (~0.7 ms of start-up)

        close = difflib.get_close_matches(str(path[-1]), known, n=1)
        hint = f'did you mean "{close[0]}"?' if close else "known keys here: " + ", ".join(known)
        warnings.append(ConfigWarning(file, dotted(path), f"unknown key, ignored ({hint})"))
    inactive: dict[str, str] = {}
    for path in walked.keys:
        at = form(path)
        for i in range(1, len(at) + 1):
            prefix = _INACTIVE_PARTS.get(at[:i])
            if prefix is not None:
                inactive.setdefault(prefix, dotted(path[: _raw_len(path, i)]))
                break
    for prefix, shown in inactive.items():
        warnings.append(ConfigWarning(
            file, shown, f"not yet active ({INACTIVE[prefix]}), so it has no effect",
        ))
    return _without(raw, [p for p, _known in walked.unknown]), warnings, walked.error


def _raw_len(path: tuple, n: int) -> int:
    """How many parts of the raw ``path`` correspond to the first ``n`` parts of ``form``
    (array indices appear in the path, not in the form)."""
    seen = 0
    for i, part in enumerate(path):
        if not isinstance(part, int):
            seen += 1
        if seen == n:
            return i + 1
    return len(path)


def _without(raw: dict, drop: list[tuple]) -> dict:
    if not drop:
        return raw
    clean = copy.deepcopy(raw)
    for path in drop:
        node: Any = clean
        for part in path[:-1]:
            node = node[part]
        node.pop(path[-1], None)
    return clean
