from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stuntset.console.testing import ConsoleServer, running_console


@pytest.fixture
def console(tmp_path: Path, _stuntset_seams: Any) -> Iterator[ConsoleServer]:
    folder = tmp_path / "cassettes"
    folder.mkdir()
    with running_console(tmp_path, cassettes=folder) as server:
        yield server
