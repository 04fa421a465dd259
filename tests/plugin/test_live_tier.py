"""The live tier: ``claude_bin``/``codex_bin`` run the double by default and, in a live test
under ``--live``, the real binary that ``STUNTSET_CLAUDE_BIN``/``STUNTSET_CODEX_BIN`` names;
one scenario file runs on both. Offline: the "real" binary here is a fake claude installed by
the outer test, and the proof is that it is the one spawned."""

from __future__ import annotations

import pytest

QUIET = ("-p", "no:hypothesispytest", "-p", "no:respx", "-p", "no:cacheprovider")

SCENARIO = "[[turns]]\nsteps = [{ text = 'hello from the scenario' }]\n"

#: One scenario file, run on the doubles always and on the real binaries under --live.
TESTS = """
import json
import subprocess

import pytest

TIERS = ["doubles", pytest.param("live", marks=pytest.mark.live(env="ANTHROPIC_API_KEY"))]


@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.fake_claude("scenarios/hello.toml")
def test_claude_says_hello(tier, claude_bin):
    done = subprocess.run(
        [str(claude_bin), "-p", "say hello", "--output-format", "stream-json", "--verbose"],
        capture_output=True, text=True, timeout=300, check=True,
    )
    messages = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert messages[-1]["type"] == "result"
    assert not messages[-1]["is_error"]
    print("SPAWNED", claude_bin)


@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.fake_codex("scenarios/hello.toml", allow_unused_turns=True)
def test_codex_is_chosen(tier, codex_bin):
    print("CODEX", codex_bin)
"""


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for name in ("ANTHROPIC_API_KEY", "STUNTSET_CLAUDE_BIN", "STUNTSET_CODEX_BIN"):
        monkeypatch.delenv(name, raising=False)
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / "hello.toml").write_text(SCENARIO)
    pytester.makepyfile(test_hello=TESTS)
    return pytester


def test_by_default_only_the_doubles_half_runs(suite: pytest.Pytester) -> None:
    result = suite.runpytest(*QUIET, "-s")
    result.assert_outcomes(passed=2, deselected=2)
    result.stdout.fnmatch_lines(["*SPAWNED */bin/claude*", "*CODEX */bin/codex*"])


def test_live_without_the_key_skips_the_live_half_saying_why(suite: pytest.Pytester) -> None:
    result = suite.runpytest(*QUIET, "--live", "-rs")
    result.assert_outcomes(passed=2, skipped=2)
    result.stdout.fnmatch_lines(["*live test needs ANTHROPIC_API_KEY set in the environment*"])


def test_live_without_a_binary_skips_naming_the_variable(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-used")
    result = suite.runpytest(*QUIET, "--live", "-rs")
    result.assert_outcomes(passed=2, skipped=2)
    result.stdout.fnmatch_lines(
        [
            "*live test needs STUNTSET_CLAUDE_BIN set to the real claude executable*",
            "*live test needs STUNTSET_CODEX_BIN set to the real codex executable*",
        ]
    )


@pytest.mark.fake_claude("scenarios/real.toml")
def test_live_runs_the_binary_the_variable_names(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, fake_claude: object
) -> None:
    # fake_claude's marker path resolves beside this file: give it the scenario there
    real = fake_claude.path  # type: ignore[attr-defined]
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-used")
    monkeypatch.setenv("STUNTSET_CLAUDE_BIN", str(real))
    monkeypatch.setenv("STUNTSET_CODEX_BIN", "codex-that-is-not-installed")
    result = suite.runpytest(*QUIET, "--live", "-s", "-k", "claude and live")
    result.assert_outcomes(passed=1, deselected=3)
    result.stdout.fnmatch_lines([f"*SPAWNED {real}"])
    [spawned] = fake_claude.invocations  # type: ignore[attr-defined]
    assert spawned.argv[:2] == ["-p", "say hello"]


def test_a_variable_naming_no_executable_errors_naming_it(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-used")
    monkeypatch.setenv("STUNTSET_CODEX_BIN", "codex-that-is-not-installed")
    result = suite.runpytest(*QUIET, "--live", "-k", "codex and live")
    result.assert_outcomes(errors=1, deselected=3)
    result.stdout.fnmatch_lines(
        [
            "*test_codex_is_chosen[[]live[]]: STUNTSET_CODEX_BIN='codex-that-is-not-installed' is "
            "not an executable file (give the path of the real codex binary, or its name on PATH)*"
        ]
    )
