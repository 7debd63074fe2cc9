"""docs/config.md documents exactly the schema's keys, and marks exactly the inactive ones.

The docs give every key in ```toml blocks that are valid TOML, free names written in capitals
(``[provider.NAME]``, ``[mcp.servers.OTHER]``). Each block goes through the loader's own pass
(``convert.walk``), so the docs and the loader agree on what a key is.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from nyzhi.config.convert import walk
from nyzhi.config.keys import INACTIVE, NAME, form, schema_keys

DOCS = Path(__file__).resolve().parents[3] / "docs" / "config.md"
MARK = re.compile(r"not yet active \(((?:issue: )?[^)]+)\)")
HEADER = re.compile(r"^\[\[?([^\]]+)\]\]?")


def toml_blocks() -> list[str]:
    return re.findall(r"```toml\n(.*?)```", DOCS.read_text(), flags=re.S)


def placeholder(part: str) -> str:
    return NAME if part.isupper() else part


def documented_keys() -> tuple[set[str], list[str]]:
    seen: set[str] = set()
    unknown: list[str] = []
    for block in toml_blocks():
        walked = walk(tomllib.loads(block))
        seen.update(".".join(form(path)) for path in walked.keys)
        unknown += [".".join(map(str, path)) for path, _known in walked.unknown]
    return seen, unknown


def test_every_docs_block_is_valid_toml():
    assert len(toml_blocks()) >= 4
    for block in toml_blocks():
        tomllib.loads(block)


def test_docs_document_no_key_the_schema_lacks():
    _seen, unknown = documented_keys()
    assert unknown == [], f"docs/config.md documents keys the schema lacks: {unknown}"


def test_schema_has_no_key_the_docs_lack():
    seen, _unknown = documented_keys()
    missing = sorted(set(schema_keys()) - seen)
    assert missing == [], f"docs/config.md does not document: {missing}"


def test_schema_keys_regular_form():
    keys = set(schema_keys())
    for key in ("provider.default", "provider.NAME.oauth.client_id", "mcp.servers.NAME.command",
                "mcp.servers.NAME.url", "agent.hooks.event", "agent.agents.roles.NAME.model",
                "agent.verify.checks.kind", "nodes.host", "agent.trust.auto_approve"):
        assert key in keys


def marked_in_docs() -> dict[str, str]:
    """``{regular-form key: "issue: …" / "not planned yet"}`` for each mark in the blocks."""
    marks: dict[str, str] = {}
    for block in toml_blocks():
        table: tuple[str, ...] = ()
        for line in block.splitlines():
            header = HEADER.match(line)
            if header:
                table = tuple(placeholder(p.strip()) for p in header.group(1).split("."))
            mark = MARK.search(line)
            if not mark:
                continue
            key = table if header else (*table, line.split("=", 1)[0].strip())
            marks[".".join(key)] = mark.group(1)
    return marks


def test_docs_marks_are_the_inactive_keys():
    assert marked_in_docs() == INACTIVE


@pytest.mark.parametrize("key", sorted(INACTIVE))
def test_inactive_keys_are_schema_keys(key):
    assert key in set(schema_keys())
