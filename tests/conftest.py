"""Shared fixtures for stuntset's own tests. Keep it thin: helpers live in tests/_support."""

from __future__ import annotations

import os

import pytest

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
    """When this run measures coverage (``make test``), the fake CLI processes measure
    themselves too: their launcher starts coverage when ``STUNTSET_COVERAGE_PROCESS_START``
    names a configuration file (see ``doubles/cli/_install.py``). Each process writes its own
    data file beside this run's, where pytest-cov combines them at the end."""
    try:
        import coverage
    except ImportError:  # the legacy environment
        return
    current = coverage.Coverage.current()
    if current is None or "STUNTSET_COVERAGE_PROCESS_START" in os.environ:
        return
    import shutil
    import tempfile
    from pathlib import Path

    import stuntset

    data_file = Path(current.config.data_file).resolve()
    source = Path(stuntset.__file__).parent
    directory = tempfile.mkdtemp(prefix="stuntset-coverage-")
    config.add_cleanup(lambda: shutil.rmtree(directory, ignore_errors=True))
    rc = Path(directory) / "subprocess.ini"
    rc.write_text(
        "[run]\n"
        "branch = true\n"
        "parallel = true\n"
        f"data_file = {data_file}\n"
        f"source = {source}\n"
        "disable_warnings = module-not-imported, no-data-collected, module-not-measured\n"
    )
    os.environ["STUNTSET_COVERAGE_PROCESS_START"] = str(rc)
    os.environ["STUNTSET_COVERAGE_PATH"] = str(Path(coverage.__file__).parent.parent)
