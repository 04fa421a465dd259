"""The README's session-log example runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).parents[2] / "README.md"


def test_the_session_log_example_passes(pytester: pytest.Pytester) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    [example] = [block for block in blocks if "check_event_log" in block]
    pytester.makepyfile(test_log_example=example)
    result = pytester.runpytest("-p", "no:hypothesispytest", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
