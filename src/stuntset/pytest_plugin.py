"""The stuntset pytest plugin (entry point ``pytest11``). Thin: it wires library pieces.

- Every test runs with a deterministic clock and ids (``stuntset.seams.deterministic``),
  unless marked ``real_time``.
- ``@pytest.mark.live(env="ANTHROPIC_API_KEY")`` marks a test that needs a real provider:
  deselected by default, run with ``--live``, skipped there if the variable is unset.
- Fixtures: ``scripted_provider`` (configured by the same-named marker, or by overriding the
  ``stuntset_script`` fixture), ``stuck_provider``, ``stuntset_clock``, ``stuntset_ids``.
- Checks for the user's own agent: the ``prefix_stable`` marker, ``workspace_snapshot``,
  ``tool_calls``, ``temp_tracker`` and ``installed_package`` (logic in ``stuntset.checks``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

# The library is imported inside hooks and fixtures, never here: pytest loads this module
# before coverage starts and before a test asks for anything (keeps `pytest --help` fast too).
if TYPE_CHECKING:
    from stuntset.clock import Clock
    from stuntset.ids import IdGenerator
    from stuntset.providers import ScriptedProvider, StuckProvider
    from stuntset.script import Script
    from stuntset.seams import Seams

LIVE_HELP = "needs a real provider; deselected unless --live, skipped where an env var is unset"

#: Every fixture the plugin gives (tests/plugin/test_leaks.py checks the list against the
#: module: a fixture added below and not here fails it).
__all__ = [
    "agent_eval",
    "cassette",
    "claude_bin",
    "codex_bin",
    "daemon",
    "event_log",
    "event_snapshot",
    "fake_claude",
    "fake_codex",
    "fake_gemini",
    "fake_runner",
    "installed_package",
    "log_seam",
    "mcp_double",
    "page_snapshot",
    "provider_conformance",
    "resilience",
    "scripted_provider",
    "session_service",
    "stand_in",
    "stuck_provider",
    "stuntset_browser",
    "stuntset_clock",
    "stuntset_ids",
    "stuntset_leaks",
    "stuntset_script",
    "temp_tracker",
    "tool_calls",
    "workspace_snapshot",
]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("stuntset", "stuntset: doubles and checks for agent software")
    group.addoption(
        "--live",
        action="store_true",
        default=False,
        help="run tests marked live (real providers; each is skipped if its key env var is unset)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"live(env=NAME | [NAMES]): {LIVE_HELP}")
    config.addinivalue_line(
        "markers", "real_time: use the real clock and random ids instead of deterministic ones"
    )
    config.addinivalue_line(
        "markers",
        "scripted_provider(script_or_scenario_or_path, *, allow_unused_turns=False, "
        "**scenario_params): configure the scripted_provider fixture",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    run_live = bool(config.getoption("--live"))
    kept: list[pytest.Item] = []
    deselected: list[pytest.Item] = []
    for item in items:
        marker = item.get_closest_marker("live")
        if marker is None:
            kept.append(item)
        elif not run_live:
            deselected.append(item)
        else:
            from stuntset._plugin_support import live_skip_reason

            reason = live_skip_reason(marker.args, marker.kwargs, item.nodeid)
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))
            kept.append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


@pytest.fixture(autouse=True)
def _stuntset_seams(request: pytest.FixtureRequest) -> Iterator[Seams]:
    # what seams.deterministic() / use_seams() do, without their context managers: this runs
    # for every test of every project that installs stuntset
    from stuntset import seams as _seams
    from stuntset.clock import FakeClock, SystemClock
    from stuntset.ids import RandomIds, SequentialIds

    if request.node.get_closest_marker("real_time") is not None:
        chosen = _seams.Seams(SystemClock(), RandomIds())
    else:
        chosen = _seams.Seams(FakeClock(), SequentialIds())
    token = _seams._current.set(chosen)
    try:
        yield chosen
    finally:
        _seams._current.reset(token)


@pytest.fixture
def stuntset_clock(_stuntset_seams: Seams) -> Clock:
    """The clock in force for this test (a ``FakeClock`` unless marked ``real_time``)."""
    return _stuntset_seams.clock


@pytest.fixture
def stuntset_ids(_stuntset_seams: Seams) -> IdGenerator:
    """The id generator in force for this test (``SequentialIds`` unless ``real_time``)."""
    return _stuntset_seams.ids


@pytest.fixture
def stuntset_script() -> Script | None:
    """Override this fixture to give ``scripted_provider`` its script (vcr_config style)."""
    return None


@pytest.fixture
def scripted_provider(
    request: pytest.FixtureRequest, stuntset_script: Script | None, _stuntset_seams: Any
) -> Iterator[ScriptedProvider]:
    """A ``ScriptedProvider`` from the ``scripted_provider`` marker or ``stuntset_script``.

    At teardown, fails if scripted turns were never started (marker option
    ``allow_unused_turns=True`` to allow it).
    """
    __tracebackhide__ = True
    from stuntset._plugin_support import provider_from_marker

    marker = request.node.get_closest_marker("scripted_provider")
    provider, allow_unused = provider_from_marker(
        marker.args if marker else (),
        dict(marker.kwargs) if marker else {},
        stuntset_script,
        request.node.nodeid,
        request.path.parent,
    )
    yield provider
    if not allow_unused:
        provider.assert_all_turns_used()


@pytest.fixture
def stuck_provider(_stuntset_seams: Any) -> StuckProvider:
    """A ``StuckProvider``: its runs never finish until interrupted."""
    from stuntset.providers import StuckProvider

    return StuckProvider()


# --- fixtures contributed by the doubles (keep each a few lines; logic lives in the library) ---


# model doubles: logic in stuntset.doubles.model._pytest (imported lazily: uvicorn is heavy)
@pytest.hookimpl(specname="pytest_configure")
def pytest_configure_stand_in(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "stand_in(script_or_scenario_or_path=None, *, allow_unused_turns=False, framing=None, "
        "**scenario_params): configure the stand_in fixture (model double)",
    )


@pytest.fixture(scope="session")
def _stuntset_model_server() -> Iterator[Any]:
    from stuntset.doubles.model._pytest import SharedServer

    shared = SharedServer()
    yield shared
    shared.close()


@pytest.fixture
def stand_in(
    request: pytest.FixtureRequest, _stuntset_seams: Any, _stuntset_model_server: Any
) -> Iterator[Any]:
    """A model double (OpenAI Chat/Responses, Anthropic Messages) from the ``stand_in``
    marker or ``stand_in.play(script)``; ``.transport()`` in-process, ``.url()`` over loopback.
    At teardown, fails on unused turns, unanswered requests and clients dropped unclosed."""
    __tracebackhide__ = True
    from stuntset.doubles.model._leaks import check_unclosed_clients
    from stuntset.doubles.model._pytest import stand_in_from_marker

    marker = request.node.get_closest_marker("stand_in")
    double, allow = stand_in_from_marker(
        marker.args if marker else (),
        marker.kwargs if marker else {},
        request.node.nodeid,
        _stuntset_model_server,
        request.path.parent,
    )
    before = _stuntset_model_server.open_connections()
    _explain_watch(request, "model", double)
    try:
        yield double
        double.verify(allow_unused_turns=allow)
        check_unclosed_clients(_stuntset_model_server.open_connections, before, request.node.nodeid)
    finally:
        double.close()


# MCP double: logic in stuntset.doubles.mcp._pytest (serving needs the `mcp` extra)
@pytest.hookimpl(specname="pytest_configure")
def pytest_configure_mcp_double(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "mcp_double(script_or_scenario_or_path=None, *, tools=(), resources=(), prompts=(), "
        "auth_token=None, time_scale=1.0, allow_unused_turns=False, **scenario_params): "
        "configure the mcp_double fixture (a scripted MCP server)",
    )


@pytest.fixture
def mcp_double(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Any]:
    """A scripted MCP server from the ``mcp_double`` marker or ``mcp_double.play(script)``:
    ``.stdio_command()`` to spawn, ``.serve_http().url``, ``.calls``. At teardown, fails on
    tool calls no turn answered and on unused turns, then stops its servers."""
    __tracebackhide__ = True
    from stuntset.doubles.mcp._pytest import mcp_double_from_marker

    marker = request.node.get_closest_marker("mcp_double")
    double, allow = mcp_double_from_marker(
        marker.args if marker else (),
        marker.kwargs if marker else {},
        request.node.nodeid,
        tmp_path / "mcp",
        request.path.parent,
    )
    _explain_watch(request, "mcp", double)
    try:
        yield double
        double.check(allow_unused_turns=allow)
    finally:
        double.close()


# CLI doubles: logic in stuntset.doubles.cli._pytest
@pytest.hookimpl(specname="pytest_configure")
def pytest_configure_fake_claude(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "fake_claude(script_or_scenario_or_path, *, allow_unused_turns=False, time_scale=1.0, "
        "startup_delay=0.0, ignore_sigterm=None, **scenario_params): configure the fake_claude "
        "fixture (a fake `claude` executable)",
    )


@pytest.fixture
def fake_claude(
    request: pytest.FixtureRequest, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Any]:
    """A fake ``claude`` executable in ``tmp_path / "bin"``, from the ``fake_claude`` marker or
    a call ``fake_claude(script, **options)``; ``.path`` for ``cli_path``, ``.env()`` for PATH,
    ``.invocations``. At teardown, fails on unused or exhausted turns, then removes it.

    Like the real CLI, the fake reads hooks from the user's settings; so that the developer's
    own ``~/.claude/settings.json`` cannot change a test, ``CLAUDE_CONFIG_DIR`` is set to an
    empty ``tmp_path / "claude-config"`` for the test (set it again in the test to use one)."""
    from stuntset.doubles.cli._pytest import CliFixture

    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-config"))
    fixture = CliFixture("claude", tmp_path / "bin", request.node.nodeid, request.path.parent)
    _explain_watch(request, "cli", fixture)
    marker = request.node.get_closest_marker("fake_claude")
    try:
        if marker is not None:
            fixture.configure(marker.args, dict(marker.kwargs))
        yield fixture
        fixture.verify()
    finally:
        fixture.close()


@pytest.fixture
def provider_conformance() -> Any:
    """``provider_conformance(make_provider, **options)`` checks the providers
    ``make_provider(script)`` builds against every conformance invariant over the scenario
    catalog; returns the report, raises ``ConformanceFailure`` naming the first broken one.
    (One test per invariant × scenario instead: ``stuntset.checks.conformance_test``.)"""
    from stuntset.checks import check_provider_conformance

    return check_provider_conformance


@pytest.fixture
def event_log(tmp_path: Any, _stuntset_seams: Any) -> Iterator[Any]:
    """A fresh ``stuntset.log.SqliteEventLog`` in a file under ``tmp_path`` (WAL, synchronous
    NORMAL), closed at teardown. Call ``event_log.release_file()`` before touching the file."""
    from stuntset.log import SqliteEventLog

    log = SqliteEventLog(tmp_path / "stuntset-events.db")
    try:
        yield log
    finally:
        log.close()


@pytest.fixture
def log_seam(event_log: Any) -> Iterator[Any]:
    """A ``stuntset.runtime.testing.LogSeam`` over ``event_log`` (and a session store in the
    same file): seed a task + session + run, publish events, finish, roll back."""
    from stuntset.runtime._pytest import open_log_seam

    with open_log_seam(event_log) as seam:
        yield seam


@pytest.fixture
def fake_runner(_stuntset_seams: Any) -> Any:
    """A ``ProviderRegistry`` (every catalog scenario by name, and ``"stuck"``) that records the
    lifecycle of the providers it hands out — created, started, interrupted, responded, closed —
    for hosts that take providers by name: ``SessionService(providers=fake_runner)``."""
    from stuntset.providers.recording import ProviderRegistry
    from stuntset.runtime.testing import scenario_registry

    return ProviderRegistry(scenario_registry())


@pytest.hookimpl(specname="pytest_configure")
def pytest_configure_host(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "session_service(*, providers=None): the session_service fixture's providers (a "
        "registry: name -> provider factory, or one factory, named 'default'; default: the "
        "catalog scenarios and 'stuck')",
    )
    config.addinivalue_line(
        "markers",
        "daemon(*, providers=None, allowed_origins=()): the daemon fixture's providers (as "
        "for session_service) and browser origins let in besides its own",
    )


@pytest.fixture
def session_service(request: pytest.FixtureRequest, event_log: Any) -> Iterator[Any]:
    """An unstarted ``stuntset.runtime.SessionService`` over ``event_log`` whose providers are
    the ``session_service`` marker's ``providers=`` (a registry or one factory, named
    ``"default"``), else the catalog scenarios (by name) and ``"stuck"``:
    ``async with session_service as host:``."""
    from stuntset.runtime._pytest import marker_options, open_session_service, providers_from

    marker = request.node.get_closest_marker("session_service")
    where = f"{request.node.nodeid}: @pytest.mark.session_service"
    options = marker_options(
        marker.kwargs if marker else {},
        ["providers"],
        where=where,
        args=marker.args if marker else (),
    )
    providers = providers_from(options.get("providers"), where=where)
    with open_session_service(event_log, providers) as service:
        yield service


@pytest.fixture
def daemon(
    request: pytest.FixtureRequest, tmp_path: Any, event_log: Any, _stuntset_seams: Any
) -> Iterator[Any]:
    """A real daemon on a free 127.0.0.1 port in this process, over ``event_log``'s file
    (what ``log_seam`` seeds, it serves); providers and ``allowed_origins`` from the
    ``daemon`` marker (providers as in ``session_service``); ``daemon.client()`` connects
    (``transport="memory"``: no socket), ``daemon.info`` has url and token."""
    from stuntset.runtime._pytest import marker_options, providers_from, running_daemon
    from stuntset.runtime.security import normalize_origins

    marker = request.node.get_closest_marker("daemon")
    where = f"{request.node.nodeid}: @pytest.mark.daemon"
    options = marker_options(
        marker.kwargs if marker else {},
        ["providers", "allowed_origins"],
        where=where,
        args=marker.args if marker else (),
    )
    providers = providers_from(options.get("providers"), where=where)
    origins = normalize_origins(
        options.get("allowed_origins", ()), option=f"{where}: allowed_origins"
    )
    with running_daemon(event_log.path, tmp_path, providers, origins) as handle:
        yield handle


def _agent_bin(request: pytest.FixtureRequest, program: str) -> Any:
    if request.node.get_closest_marker("live") is None:
        return request.getfixturevalue(f"fake_{program}").path
    import os

    from stuntset._plugin_support import live_binary

    found = live_binary(program, os.environ, request.node.nodeid)
    if isinstance(found, str):
        pytest.skip(found)
    return found


@pytest.fixture
def claude_bin(request: pytest.FixtureRequest) -> Any:
    """The ``claude`` executable a test runs: in a live test (marked ``live``, run with
    ``--live``) the real one named by ``STUNTSET_CLAUDE_BIN`` (skipped where unset); otherwise
    ``fake_claude.path`` (its marker sets the script)."""
    return _agent_bin(request, "claude")


@pytest.fixture
def codex_bin(request: pytest.FixtureRequest) -> Any:
    """The ``codex`` executable a test runs: in a live test the real one named by
    ``STUNTSET_CODEX_BIN`` (skipped where unset); otherwise ``fake_codex.path``."""
    return _agent_bin(request, "codex")


@pytest.hookimpl(specname="pytest_configure")
def pytest_configure_fake_codex(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "fake_codex(script_or_scenario_or_path, *, allow_unused_turns=False, time_scale=1.0, "
        "startup_delay=0.0, ignore_sigterm=None, **scenario_params): configure the fake_codex "
        "fixture (a fake `codex` executable: exec --json and app-server)",
    )


@pytest.fixture
def fake_codex(
    request: pytest.FixtureRequest, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Any]:
    """A fake ``codex`` executable in ``tmp_path / "bin"``, from the ``fake_codex`` marker or a
    call ``fake_codex(script, **options)``; ``.path`` for ``CodexConfig(codex_bin=…)``,
    ``.env()`` for PATH, ``.invocations``. At teardown, fails on unused or exhausted turns,
    then removes it.

    Like the real CLI, the fake reads ``$CODEX_HOME/config.toml`` (``~/.codex`` by default);
    so that the developer's own cannot change a test, ``CODEX_HOME`` is set to an empty
    ``tmp_path / "codex-home"`` for the test (set it again in the test to use one)."""
    from stuntset.doubles.cli._pytest import CliFixture

    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    fixture = CliFixture("codex", tmp_path / "bin", request.node.nodeid, request.path.parent)
    _explain_watch(request, "cli", fixture)
    marker = request.node.get_closest_marker("fake_codex")
    try:
        if marker is not None:
            fixture.configure(marker.args, dict(marker.kwargs))
        yield fixture
        fixture.verify()
    finally:
        fixture.close()


@pytest.hookimpl(specname="pytest_configure")
def pytest_configure_fake_gemini(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "fake_gemini(script_or_scenario_or_path, *, allow_unused_turns=False, time_scale=1.0, "
        "startup_delay=0.0, ignore_sigterm=None, **scenario_params): configure the fake_gemini "
        "fixture (a fake `gemini` executable: the headless -p mode)",
    )


@pytest.fixture
def fake_gemini(
    request: pytest.FixtureRequest, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Any]:
    """A fake ``gemini`` executable in ``tmp_path / "bin"``, from the ``fake_gemini`` marker or
    a call ``fake_gemini(script, **options)``; ``.path`` to run, ``.env()`` for PATH,
    ``.invocations``. At teardown, fails on unused or exhausted turns, then removes it.

    Like the real CLI, the fake reads ``~/.gemini/settings.json`` and ``trustedFolders.json``
    under ``$GEMINI_CLI_HOME`` (else ``$HOME``); so that the developer's own cannot change a
    test, ``GEMINI_CLI_HOME`` is set to an empty ``tmp_path / "gemini-home"`` for the test."""
    from stuntset.doubles.cli._pytest import CliFixture

    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "gemini-home"))
    fixture = CliFixture("gemini", tmp_path / "bin", request.node.nodeid, request.path.parent)
    _explain_watch(request, "cli", fixture)
    marker = request.node.get_closest_marker("fake_gemini")
    try:
        if marker is not None:
            fixture.configure(marker.args, dict(marker.kwargs))
        yield fixture
        fixture.verify()
    finally:
        fixture.close()


# cassettes: logic in stuntset.cassettes.session (imported lazily)
@pytest.hookimpl(specname="pytest_addoption")
def pytest_addoption_cassettes(parser: pytest.Parser) -> None:
    group = parser.getgroup("stuntset")
    group.addoption(
        "--stuntset-mode",
        choices=("replay", "record", "refresh", "off"),
        default=None,
        help="cassettes: replay (default; env STUNTSET_MODE), record missing ones, refresh all, "
        "or off; anything but replay is refused when CI is set",
    )
    group.addoption(
        "--stuntset-migrate-paths",
        action="store_true",
        default=False,
        help="cassettes: rename each test's cassette from its earlier default name to the "
        "collision-free one (ids whose punctuation differs no longer share a file)",
    )


@pytest.hookimpl(specname="pytest_configure")
def pytest_configure_cassettes(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "cassette(path=None, *, upstream=None, allow_unused=False, pace='none', scale=1.0): "
        "configure the cassette fixture (default path: cassettes/<module>/<test>.jsonl beside "
        "the test file; pace: none, recorded or scaled)",
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call":
        item.stash[_CALL_FAILED] = report.failed
    return report


_CALL_FAILED = pytest.StashKey[bool]()


@pytest.fixture
def cassette(request: pytest.FixtureRequest) -> Iterator[Any]:
    """This test's cassette: ``OpenAI(api_key=..., **cassette.client_options())``. Replays by
    default; fails at teardown on recorded interactions never requested."""
    from stuntset.cassettes.session import (
        CassetteSession,
        cassette_path,
        marker_cassette_path,
        mode_from,
    )

    marker = request.node.get_closest_marker("cassette")
    kwargs = dict(marker.kwargs) if marker else {}
    named = marker.args[0] if marker and marker.args else None
    path = (
        marker_cassette_path(named, request.node.path.parent)
        if named
        else cassette_path(
            request.node.path,
            request.node.name,
            migrate=request.config.getoption("--stuntset-migrate-paths"),
        )
    )
    session = CassetteSession(
        path, mode=mode_from(request.config.getoption("--stuntset-mode")), **kwargs
    )
    yield session
    session.close(failed=request.node.stash.get(_CALL_FAILED, True))


@pytest.fixture
def event_snapshot(request: pytest.FixtureRequest) -> Any:
    """``event_snapshot(events)`` compares with ``snapshots/<module>/<test>.jsonl`` beside the
    test; ``event_snapshot.log(event_log, session_id)`` the persisted log of a session;
    ``--stuntset-mode=refresh`` rewrites them (never in CI)."""
    from stuntset.cassettes.session import default_path, mode_from
    from stuntset.cassettes.snapshot import EventSnapshot

    cassette_path = default_path(request.node.path, request.node.name)
    base = (
        cassette_path.parent.parent.parent
        / "snapshots"
        / cassette_path.parent.name
        / cassette_path.stem
    )
    update = mode_from(request.config.getoption("--stuntset-mode")) == "refresh"
    return EventSnapshot(base, update=update)


# checks for the user's own agent: logic in stuntset.checks (and stuntset.checks._pytest)
@pytest.hookimpl(specname="pytest_configure")
def pytest_configure_checks(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "prefix_stable(*, conversation=None, ignore=(), min_requests=2): after the test, the "
        "stand_in fixture's requests must keep their prompt prefix (assert_prefix_stable)",
    )
    config.addinivalue_line(
        "markers",
        "resilience(*, max_attempts=5, min_backoff=0.1, stall_bound=600.0, slack=0.05, "
        "outcome=None, ignore=()): after the test, its doubles must show no broken resilience "
        "rule (stuntset.checks.check_resilience)",
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    result = yield
    marker = item.get_closest_marker("prefix_stable")
    if marker is not None:
        from stuntset.checks._pytest import check_prefix_marker

        check_prefix_marker(item, marker)
    if item.get_closest_marker("resilience") is not None or "resilience" in getattr(
        item, "funcargs", {}
    ):
        from stuntset.checks._pytest import check_resilience_after

        check_resilience_after(item, lambda: _watched_doubles(item))
    return result


def _watched_doubles(node: pytest.Item) -> list[Any]:
    """The doubles the test's fixtures made (``stand_in``, ``fake_claude``, ``fake_codex``,
    ``mcp_double``), as the failure timeline watches them."""
    timeline = node.stash.get(_TIMELINE, None)
    return [] if timeline is None else [double for _, double in timeline.doubles]


@pytest.fixture
def resilience(request: pytest.FixtureRequest) -> Any:
    """A ``stuntset.checks.ResilienceJudge`` over this test's doubles: after the test body,
    the resilience rules are checked (as ``@pytest.mark.resilience(**options)`` does);
    ``resilience.outcome = "completed" | "error"`` says what the app reported."""
    from stuntset.checks._pytest import resilience_judge

    return resilience_judge(request.node, lambda: _watched_doubles(request.node))


@pytest.fixture
def workspace_snapshot() -> Any:
    """``workspace_snapshot(root, ignore=...)`` records the tree under ``root`` now; after the
    run, ``.assert_changes(added=, modified=, deleted=)`` (``stuntset.checks.WorkspaceSnapshot``)."""
    from stuntset.checks import WorkspaceSnapshot

    return WorkspaceSnapshot.take


@pytest.fixture
def agent_eval(request: pytest.FixtureRequest) -> Any:
    """``agent_eval(path, target="scripted", runs=None)``: an eval scenario file (relative to
    the test file) played N times; returns its ``stuntset.evals.EvalResult``
    (``await agent_eval.arun(...)`` in an async test)."""
    from stuntset.evals import EvalRunner

    return EvalRunner(request.path.parent)


@pytest.fixture(scope="session")
def installed_package(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``installed_package(project_dir, extras=(), requirements=())``: the project built into
    a wheel and installed into a fresh venv, once per session for the same arguments
    (``stuntset.checks.InstalledPackage``: ``.run``, ``.bin``, ``.entry_points``,
    ``.import_check``)."""
    from stuntset.checks.installed import InstalledPackages

    return InstalledPackages(tmp_path_factory.mktemp("installed"))


