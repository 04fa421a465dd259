"""The suite's tiers, and the guard that keeps the fast one honest.

``make test`` is the fast tier: every all-fake test (the doubles, the fake CLIs, the plugin,
the interop tests with the real client *libraries*), deselecting the tests marked with one of
``TIERS``, which run in their own targets (see the Makefile). A marker is a claim about what a
test runs; this plugin checks the claim where it can be seen: a Python audit hook sees every
process a test starts (``subprocess.Popen``, ``os.posix_spawn``, ``os.exec*``), and the
same hook in every Python process below it (``_spawn_site/sitecustomize.py``, through
``PYTHONPATH``: a pytester run whose inner test starts Chromium is seen too), so a test
that starts a real ``claude`` or ``codex``, a ``node``, a Chromium (through Playwright's driver)
or a package build (``uv``, ``pip``) without its tier's marker fails, naming the marker it
needs. A marker cannot be forgotten as the suite grows, and the fast tier cannot quietly grow
a real binary again.

Loaded by tests/conftest.py (``pytest_plugins``); ``STUNTSET_TIER_GUARD=off`` turns the guard
off (the legacy environment has no drift module to find the real binaries with).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# marker -> what a test marked with it runs (also its help text)
TIERS: dict[str, str] = {
    "real_cli": "runs a real claude or codex binary (make real)",
    "browser": "drives a real Chromium (make browser)",
    "node": "runs node and the npm SDKs (make node)",
    "wheel": "builds the package or installs one into a fresh venv (make wheel)",
    "docs": "runs an example of the user's guide (make docs)",
    # not a kind of process: an all-fake test measured over 0.5 s on a quiet 2-core machine
    # (a pytester run in subprocesses, a whole-catalog conformance pass over fake CLI
    # processes, a settle bound a leak test must wait out); kept out of the fast tier until it
    # is made fast (`make durations` lists the slowest of each tier)
    "slow": "an all-fake test over 0.5 s (make slow)",
}


# fixtures whose users belong to a tier whatever else they do
TIER_FIXTURES: dict[str, str] = {
    "_stuntset_chromium": "browser",  # stuntset_browser, page_snapshot, the console's pages
    "installed_package": "wheel",
}


# folders whose tests all belong to a tier (relative to the rootdir)
TIER_FOLDERS: dict[str, str] = {
    "tests/wheel/": "wheel",  # builds the wheel in-process and reads what it declares
}


# tests measured slow, kept as data (one test id a line)
SLOW_LIST = Path(__file__).with_name("slow.txt")


def slow_list(path: Path = SLOW_LIST) -> frozenset[str]:
    if not path.is_file():
        return frozenset()
    lines = (line.strip() for line in path.read_text().splitlines())
    return frozenset(line for line in lines if line and not line.startswith("#"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = config.rootpath
    slow = slow_list()
    for item in items:
        if item.nodeid in slow and item.get_closest_marker("slow") is None:
            item.add_marker("slow")
        where = item.path.relative_to(root).as_posix() if item.path.is_relative_to(root) else ""
        for folder, tier in TIER_FOLDERS.items():
            if where.startswith(folder) and item.get_closest_marker(tier) is None:
                item.add_marker(tier)
        names = getattr(item, "fixturenames", ())
        for fixture, tier in TIER_FIXTURES.items():
            if fixture in names and item.get_closest_marker(tier) is None:
                item.add_marker(tier)


def _resolved(path: str | None) -> str | None:
    if not path:
        return None
    try:
        return str(Path(path).resolve())
    except (OSError, RuntimeError):
        return None


def _real_binaries() -> dict[str, str]:
    """Resolved path -> tier, for the executables whose tier is known by path."""
    known: dict[str, str] = {}
    try:
        from stuntset.drift.runners import real_binary
    except ImportError:  # pragma: no cover - an environment without the drift module
        real_binary = None
    if real_binary is not None:
        for cli, tier in (("claude", "real_cli"), ("codex", "real_cli"), ("gemini", "node")):
            path = real_binary(cli)
            found = _resolved(str(path)) if path else None
            if found:  # the Node tier's gemini: a node script, started by its own path
                known[found] = tier
    node = _resolved(shutil.which("node"))
    if node:
        known[node] = "node"
    return known


def tier_of(executable: str, argv: list[str], known: dict[str, str]) -> str | None:
    """The tier a process started with ``executable`` / ``argv`` belongs to, or ``None`` for a
    process the fast tier may start (our fakes, Python, git...)."""
    path = _resolved(executable) or executable
    if path in known:
        return known[path]
    name = os.path.basename(executable)
    if name == "uv" or (len(argv) > 2 and argv[1:3] == ["-m", "pip"]):
        return "wheel"
    if "playwright" in path and "driver" in path:
        return "browser"
    if name in {"chromium", "chromium-browser", "chrome", "headless_shell"}:
        return "browser"
    if name in {"node", "nodejs"}:
        return "node"
    return None


class SpawnWatch:
    """Every process started while ``watching``, as (tier, executable), from an audit hook.
    Audit hooks cannot be removed, so the hook stays and does nothing between tests."""

    def __init__(self, known: dict[str, str]) -> None:
        self.known = known
        self.seen: list[tuple[str, str]] = []
        self.watching = False
        self._lock = threading.Lock()

    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.watching:
            return
        if event == "subprocess.Popen" or event in {"os.posix_spawn", "os.exec"}:
            self.started(args[0], args[1])

    def started(self, executable: Any, argv: Any) -> None:
        """Note a process started with ``executable`` / ``argv`` if it belongs to a tier."""
        argv_list = [os.fsdecode(a) for a in argv] if isinstance(argv, list | tuple) else []
        if isinstance(argv, str | bytes):
            argv_list = [os.fsdecode(argv)]
        exe = os.fsdecode(executable) if executable else (argv_list[0] if argv_list else "")
        if exe and os.sep not in exe:
            exe = shutil.which(exe) or exe
        tier = tier_of(exe, argv_list, self.known)
        if tier is not None:
            with self._lock:
                self.seen.append((tier, exe))

    def read_descendants(self, log: Path) -> None:
        """What the test's descendants started, as their hooks logged it (one JSON line each)."""
        try:
            lines = log.read_text().splitlines()
        except FileNotFoundError:
            return
        for line in lines:
            with contextlib.suppress(ValueError):  # a line a killed process left half-written
                entry = json.loads(line)
                self.started(entry["executable"], entry["argv"])

    def take(self) -> list[tuple[str, str]]:
        with self._lock:
            seen, self.seen = self.seen, []
        return seen


