"""Run every ```python block of docs/actors.md, so the documentation cannot rot."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "actors.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```", DOC.read_text(), flags=re.S | re.M)


def test_the_docs_have_examples():
    assert len(BLOCKS) >= 8


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_doc_example_runs(index: int) -> None:
    code = compile(BLOCKS[index], f"{DOC.name}[python block {index + 1}]", "exec")
    exec(code, {"__name__": f"docs_example_{index}"})
