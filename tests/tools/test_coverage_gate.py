"""The coverage gate `make test` runs: it fails on a file under its bar and on a low total."""

from __future__ import annotations

from pathlib import Path

import pytest
from coverage import CoverageData
from coverage_gate import main

SOURCE = "def f(x):\n    if x:\n        return 1\n    return 2\n"


def data_file(tmp_path: Path, *, covered: dict[str, list[tuple[int, int]]]) -> str:
    """A data file with the branch arcs ``covered`` for modules with SOURCE's four lines."""
    data = CoverageData(basename=str(tmp_path / ".coverage"))
    arcs = {}
    for name, taken in covered.items():
        path = tmp_path / name
        path.write_text(SOURCE)
        arcs[str(path)] = taken
    data.add_arcs(arcs)
    data.write()
    return str(tmp_path / ".coverage")


FULL = [(-1, 1), (1, -1), (-1, 2), (2, 3), (3, -1), (2, 4), (4, -1)]
HALF = [(-1, 1), (1, -1), (-1, 2), (2, 3), (3, -1)]  # never takes the x-is-false branch


def test_passes_when_every_file_and_the_total_clear_their_bars(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = data_file(tmp_path, covered={"a.py": FULL, "b.py": FULL})
    assert main(["--total", "95", "--file", "90", "--data", data]) == 0
    assert "coverage gate passed" in capsys.readouterr().out


def test_fails_naming_the_file_under_the_per_file_bar(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = data_file(tmp_path, covered={"a.py": FULL, "b.py": HALF})
    assert main(["--total", "50", "--file", "90", "--data", data]) == 1
    captured = capsys.readouterr()
    assert "b.py" in captured.err
    assert "a.py" not in captured.err
    assert "b.py" in captured.out.splitlines()[1]  # the lowest file comes first


def test_fails_on_a_total_under_its_bar(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = data_file(tmp_path, covered={"a.py": FULL, "b.py": HALF})
    assert main(["--total", "95", "--file", "50", "--data", data]) == 1
    assert "total:" in capsys.readouterr().err


def test_without_data_it_says_how_to_get_some(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--total", "95", "--file", "90", "--data", str(tmp_path / "none")]) == 2
    assert "run pytest with --cov" in capsys.readouterr().err