@pytest.fixture
def tool_calls() -> Any:
    """A ``stuntset.checks.ToolCalls`` recorder: wrap the app's tool functions with
    ``tool_calls.record(fn)``, then ``assert_tool(tool_calls, scripted_step)``."""
    from stuntset.checks import ToolCalls

    return ToolCalls()


@pytest.fixture
def temp_tracker(
    request: pytest.FixtureRequest, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Any]:
    """A ``stuntset.checks.TempTracker`` whose directory is the test's TMPDIR (and
    ``tempfile.tempdir``); at teardown everything there is removed and leftovers fail the test."""
    from stuntset.checks._pytest import tracking_temp

    def failed() -> bool:
        return bool(request.node.stash.get(_CALL_FAILED, True))

    with tracking_temp(tmp_path / "stuntset-tmp", monkeypatch, failed=failed) as tracker:
        yield tracker


# leak checks at teardown: logic in stuntset._leak_check (public as stuntset.checks.leaks).
# On by default for tests that use a stuntset fixture or marker (never for a user's unrelated
# tests); `--stuntset-leaks=all` (ini `stuntset_leaks = all`) for every test, `off` for none.
#: The fixtures that switch it on: every fixture of the plugin (``__all__``), but those whose
#: own resources have not been measured under the check yet (a browser, an eval's agents).
_LEAK_UNCHECKED = frozenset({"agent_eval", "page_snapshot", "stuntset_browser"})
_LEAK_FIXTURES = frozenset(__all__) - _LEAK_UNCHECKED
_LEAK_MARKERS = frozenset(
    {
        "stand_in",
        "fake_claude",
        "fake_codex",
        "fake_gemini",
        "scripted_provider",
        "prefix_stable",
        "resilience",
    }
)
_LEAK_MODES = ("stuntset", "all", "off")
_LEAKS = pytest.StashKey[Any]()


