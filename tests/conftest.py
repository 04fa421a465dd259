"""Shared fixtures for stuntset's own tests. Keep it thin: helpers live in tests/_support."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

# the suite's tiers (markers) and the guard that fails a test starting a real binary, node, a
# browser or a package build without its tier's marker: tests/_tiers.py
pytest_plugins = ["_tiers", "_modules"]

# pytest processes the tests start (pytester subprocess runs, the docs' and wheel's user
# projects) skip langsmith's plugin too, as this run does (pyproject.toml): ~1 s a start
if "no:langsmith_plugin" not in os.environ.get("PYTEST_ADDOPTS", ""):
    os.environ["PYTEST_ADDOPTS"] = (
        os.environ.get("PYTEST_ADDOPTS", "") + " -p no:langsmith_plugin"
    ).strip()

try:
    from hypothesis import settings
except ImportError:  # the legacy environment (tests/legacy) has no hypothesis
    pass
else:
    # The default run is deterministic: the same examples every time, no wall-clock deadline
    # (a loaded CI machine must not turn a slow example into a failure), no example database.
    # `HYPOTHESIS_PROFILE=explore` searches afresh.
    settings.register_profile(
        "default", deadline=None, derandomize=True, database=None, print_blob=True
    )
    settings.register_profile("explore", deadline=None, max_examples=1000)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Async tests run on asyncio and on trio."""
    return str(request.param)


def pytest_configure(config: pytest.Config) -> None:
    """When this run measures coverage (``make test``), the processes the tests start measure
    themselves too, each writing its own data file beside this run's, which pytest-cov
    combines at the end:

    * the fake CLIs (``python -IS``: no site): their launcher starts coverage when
      ``STUNTSET_COVERAGE_PROCESS_START`` names a configuration (``doubles/cli/_install.py``);
    * other Python processes (the ``stuntset`` command, fresh interpreters): coverage's own
      ``.pth`` hook, through ``COVERAGE_PROCESS_START``. Not set in an xdist controller, whose
      workers start after this and measure themselves through pytest-cov."""
    try:
        import coverage
    except ImportError:  # the legacy environment
        return
    rc = os.environ.get("STUNTSET_COVERAGE_PROCESS_START")
    if rc is None:
        current = coverage.Coverage.current()
        if current is None:
            return
        rc = _subprocess_coverage_config(config, current)
        os.environ["STUNTSET_COVERAGE_PROCESS_START"] = rc
        # the fake CLIs save into a folder of their own, then rename into place (_install.py)
        partial = os.path.join(os.path.dirname(rc), "partial")
        os.mkdir(partial)
        os.environ["STUNTSET_COVERAGE_PARTIAL"] = partial
        os.environ["STUNTSET_COVERAGE_DATA"] = str(Path(current.config.data_file).resolve())
        os.environ["STUNTSET_COVERAGE_PATH"] = os.path.dirname(os.path.dirname(coverage.__file__))
    controller = not hasattr(config, "workerinput") and config.getoption("dist", "no") != "no"
    if not controller:
        os.environ.setdefault("COVERAGE_PROCESS_START", rc)


def _subprocess_coverage_config(config: pytest.Config, current: Any) -> str:
    """A coverage configuration file for the test run's subprocesses (removed at the end)."""
    import shutil
    import tempfile
    from pathlib import Path

    import stuntset

    directory = tempfile.mkdtemp(prefix="stuntset-coverage-")
    config.add_cleanup(lambda: shutil.rmtree(directory, ignore_errors=True))
    rc = Path(directory) / "subprocess.ini"
    rc.write_text(
        "[run]\n"
        "branch = true\n"
        # no greenlet: no subprocess runs greenlets, and with greenlet 3.5.6 its tracer made
        # a process whose threads had ended spin for ever in greenlet's thread-state clean-up
        # (the CLI recorder's tee, after its pump threads ended: its client never saw EOF)
        "concurrency = thread\n"
        "parallel = true\n"
        f"data_file = {Path(current.config.data_file).resolve()}\n"
        f"source = {Path(stuntset.__file__).parent}\n"
        "disable_warnings = module-not-imported, no-data-collected, module-not-measured\n"
    )
    return str(rc)


def _no_gc_while_collecting() -> None:
    """No automatic collection while the tests are collected (``pytest_collection_finish``
    collects once, then turns it back on): importing the SDKs builds about 650,000 objects,
    and the collector's own thresholds walked all of them again and again as they grew
    (measured 2026-12-03, collecting the fast tier: 10 full collections and 1,475 younger
    ones, 2.3 s of it; the collection took 12.1 s with them and 9.3 s without, at load 3)."""
    import gc

    gc.disable()


_no_gc_while_collecting()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Freeze what collection built (every module the tests import: the SDKs' types,
    hypothesis, litellm…, about 650,000 objects) out of the collector's reach. A full
    ``gc.collect()`` in a worker then walks only what the tests made since: 0.8–1.5 s a
    collection before, measured, and the leak checks and finaliser tests collect many times
    (they were the slowest all-fake tests of the suite). Nothing a test creates is frozen, so
    what the tests observe of the collector is unchanged. The automatic collection, off
    while collecting (``_no_gc_while_collecting``), is on again for the tests."""
    import gc

    gc.collect()
    gc.freeze()
    gc.enable()
