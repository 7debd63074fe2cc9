"""A benchmark's figures as ``--json`` asks for them, and its verdict against a target, said
one way by every benchmark that has a target."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any


def printed_as_json(argv: list[str], figures: Mapping[str, Any]) -> bool:
    """With ``--json`` in ``argv``: print ``figures`` as one JSON line and say so (True)."""
    if "--json" not in argv:
        return False
    json.dump(figures, sys.stdout)
    print()
    return True


def verdict(value: float, target: float) -> str:
    """``meets`` when ``value`` is at most ``target``, else ``misses``."""
    return "meets" if value <= target else "misses"