@pytest.hookimpl(specname="pytest_addoption")
def pytest_addoption_leaks(parser: pytest.Parser) -> None:
    help = "leak checks at teardown: stuntset (tests using its fixtures; default), all, off"
    parser.addini("stuntset_leaks", help, default="stuntset")
    parser.getgroup("stuntset").addoption("--stuntset-leaks", choices=_LEAK_MODES, help=help)


@pytest.hookimpl(specname="pytest_configure")
def pytest_configure_leaks(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "stuntset_leaks(on=True, *, ignore=()): the leak check at teardown (processes, sockets, "
        "pipes, tasks, temp_dirs, streams): False switches it off, True on, ignore= leaves kinds out",
    )
    mode = config.getini("stuntset_leaks")
    if mode not in _LEAK_MODES:
        raise pytest.UsageError(f"ini stuntset_leaks = {mode!r}: expected one of {_LEAK_MODES}")


@pytest.fixture(autouse=True)
def _stuntset_leaks(request: pytest.FixtureRequest) -> Iterator[Any]:
    __tracebackhide__ = True
    config, node = request.config, request.node
    marker = node.get_closest_marker("stuntset_leaks")
    mode = config.getoption("--stuntset-leaks") or config.getini("stuntset_leaks")
    ignore: tuple[str, ...] = ()
    if marker is not None:
        from stuntset._leak_check import marker_options

        on, ignore = marker_options(marker.args, dict(marker.kwargs), node.nodeid)
    else:
        on = mode == "all" or (
            mode == "stuntset"
            and (
                not _LEAK_FIXTURES.isdisjoint(request.fixturenames)
                or any(m.name in _LEAK_MARKERS for m in node.iter_markers())
            )
        )
    if not on:
        yield None
        return
    from stuntset._leak_check import at_teardown, pytest_temp_roots

    def failed() -> bool:
        return bool(node.stash.get(_CALL_FAILED, True))

    roots = pytest_temp_roots(config.getoption("basetemp", None))
    for snapshot in at_teardown(node.nodeid, ignore=ignore, ignore_paths=roots, failed=failed):
        node.stash[_LEAKS] = snapshot
        yield snapshot


