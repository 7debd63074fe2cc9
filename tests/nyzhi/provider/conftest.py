"""Fixtures for provider tests (helpers live in provider_helpers.py)."""

from __future__ import annotations

import pytest
from provider_helpers import STYLES


@pytest.fixture(params=STYLES)
def style(request: pytest.FixtureRequest) -> str:
    return request.param
