"""The README's examples for the live tier (``claude_bin``) and for ``check_host_timeouts``
run as written: the live half is deselected by default and skipped under ``--live`` without
the key, the doubles half passes; the reference host passes the timeout check."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

# loaded here, before pytester snapshots sys.modules: an inner run that first imports them
# would have them dropped afterwards, and their re-import breaks later tests' msgspec types
import stuntset.checks.host_timeouts
import stuntset.runtime
import stuntset.script._load  # noqa: F401

README = Path(__file__).parents[2] / "README.md"
QUIET = ("-p", "no:hypothesispytest", "-p", "no:respx", "-p", "no:cacheprovider")


def example(marker: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    [block] = [b for b in blocks if marker in b]
    return block


def test_the_live_tier_example_runs_the_doubles_half(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / "hello.toml").write_text(
        "[[turns]]\nsteps = [{ text = 'hi' }]\n"
    )
    pytester.makepyfile(test_example=example("claude_bin"))
    pytester.runpytest(*QUIET).assert_outcomes(passed=1, deselected=1)
    pytester.runpytest(*QUIET, "--live").assert_outcomes(passed=1, skipped=1)


@pytest.mark.slow
def test_the_host_timeouts_example_passes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_example=example("check_host_timeouts("))
    pytester.runpytest(*QUIET).assert_outcomes(passed=1)