@pytest.fixture
def stuntset_leaks(_stuntset_leaks: Any) -> Any:
    """This test's ``stuntset.checks.LeakSnapshot`` (asking for it switches the check on;
    ``None`` if the marker switched it off): ``stuntset_leaks.keep(obj)`` lets a process,
    socket, path or task outlive the test."""
    return _stuntset_leaks


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Any:
    snapshot = pyfuncitem.stash.get(_LEAKS, None)
    if snapshot is None or not _is_coroutine_function(pyfuncitem.obj):
        return (yield)
    from stuntset._leak_check import noting_tasks

    original = pyfuncitem.obj
    # notes its tasks, and lets its loop finish closing generators it dropped, before the loop ends
    pyfuncitem.obj = noting_tasks(original, snapshot)
    try:
        return (yield)
    finally:
        pyfuncitem.obj = original


def _is_coroutine_function(obj: Any) -> bool:
    import inspect

    return inspect.iscoroutinefunction(obj)


# the browser snapshot tier: logic in stuntset.browser (and stuntset.browser._pytest)
@pytest.hookimpl(specname="pytest_addoption")
def pytest_addoption_browser(parser: pytest.Parser) -> None:
    parser.getgroup("stuntset").addoption(
        "--snapshot-update",
        action="store_true",
        default=False,
        help="rewrite page snapshots that differ (also STUNTSET_SNAPSHOT_UPDATE=1; never in CI)",
    )


