"""The README's session-log example runs as written (its tests called with this test's
fixtures: the same plugin fixtures the example asks for)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from readme import session_log_example

from stuntset.log import SqliteEventLog
from stuntset.runtime.testing import LogSeam


@pytest.mark.slow
def test_the_session_log_example_passes(
    tmp_path: Path, event_log: SqliteEventLog, log_seam: LogSeam
) -> None:
    namespace: dict[str, Any] = {}
    exec(compile(session_log_example(), "README.md", "exec"), namespace)

    namespace["test_my_log_keeps_the_invariants"](tmp_path)
    namespace["test_a_turn_projects"](event_log, log_seam)
    namespace["test_a_client_away_across_a_rollback_is_told"](event_log, log_seam)
