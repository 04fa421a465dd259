"""Shared fixtures for stuntset's own tests. Keep it thin: helpers live in tests/_support."""

from __future__ import annotations

import os

import pytest

try:
    from hypothesis import settings
except ImportError:  # the legacy environment (tests/legacy) has no hypothesis
    pass
else:
    # The default run is deterministic: the same examples every time, no wall-clock deadline
    # (a loaded CI machine must not turn a slow example into a failure), no example database.
    # `HYPOTHESIS_PROFILE=explore` searches afresh.
    settings.register_profile(
        "default", deadline=None, derandomize=True, database=None, print_blob=True
    )
    settings.register_profile("explore", deadline=None, max_examples=1000)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Async tests run on asyncio and on trio."""
    return str(request.param)