@pytest.hookimpl(specname="pytest_configure")
def pytest_configure_browser(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "page_snapshot(*, selector='main', normalize={regex: replacement}, viewport=(w, h)): "
        "configure the page_snapshot fixture",
    )


@pytest.fixture(scope="session")
def _stuntset_chromium() -> Iterator[Any]:
    from stuntset.browser._pytest import open_browser

    with open_browser(pytest.skip) as shared:
        yield shared


@pytest.fixture
def stuntset_browser(_stuntset_chromium: Any) -> Iterator[Any]:
    """A Playwright ``Browser``: one headless Chromium (the user's own, found on PATH or
    STUNTSET_CHROMIUM) shared by the session; tests using it are skipped, with the reason,
    where there is none."""
    with _stuntset_chromium.active() as browser:
        yield browser


@pytest.fixture
def page_snapshot(request: pytest.FixtureRequest, stuntset_browser: Any, tmp_path: Any) -> Any:
    """A Playwright page; ``page_snapshot.check(name)`` compares its ARIA snapshot with
    ``snapshots/<module>/<test>.<name>.aria.yml`` beside the test (recorded when missing,
    rewritten with --snapshot-update, read-only in CI); a failure saves a screenshot."""
    from stuntset.browser._pytest import open_page_snapshot

    marker = request.node.get_closest_marker("page_snapshot")
    with open_page_snapshot(
        stuntset_browser,
        request.node.path,
        request.node.name,
        tmp_path / "page-failures",
        update=request.config.getoption("--snapshot-update"),
        options=dict(marker.kwargs) if marker else None,
    ) as snapshot:
        yield snapshot


