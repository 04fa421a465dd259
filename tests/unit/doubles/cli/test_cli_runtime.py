"""The fake CLIs' start-up-lean runtime: JSON without the json package, seeded ids, stdin
lines, and the import budget of the fake process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stuntset import scenarios
from stuntset.doubles.cli import install_cli
from stuntset.doubles.cli._runtime import EOF, Ids, Lines, dumps, loads


@pytest.mark.parametrize(
    "value",
    [{"a": [1, 2.5, None, True, 'é\n"x"']}, [], "text", 0, {"nested": {"k": [{}]}}],
)
def test_json_round_trips_like_the_json_package(value: object) -> None:
    assert loads(dumps(value)) == value
    assert loads(json.dumps(value)) == value
    assert dumps(value) == json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@pytest.mark.parametrize(
    "text", ["", "{", '{"a": 1} x', "NaN", '"unterminated', '{"a": "bad \\x"}', "[1,]"]
)
def test_bad_json_is_a_value_error(text: str) -> None:
    with pytest.raises(ValueError, match=r"\w"):
        loads(text)


def test_ids_are_deterministic_per_seed_and_stream() -> None:
    first, again, other = Ids(7, "s"), Ids(7, "s"), Ids(8, "s")
    uuids = [first.uuid() for _ in range(3)]
    assert uuids == [again.uuid() for _ in range(3)]
    assert uuids[0] != other.uuid()
    assert len(set(uuids)) == 3
    assert uuids[0][14] == "4"
    assert uuids[0][19] in "89ab"
    assert Ids(1, "x").token("toolu_01").startswith("toolu_01")


def test_lines_split_waits_and_report_eof() -> None:
    read, write = os.pipe()
    reader = Lines(read)
    assert reader.next(0.0) is None
    os.write(write, b"one\ntw")
    assert reader.next(None) == b"one"
    os.write(write, b"o\nthree")
    os.close(write)
    assert reader.next(None) == b"two"
    assert reader.next(None) == b"three"  # an unterminated last line still counts
    assert reader.next(None) is EOF
    os.close(read)


def test_the_fake_process_imports_only_the_runtime(tmp_path: Path) -> None:
    cli = install_cli("claude", scenarios.build("happy_path"), bin_dir=tmp_path)
    body = cli.path.read_text().splitlines()[1:-1]  # the launcher without shebang and main()
    probe = tmp_path / "probe.py"
    probe.write_text(
        "\n".join(body)
        + "\nimport posix, stuntset.doubles.cli._claude_run, stuntset.doubles.cli._claude_turn"
        + "\nimport stuntset.doubles.cli._claude_faults"
        + "\nposix.write(1, '\\n'.join(sorted(sys.modules)).encode())\n"
    )
    out = subprocess.run(
        [sys.executable, "-IS", str(probe)], capture_output=True, text=True, check=True
    )
    loaded = set(out.stdout.splitlines())
    assert "stuntset.doubles.cli._runtime" in loaded
    for heavy in ("json", "re", "typing", "enum", "os", "msgspec", "stuntset.script", "signal"):
        assert heavy not in loaded, heavy


@pytest.mark.parametrize(
    ("damage", "words"),
    [
        ("remove", "no such file"),
        ("garbage", "corrupt (not a plan written by stuntset.install_cli)"),
        ("empty", "corrupt"),
        ("not_a_plan", "not a plan"),
    ],
)
def test_a_missing_or_corrupt_plan_file_is_one_line_and_exit_2(
    tmp_path: Path, damage: str, words: str
) -> None:
    import marshal

    cli = install_cli("claude", scenarios.build("happy_path"), bin_dir=tmp_path / "bin")
    plan = Path(cli.state_dir) / "plan.marshal"
    if damage == "remove":
        plan.unlink()
    elif damage == "garbage":
        plan.write_bytes(b"\xff\x00garbage")
    elif damage == "empty":
        plan.write_bytes(b"")
    else:
        plan.write_bytes(marshal.dumps([1, 2, 3]))
    done = subprocess.run(
        [str(cli.path), "-p", "hi"], capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 2
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"stuntset fake CLI: plan file {plan}: ")
    assert words in line
    assert "Traceback" not in done.stderr
