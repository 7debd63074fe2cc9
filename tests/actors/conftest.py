"""A rule checked during every actors test: only ``actors/_cell.py`` assigns a cell's fields.

The other modules drive a cell through its methods, so every state transition of an actor
is written in one file. The guard wraps ``Cell.__setattr__`` and records any assignment
made from code in another module; the test that caused it then fails, naming it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

from actors import _cell


@pytest.fixture(autouse=True)
def only_the_cell_module_changes_cells(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    wrong: list[str] = []
    assign = object.__setattr__

    def guarded(cell: _cell.Cell, name: str, value: Any) -> None:
        module = sys._getframe(1).f_globals.get("__name__")
        if module != _cell.__name__:
            wrong.append(f"{module} sets Cell.{name}")
        assign(cell, name, value)

    monkeypatch.setattr(_cell.Cell, "__setattr__", guarded)
    yield wrong
    assert not wrong, "cell state changed outside actors/_cell.py: " + ", ".join(sorted(set(wrong)))
