"""The README's MCP double example runs as written, and fails when its code under test
leaves a scripted turn unplayed (the fixture's teardown check)."""

from __future__ import annotations

import pytest
from readme import blocks

QUIET = ("-p", "no:hypothesispytest", "-p", "no:respx", "-p", "no:cacheprovider")


def example() -> str:
    [block] = [b for b in blocks("python") if "mcp_double" in b]
    return block


@pytest.mark.slow
def test_the_mcp_example_passes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_example=example())
    pytester.runpytest(*QUIET).assert_outcomes(passed=1)


@pytest.mark.slow
def test_the_mcp_example_fails_when_a_scripted_call_never_comes(
    pytester: pytest.Pytester,
) -> None:
    skipped = (
        example()
        .replace(
            """        with pytest.raises(MCPError, match="timed out"):
            await session.call_tool("search", {"q": "again"}, read_timeout_seconds=0.5)
""",
            "",
        )
        .replace(
            '({"q": "mcp"}, "result"), ({"q": "again"}, "fault:stall")', '({"q": "mcp"}, "result")'
        )
    )
    assert "again" not in skipped
    pytester.makepyfile(test_example=skipped)
    result = pytester.runpytest(*QUIET)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*UnusedTurns: MCP double 'stuntset': 1 scripted turn(s)*"])
