"""The README's "Checks for your own agent" example runs as written, and its checks catch an
app that breaks them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).parents[2] / "README.md"
QUIET = ("-p", "no:hypothesispytest", "-p", "no:respx", "-p", "no:cacheprovider")


def example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    [block] = [b for b in blocks if "assert_trajectory" in b]
    return block


def test_the_checks_example_passes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_example=example())
    pytester.runpytest(*QUIET).assert_outcomes(passed=2)


def test_the_checks_example_fails_on_an_app_that_breaks_them(pytester: pytest.Pytester) -> None:
    broken = (
        example()
        .replace(  # a system prompt that changes with every request
            "messages=messages,",
            'messages=[{**messages[0], "content": f"Now: {len(messages)}"}, *messages[1:]],',
        )
        .replace('report.md").write_text', 'notes.md").write_text')  # edits the wrong file
    )
    assert broken.count("len(messages)") == 1
    pytester.makepyfile(test_example=broken)
    result = pytester.runpytest(*QUIET)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*PrefixUnstable: the prompt prefix is not stable*"])
    result.stdout.fnmatch_lines(["*unexpected: modified notes.md*"])