# why a red test is red: logic in stuntset.explain (and stuntset.explain._pytest). A test that
# used a double gets a `stuntset` section (its timeline) when it fails, a trace kept for it
# (--stuntset-trace), and a deadline (ini stuntset_deadline / marker stuntset_deadline).
_TIMELINE = pytest.StashKey[Any]()
_STARTED = pytest.StashKey[tuple[int, int]]()
_EXPLAINED = pytest.StashKey[dict[str, Any]]()


@pytest.hookimpl(specname="pytest_addoption")
def pytest_addoption_explain(parser: pytest.Parser) -> None:
    group = parser.getgroup("stuntset")
    modes = "retain-on-failure (default), on, off"
    group.addoption(
        "--stuntset-trace",
        choices=("retain-on-failure", "on", "off"),
        default=None,
        help=f"trace files (HTML + JSONL) of tests that used a double: {modes}",
    )
    group.addoption("--stuntset-trace-dir", default=None, help="folder of the trace files")
    parser.addini("stuntset_trace", f"trace files: {modes}", default="retain-on-failure")
    parser.addini(
        "stuntset_trace_dir",
        "folder of the trace files (from the rootdir)",
        default="stuntset-traces",
    )
    parser.addini(
        "stuntset_deadline",
        "seconds a test that uses a double may run before it fails naming what is pending "
        "(0: none; default 60)",
        default="",
    )


