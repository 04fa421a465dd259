"""What the pytest plugin's checks for the user's own agent delegate to (kept out of the
plugin module so it stays thin; imported lazily)."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from stuntset.checks.prefix import assert_prefix_stable
from stuntset.checks.resilience import ResilienceJudge
from stuntset.checks.timing import TempTracker
from stuntset.errors import UsageError

__all__ = ["check_prefix_marker", "check_resilience_after", "resilience_judge", "tracking_temp"]

_PREFIX_OPTIONS = frozenset({"conversation", "ignore", "min_requests"})


def check_prefix_marker(item: pytest.Item, marker: pytest.Mark) -> None:
    """``@pytest.mark.prefix_stable(**options)``: after the test body, the ``stand_in``
    fixture's journal must keep its prompt prefix (``assert_prefix_stable``)."""
    __tracebackhide__ = True
    unknown = sorted(set(marker.kwargs) - _PREFIX_OPTIONS)
    if marker.args or unknown:
        raise UsageError(
            f"{item.nodeid}: prefix_stable takes only the keyword options "
            f"{sorted(_PREFIX_OPTIONS)}; got {list(marker.args) + unknown}"
        )
    stand_in = getattr(item, "funcargs", {}).get("stand_in")
    if stand_in is None:
        raise UsageError(
            f"{item.nodeid}: the prefix_stable marker checks the stand_in fixture's journal, "
            f"but the test does not use stand_in (for a cassette, call "
            f"stuntset.checks.assert_prefix_stable(path) yourself)"
        )
    assert_prefix_stable(stand_in, **marker.kwargs)


@contextmanager
def tracking_temp(
    base: Path, monkeypatch: pytest.MonkeyPatch, *, failed: Callable[[], bool]
) -> Iterator[TempTracker]:
    """A ``TempTracker`` over ``base``, which is also the process's temporary directory for
    the test (``TMPDIR`` and ``tempfile.tempdir``). At the end everything in it is removed;
    ``LeftoverPaths`` names what the code under test left, unless ``failed()`` says the test
    failed already (its own failure is the one to read)."""
    __tracebackhide__ = True
    tracker = TempTracker(base)
    monkeypatch.setenv("TMPDIR", str(base))
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    try:
        yield tracker
    finally:
        tracker.close(fail=not failed())


_RESILIENCE_OPTIONS = frozenset(
    {"max_attempts", "min_backoff", "stall_bound", "slack", "outcome", "ignore"}
)


def resilience_judge(item: pytest.Item, doubles: Callable[[], list[object]]) -> ResilienceJudge:
    """The ``resilience`` fixture's ``ResilienceJudge`` over the test's doubles (``doubles()``
    lists them when judged), with the ``resilience`` marker's options."""
    marker = item.get_closest_marker("resilience")
    options = dict(marker.kwargs) if marker is not None else {}
    unknown = sorted(set(options) - _RESILIENCE_OPTIONS)
    if (marker is not None and marker.args) or unknown:
        args = list(marker.args) if marker is not None else []
        raise UsageError(
            f"{item.nodeid}: resilience takes only the keyword options "
            f"{sorted(_RESILIENCE_OPTIONS)}; got {args + unknown}"
        )
    return ResilienceJudge(doubles, **options)


def check_resilience_after(item: pytest.Item, doubles: Callable[[], list[object]]) -> None:
    """After the test body (``@pytest.mark.resilience`` or the ``resilience`` fixture): the
    test's doubles must show no broken resilience rule (``check_resilience``)."""
    __tracebackhide__ = True
    judge: ResilienceJudge | None = getattr(item, "funcargs", {}).get("resilience")
    if judge is None:
        judge = resilience_judge(item, doubles)
    judge.check()
