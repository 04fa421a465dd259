"""Shared fixtures for stuntset's own tests. Keep it thin: helpers live in tests/_support."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Async tests run on asyncio and on trio."""
    return str(request.param)