@pytest.hookimpl(specname="pytest_configure")
def pytest_configure_explain(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "stuntset_deadline(seconds): this test's deadline when it uses a double (0: none); "
        "past it the test fails naming the pending request or process",
    )
    from stuntset.explain._pytest import trace_mode

    trace_mode(config)


def _explain_watch(request: pytest.FixtureRequest, kind: str, double: Any) -> None:
    node = request.node
    timeline = node.stash.get(_TIMELINE, None)
    if timeline is None:
        from stuntset.explain.timeline import Timeline

        mono, wall = node.stash.get(_STARTED, (None, None))
        timeline = node.stash[_TIMELINE] = Timeline(mono_ns=mono, wall_ns=wall)
    timeline.watch(kind, double)


@pytest.hookimpl(specname="pytest_runtest_setup", wrapper=True, tryfirst=True)
def pytest_runtest_setup_explain(item: pytest.Item) -> Any:
    item.stash[_STARTED] = (time.monotonic_ns(), time.time_ns())
    return (yield)


@pytest.hookimpl(specname="pytest_runtest_call", wrapper=True, tryfirst=True)
def pytest_runtest_call_explain(item: pytest.Item) -> Any:
    timeline = item.stash.get(_TIMELINE, None)
    if timeline is None:
        return (yield)
    from stuntset.explain._pytest import deadline_for
    from stuntset.providers.base import watch_events

    with deadline_for(item, timeline), timeline.runs.watching(watch_events):
        return (yield)


@pytest.hookimpl(specname="pytest_runtest_makereport", wrapper=True)
def pytest_runtest_makereport_explain(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    timeline = item.stash.get(_TIMELINE, None)
    if timeline is not None:
        from stuntset.explain._pytest import explain_report

        explain_report(item, report, timeline, item.stash.setdefault(_EXPLAINED, {}))
    return report
