"""Interop tests: every client a test makes is closed after it (see ``_clients.OPEN``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ._clients import close_clients


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    yield
    close_clients()
