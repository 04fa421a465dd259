"""The event-log invariant suite: our stores pass it, and each invariant catches a log
that breaks it (in the fixed scenario and in the hypothesis state machine)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _broken_logs import BROKEN, SCENARIO_ONLY

from stuntset.checks import INVARIANTS, InvariantViolation, check_event_log
from stuntset.errors import HarnessFailure
from stuntset.log import MemoryEventLog, SqliteEventLog

#: The state machine searching each broken log, in a fresh interpreter with a fixed hash seed:
#: Hypothesis also draws literals from the modules loaded at the time (its "local
#: constants"), so inside a test worker the derandomized search depends on which tests ran
#: before, and it missed a broken log in three full CI runs (never when run alone).
FIND_EACH = """
import json, sys
from hypothesis.internal.conjecture import providers

# Hypothesis also draws literals found in the local modules it sees loaded ("local
# constants"), so the search moved with every edit of stuntset's source (a new module, a new
# literal). Without them it depends only on the Hypothesis version and this suite.
assert hasattr(providers, "_get_local_constants"), "Hypothesis moved it: update this"
providers._get_local_constants = lambda: providers._local_constants
sys.path.insert(0, sys.argv[1])
from _broken_logs import BROKEN, SCENARIO_ONLY
from hypothesis import Phase, settings
from stuntset.checks import InvariantViolation, check_event_log

FIND_ONLY = settings(
    max_examples=30,
    stateful_step_count=15,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.generate],
)
found = {}
for name, log in sorted(BROKEN.items()):
    try:
        check_event_log(log, timeout=0.1, scenario=False, settings=FIND_ONLY)
        found[name] = None
    except InvariantViolation as violation:
        found[name] = violation.invariant
print(json.dumps(found))
"""


@pytest.fixture(scope="module")
def found_by_the_state_machine() -> dict[str, str | None]:
    """Broken log → the invariant the state machine caught it breaking (``None``: none)."""
    here = Path(__file__).parent
    done = subprocess.run(
        [sys.executable, "-c", FIND_EACH, str(here)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
        cwd=here,
        check=True,
        timeout=300,
    )
    found: dict[str, str | None] = json.loads(done.stdout)
    return found


def test_the_memory_log_keeps_every_invariant() -> None:
    check_event_log(MemoryEventLog)


def test_the_sqlite_log_keeps_every_invariant_in_memory() -> None:
    check_event_log(lambda: SqliteEventLog(":memory:"))


def test_the_sqlite_log_keeps_every_invariant_on_disk_on_trio(tmp_path: Path) -> None:
    counter = itertools.count()
    check_event_log(lambda: SqliteEventLog(tmp_path / f"{next(counter)}.db"), backend="trio")


def test_every_invariant_has_a_broken_log_that_breaks_it() -> None:
    assert set(BROKEN) | set(SCENARIO_ONLY) == set(INVARIANTS)
    assert not set(BROKEN) & set(SCENARIO_ONLY)


@pytest.mark.parametrize("invariant", sorted({**BROKEN, **SCENARIO_ONLY}))
def test_the_scenario_catches_a_log_that_breaks(invariant: str) -> None:
    with pytest.raises(InvariantViolation) as info:
        check_event_log({**BROKEN, **SCENARIO_ONLY}[invariant], timeout=0.1, stateful=False)

    assert info.value.invariant == invariant
    message = str(info.value)
    assert f"broke {invariant!r}" in message
    assert "last steps:\n  1. " in message
    assert isinstance(info.value, HarnessFailure)


@pytest.mark.slow
@pytest.mark.parametrize("invariant", sorted(BROKEN))
def test_the_state_machine_catches_a_log_that_breaks(
    invariant: str, found_by_the_state_machine: dict[str, str | None]
) -> None:
    # Random interleavings may trip a neighbouring rule first (a lossy store also spoils
    # the concurrent-batch check; a doubled event at the seam also doubles at a resume).
    neighbours = {
        "replay-matches-appends": {"atomic-batches"},
        "subscription-gapless": {"seamless-resume"},
    }
    assert found_by_the_state_machine[invariant] in {invariant} | neighbours.get(invariant, set())


def test_options_skip_what_an_implementation_does_not_support() -> None:
    check_event_log(
        BROKEN["atomic-batches"], concurrent_writers=False, rollback=False, stateful=False
    )
    check_event_log(BROKEN["rollback-detected"], rollback=False, stateful=False, timeout=0.1)
    check_event_log(BROKEN["stale-resume-detected"], rollback=False, stateful=False)
    check_event_log(SCENARIO_ONLY["shutdown-terminates-runs"], host=False, stateful=False)


def test_the_default_settings_load_hypothesis_only_when_asked_for() -> None:
    import stuntset.checks
    import stuntset.checks.log_invariants as log_invariants

    assert log_invariants.DEFAULT_SETTINGS is stuntset.checks.DEFAULT_SETTINGS
    assert stuntset.checks.DEFAULT_SETTINGS.derandomize
    for module in (stuntset.checks, log_invariants):
        with pytest.raises(AttributeError, match="has no attribute 'nope'"):
            module.nope  # noqa: B018


def test_without_hypothesis_the_state_machine_names_its_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """hypothesis is the ``hypothesis`` extra: without it the stateful half says how to get
    it (the fixed scenario needs nothing), instead of an ImportError from deep inside."""
    from stuntset.errors import MissingExtra

    monkeypatch.setitem(sys.modules, "hypothesis", None)  # as if it were not installed
    monkeypatch.delitem(sys.modules, "stuntset.checks._log_machine", raising=False)
    paths = (tmp_path / f"{n}.db" for n in range(100))
    with pytest.raises(MissingExtra, match=r"pip install 'stuntset\[hypothesis\]'"):
        check_event_log(lambda: SqliteEventLog(next(paths)), scenario=False, host=False)
