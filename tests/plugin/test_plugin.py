"""The pytest plugin, driven through pytester (a pytest run inside the test)."""

from __future__ import annotations

from pathlib import Path

import pytest

#: Plugins the inner runs do not need; hypothesis's terminal summary alone costs seconds there.
QUIET = ("-p", "no:hypothesispytest", "-p", "no:respx", "-p", "no:cacheprovider")


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(*QUIET, *args)


PLAY = """
import anyio
import pytest
from stuntset import drive, events, scenarios
from stuntset.providers import ScriptedProvider

def play(provider):
    async def main():
        return await drive(provider.start("hello"))
    return events.encode_lines(anyio.run(main))
"""


def test_help_shows_the_option_group(pytester: pytest.Pytester) -> None:
    result = run(pytester, "--help")
    result.stdout.fnmatch_lines(
        ["stuntset: doubles and checks for agent software:", "*--live*real providers*"]
    )


def test_markers_are_registered(pytester: pytest.Pytester) -> None:
    result = run(pytester, "--markers")
    result.stdout.fnmatch_lines(
        [
            "@pytest.mark.live(env=NAME | ?NAMES?):*",
            "@pytest.mark.real_time:*",
            "@pytest.mark.scripted_provider(*",
        ]
    )


LIVE = """
import pytest

@pytest.mark.live(env="NO_SUCH_KEY")
def test_needs_a_key():
    pass

@pytest.mark.live(env=["STUNTSET_TEST_KEY"])
def test_has_a_key():
    pass

def test_plain():
    pass
"""


def test_live_tests_are_deselected_by_default(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(LIVE)
    result = run(pytester)
    result.assert_outcomes(passed=1, deselected=2)


def test_live_run_skips_where_the_key_is_missing(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NO_SUCH_KEY", raising=False)
    monkeypatch.setenv("STUNTSET_TEST_KEY", "sk-test")
    pytester.makepyfile(LIVE)
    result = run(pytester, "--live", "-rs")
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines(["*SKIPPED*live test needs NO_SUCH_KEY set in the environment*"])


def test_live_without_env_is_a_clear_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("import pytest\n@pytest.mark.live\ndef test_x(): pass\n")
    result = run(pytester, "--live")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*@pytest.mark.live needs env=NAME*"])


DETERMINISM = (
    PLAY
    + """
import sys
from pathlib import Path
from stuntset.clock import FakeClock, SystemClock
from stuntset.seams import current_clock

OUT = Path(sys.argv[0]).parent if False else Path(__file__).parent

@pytest.mark.parametrize("copy", range(3))
def test_turn(copy):
    assert isinstance(current_clock(), FakeClock)
    (OUT / f"events-{copy}.jsonl").write_bytes(play(ScriptedProvider(scenarios.build("interleaved_streaming"))))

@pytest.mark.real_time
def test_real_time():
    assert isinstance(current_clock(), SystemClock)
"""
)


def _outputs(path: Path) -> list[bytes]:
    return [(path / f"events-{i}.jsonl").read_bytes() for i in range(3)]


@pytest.mark.slow
def test_event_json_is_byte_identical_across_runs_and_workers(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(DETERMINISM)
    run(pytester).assert_outcomes(passed=4)
    serial = _outputs(pytester.path)
    assert serial[0] == serial[1] == serial[2]
    assert b'"run_id":"run-1"' in serial[0]
    assert b'"ts":1767225600.0' in serial[0]
    for i in range(3):
        (pytester.path / f"events-{i}.jsonl").unlink()
    pytester.runpytest_subprocess(*QUIET, "-n", "2").assert_outcomes(passed=4)
    assert _outputs(pytester.path) == serial


FIXTURES = (
    PLAY
    + """
from stuntset.script import Script, Text

@pytest.mark.scripted_provider("happy_path", text="Hi there")
def test_by_scenario(scripted_provider):
    assert b'"text":"Hi there"' in play(scripted_provider)

@pytest.mark.scripted_provider(Script.of([Text("from a script")]))
def test_by_script(scripted_provider):
    assert b"from a script" in play(scripted_provider)

@pytest.mark.scripted_provider("script.toml", model="m-1")
def test_by_file(scripted_provider):
    assert b'"model":"m-1"' in play(scripted_provider)

@pytest.mark.scripted_provider("multi_turn", turns=2)
def test_unused_turns_fail(scripted_provider):
    play(scripted_provider)

@pytest.mark.scripted_provider("multi_turn", turns=2, allow_unused_turns=True)
def test_unused_turns_allowed(scripted_provider):
    play(scripted_provider)

def test_unconfigured(scripted_provider):
    pass

def test_stuck(stuck_provider):
    async def main():
        run = stuck_provider.start("x")
        return await drive(run, interrupt_when=lambda e: True)
    assert anyio.run(main)[-1].type == "run.killed"
"""
)


def test_scripted_provider_fixture_configured_by_its_marker(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(FIXTURES)
    (pytester.path / "script.toml").write_text("[[turns]]\nsteps = [{ text = 'from a file' }]\n")
    result = run(pytester)
    result.assert_outcomes(passed=6, errors=2)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_unused_turns_fail*",
            "*1 scripted turn(s) were never requested*",
            "*allow_unused_turns=True*",
            "*ERROR at setup of test_unconfigured*",
            "*the scripted_provider fixture needs a script*",
        ]
    )


def test_script_can_come_from_an_overridden_fixture(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        "import pytest\nfrom stuntset import scenarios\n"
        "@pytest.fixture\ndef stuntset_script():\n    return scenarios.build('tool_use')\n"
    )
    pytester.makepyfile(
        PLAY
        + "\ndef test_it(scripted_provider):\n    assert b'read_file' in play(scripted_provider)\n"
    )
    run(pytester).assert_outcomes(passed=1)


def test_bad_marker_arguments_are_usage_errors(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        "import pytest\nfrom stuntset.script import Script\n"
        "@pytest.mark.scripted_provider(42)\ndef test_a(scripted_provider): pass\n"
        "@pytest.mark.scripted_provider(Script(), text='x')\ndef test_b(scripted_provider): pass\n"
        "@pytest.mark.scripted_provider('no_such')\ndef test_c(scripted_provider): pass\n"
    )
    result = run(pytester)
    result.assert_outcomes(errors=3)
    result.stdout.fnmatch_lines(
        [
            "*expected a Script, a scenario name or a .toml/.json path, got 42*",
            "*scenario parameters ?'text'? given with a Script*",
            "*no scenario named 'no_such'*",
        ]
    )


def test_fixtures_expose_the_seams(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        "from stuntset.clock import FakeClock\n"
        "def test_seams(stuntset_clock, stuntset_ids):\n"
        "    assert isinstance(stuntset_clock, FakeClock)\n"
        "    assert stuntset_ids.new('x') == 'x-1'\n"
    )
    run(pytester).assert_outcomes(passed=1)


CONFORMANCE = """
from stuntset.providers import ScriptedProvider, StuckProvider

def test_the_scripted_provider_conforms(provider_conformance):
    report = provider_conformance(ScriptedProvider, timeout=5.0)
    assert report.outcomes()["happy_path"].terminal == "run.completed"
    assert report.outcomes()["stuck"].stalled_by == "events"

def test_a_provider_that_never_finishes_does_not(provider_conformance):
    # real time: the run hangs until the 0.2 s bound the check must enforce
    provider_conformance(lambda script: StuckProvider(), scenarios=["happy_path"], timeout=0.2)
"""


def test_the_provider_conformance_fixture_passes_and_fails(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_conf=CONFORMANCE)
    result = run(pytester)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*ConformanceFailure*terminates*"])
