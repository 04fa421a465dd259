"""Every marker that takes a script path finds a relative one beside the test file, whatever
the directory pytest runs from."""

from __future__ import annotations

import pytest

QUIET = ("-p", "no:hypothesispytest", "-p", "no:respx", "-p", "no:cacheprovider")

TESTS = """
import pytest

@pytest.mark.scripted_provider("scripts/x.toml", allow_unused_turns=True)
def test_provider(scripted_provider):
    assert scripted_provider.player.unused()

@pytest.mark.stand_in("scripts/x.toml", allow_unused_turns=True)
def test_stand_in(stand_in):
    assert stand_in.double.script.turns[0].steps[0].text == "from a file"

@pytest.mark.fake_claude("scripts/x.toml", allow_unused_turns=True)
def test_claude(fake_claude):
    assert fake_claude.path.exists()

@pytest.mark.fake_codex("scripts/x.toml", allow_unused_turns=True)
def test_codex(fake_codex):
    assert fake_codex.path.exists()

def test_call(fake_claude):
    fake_claude("scripts/x.toml", allow_unused_turns=True)
"""


def test_relative_marker_paths_resolve_against_the_test_file(pytester: pytest.Pytester) -> None:
    area = pytester.path / "tests" / "area"
    (area / "scripts").mkdir(parents=True)
    (area / "scripts" / "x.toml").write_text("[[turns]]\nsteps = [{ text = 'from a file' }]\n")
    (area / "test_paths.py").write_text(TESTS)
    result = pytester.runpytest(*QUIET, "tests/area/test_paths.py")
    result.assert_outcomes(passed=5)


def test_a_missing_file_names_every_place_looked(pytester: pytest.Pytester) -> None:
    area = pytester.path / "tests"
    area.mkdir()
    (area / "test_missing.py").write_text(
        "import pytest\n\n"
        '@pytest.mark.stand_in("scripts/nope.toml")\n'
        "def test_a(stand_in):\n    pass\n"
    )
    result = pytester.runpytest(*QUIET, "tests/test_missing.py")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            f"*tests/test_missing.py::test_a: no script file 'scripts/nope.toml'; looked in "
            f"{area}/scripts/nope.toml, {pytester.path}/scripts/nope.toml*"
        ]
    )
