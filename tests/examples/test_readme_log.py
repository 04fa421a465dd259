"""The README's session-log example runs as written (its tests called with this test's
fixtures: the same plugin fixtures the example asks for)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from stuntset.log import SqliteEventLog
from stuntset.runtime.testing import LogSeam

README = Path(__file__).parents[2] / "README.md"


def test_the_session_log_example_passes(
    tmp_path: Path, event_log: SqliteEventLog, log_seam: LogSeam
) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    [example] = [block for block in blocks if "check_event_log" in block]
    namespace: dict[str, Any] = {}
    exec(compile(example, "README.md", "exec"), namespace)

    namespace["test_my_log_keeps_the_invariants"](tmp_path)
    namespace["test_a_turn_projects"](event_log, log_seam)
    namespace["test_a_client_away_across_a_rollback_is_told"](event_log, log_seam)