def missing_markers(item: pytest.Item, seen: list[tuple[str, str]]) -> list[str]:
    """One line per tier a test entered without its marker."""
    marked = {mark.name for mark in item.iter_markers()}
    lines = []
    for tier in dict.fromkeys(t for t, _ in seen):
        if tier not in marked:
            exe = next(e for t, e in seen if t == tier)
            lines.append(
                f"{item.nodeid} started {exe} ({TIERS[tier]}) without "
                f"@pytest.mark.{tier}: mark it, so that the fast tier (make test) leaves it out"
            )
    return lines


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--tier-durations",
        metavar="FILE",
        default=None,
        help="write each test's duration and tier to FILE (JSON), for tests/tools/durations.py",
    )


def tier_of_report(keywords: Any) -> str:
    """The tier a test report belongs to: its first tier marker, else ``fast``."""
    return next((name for name in TIERS if name in keywords), "fast")


class Durations:
    """Each test's setup + call + teardown time, written at the end of the run (in the xdist
    controller, which sees every worker's reports)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.tests: dict[str, dict[str, Any]] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        entry = self.tests.setdefault(
            report.nodeid,
            {"nodeid": report.nodeid, "tier": tier_of_report(report.keywords), "seconds": 0.0},
        )
        entry["seconds"] += report.duration
        if report.failed or report.when == "call":
            entry["outcome"] = report.outcome

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(session.config, "workerinput"):
            return  # a worker: the controller writes the file
        import json

        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        Path(self.path).write_text(json.dumps(list(self.tests.values()), indent=0) + "\n")


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("--tier-durations", None)
    if path and not hasattr(config, "workerinput"):
        config.pluginmanager.register(Durations(path), "stuntset-tier-durations")
    for name, help_text in TIERS.items():
        config.addinivalue_line("markers", f"{name}: {help_text}")
    if os.environ.get("STUNTSET_TIER_GUARD", "on") == "off":
        return
    watch = SpawnWatch(_real_binaries())
    sys.addaudithook(watch.hook)
    config.stash[_WATCH] = watch
    # the descendants' hook: every Python process below this one runs _spawn_site first, and
    # logs what it starts into the file the running test names (STUNTSET_SPAWN_LOG)
    site = str(SPAWN_SITE)
    paths = os.environ.get("PYTHONPATH", "")
    if site not in paths.split(os.pathsep):
        os.environ["PYTHONPATH"] = site + (os.pathsep + paths if paths else "")
    config.stash[_LOGS] = Path(tempfile.mkdtemp(prefix="stuntset-spawn-log-"))


def pytest_unconfigure(config: pytest.Config) -> None:
    logs = config.stash.get(_LOGS, None)
    if logs is not None:
        shutil.rmtree(logs, ignore_errors=True)


_WATCH = pytest.StashKey[SpawnWatch]()
_LOGS = pytest.StashKey[Path]()
SPAWN_SITE = Path(__file__).with_name("_spawn_site")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    watch = item.config.stash.get(_WATCH, None)
    if watch is None:
        return (yield)
    watch.take()
    log = _spawn_log(item.config)
    log.unlink(missing_ok=True)
    os.environ["STUNTSET_SPAWN_LOG"] = str(log)
    watch.watching = True
    try:
        return (yield)
    finally:
        watch.watching = False
        os.environ.pop("STUNTSET_SPAWN_LOG", None)
        log.unlink(missing_ok=True)


def _spawn_log(config: pytest.Config) -> Path:
    """The file the running test's descendants log what they start into (one per worker)."""
    return config.stash[_LOGS] / f"{os.getpid()}.jsonl"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
    report = yield
    watch = item.config.stash.get(_WATCH, None)
    if watch is None or call.when != "teardown" or not report.passed:
        return report
    watch.read_descendants(_spawn_log(item.config))
    problems = missing_markers(item, watch.take())
    if problems:
        report.outcome = "failed"
        report.longrepr = "\n".join(problems)
    return report
