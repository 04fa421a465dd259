"""The sample plugin's pytest plugin (entry point ``pytest11``): one fixture."""

from __future__ import annotations

import pytest


@pytest.fixture
def sample_greeting() -> str:
    return f"greetings from {__file__}"
