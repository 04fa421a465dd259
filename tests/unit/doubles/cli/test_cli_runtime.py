"""The fake CLIs' start-up-lean runtime: JSON without the json package, seeded ids, stdin
lines, and the import budget of the fake process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

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


def without_coverage() -> dict[str, str]:
    """This process's environment without the suite's coverage hook for the fake CLIs."""
    return {k: v for k, v in os.environ.items() if not k.startswith("STUNTSET_COVERAGE_")}


def probe_modules(tmp_path: Path, *, cut_the_hook: bool = False) -> set[str]:
    """The modules a fake claude process (without this suite's coverage variables) has loaded
    once its program modules are in; ``cut_the_hook``: with the coverage hook cut out of its
    launcher."""
    cli = install_cli("claude", scenarios.build("happy_path"), bin_dir=tmp_path)
    text = cli.path.read_text()
    if cut_the_hook:
        start = text.index('import posix\nif b"STUNTSET_COVERAGE_PROCESS_START"')
        text = text[:start] + text[text.index("from stuntset.doubles.cli._runtime import") :]
    body = text.splitlines()[1:-1]  # the launcher without shebang and main()
    probe = tmp_path / "probe.py"
    probe.write_text(
        "\n".join(body)
        + "\nimport posix, stuntset.doubles.cli.claude._process.run, stuntset.doubles.cli.claude._process.turn"
        + "\nimport stuntset.doubles.cli.claude._process.faults"
        + "\nposix.write(1, '\\n'.join(sorted(sys.modules)).encode())\n"
    )
    out = subprocess.run(
        [sys.executable, "-IS", str(probe)],
        capture_output=True,
        text=True,
        check=True,
        env=without_coverage(),
    )
    return set(out.stdout.splitlines())


def test_the_fake_process_imports_only_the_runtime(tmp_path: Path) -> None:
    loaded = probe_modules(tmp_path)
    assert "stuntset.doubles.cli._runtime" in loaded
    heavy = ("json", "re", "typing", "enum", "os", "msgspec", "stuntset.script", "signal")
    for name in (*heavy, "coverage", "dataclasses", "pathlib", "tempfile"):
        assert name not in loaded, name
    # of stuntset: the runtime and the program (its packages are bare path entries), never
    # the installer, the package __init__s' code or anything the test process uses
    ours = {name for name in loaded if name.startswith("stuntset.")}
    program = "stuntset.doubles.cli.claude._process"
    assert "stuntset.doubles.cli._install" not in ours
    packages = {"stuntset.doubles", "stuntset.doubles.cli", "stuntset.doubles.cli.claude", program}
    others = ours - packages - {"stuntset.doubles.cli._runtime"}
    assert {name for name in others if not name.startswith(f"{program}.")} == set()


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


def test_the_coverage_hook_costs_a_user_spawn_no_import(tmp_path: Path) -> None:
    """The launcher's hook for this suite's coverage is one lookup in ``posix.environ``:
    without its variable the process loads exactly what it loads with the hook cut out."""
    with_hook = probe_modules(tmp_path / "with")
    assert with_hook == probe_modules(tmp_path / "cut", cut_the_hook=True)


def test_with_the_variables_the_fake_process_measures_itself(tmp_path: Path) -> None:
    import coverage

    rc = tmp_path / "subprocess.ini"
    rc.write_text(
        f"[run]\nbranch = true\nparallel = true\ndata_file = {tmp_path / '.coverage'}\n"
        f"source = {Path(install_cli.__code__.co_filename).parents[1]}\n"
    )
    env = {
        **without_coverage(),
        "STUNTSET_COVERAGE_PROCESS_START": str(rc),
        "STUNTSET_COVERAGE_PATH": str(Path(coverage.__file__).parents[1]),
    }
    cli = install_cli("claude", scenarios.build("happy_path"), bin_dir=tmp_path / "bin")
    done = subprocess.run([cli.path, "-p", "hi"], capture_output=True, env=env, check=False)
    assert (done.returncode, done.stderr) == (0, b"")  # measuring says nothing on stderr
    (data_path,) = tmp_path.glob(".coverage.*")  # saved by the process before posix._exit
    data = coverage.CoverageData(basename=str(data_path))
    data.read()
    measured = {Path(name).as_posix() for name in data.measured_files()}
    for wanted in ("cli/_runtime.py", "claude/_process/run.py", "claude/_process/turn.py"):
        assert any(name.endswith(wanted) for name in measured), wanted


def test_a_partial_folder_keeps_the_data_away_until_it_is_whole(tmp_path: Path) -> None:
    """With ``STUNTSET_COVERAGE_PARTIAL`` the process saves into a folder of its own and only
    then renames the file beside the run's data: a process killed while saving can leave a
    half-written file in that folder, never one that ``coverage combine`` reads."""
    import coverage

    rc = tmp_path / "subprocess.ini"
    rc.write_text(
        f"[run]\nbranch = true\nparallel = true\ndata_file = {tmp_path / '.coverage'}\n"
        f"source = {Path(install_cli.__code__.co_filename).parents[1]}\n"
    )
    partial = tmp_path / "partial"
    partial.mkdir()
    env = {
        **without_coverage(),
        "STUNTSET_COVERAGE_PROCESS_START": str(rc),
        "STUNTSET_COVERAGE_PATH": str(Path(coverage.__file__).parents[1]),
        "STUNTSET_COVERAGE_PARTIAL": str(partial),
        "STUNTSET_COVERAGE_DATA": str(tmp_path / ".coverage"),
    }
    cli = install_cli("claude", scenarios.build("happy_path"), bin_dir=tmp_path / "bin")
    done = subprocess.run([cli.path, "-p", "hi"], capture_output=True, env=env, check=False)
    assert (done.returncode, done.stderr) == (0, b"")
    (data_path,) = tmp_path.glob(".coverage.*")
    assert list(partial.iterdir()) == []  # its own folder is gone once the file is in place
    data = coverage.CoverageData(basename=str(data_path))
    data.read()
    assert any(Path(n).as_posix().endswith("cli/_runtime.py") for n in data.measured_files())


def test_a_request_without_a_turn_is_explained_either_way() -> None:
    from stuntset.doubles.cli._runtime import no_turn_message

    class Plan:  # the Runtime's part it reads: the plan, and a turn read on demand
        def __init__(self) -> None:
            self.plan = {"script": "s", "turn_count": 2}

        def turn(self, index: int) -> dict[str, Any]:
            return [{"describe": "contains 'a'", "times": 1}, {"describe": "any", "times": 1}][
                index
            ]

    rt: Any = Plan()
    state: dict[str, Any] = {"first": 2, "used": {}}
    used_up = no_turn_message(state, rt, 3, "hi", "m", "claude")
    assert used_up == (
        "script 's' has no turn for request #3 (input 'hi', model 'm', wire 'claude'): all 2 "
        "turns were used. The code under test made more requests than scripted: add a turn, or "
        "use times=N for repeats."
    )
    state.update(first=0, used={"1": 1})
    unmatched = no_turn_message(state, rt, 4, "x" * 100, "m", "codex")
    assert unmatched.endswith("no remaining turn matches it. Remaining:\n  turn 0: contains 'a'")
    assert f"input '{'x' * 77}...'" in unmatched
    assert state["exhausted"] == [used_up, unmatched]


def test_a_turn_is_found_from_the_cursor_without_looking_at_the_used_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fake's spawn must not grow with the script: the turns before the first with uses
    left are neither looked at nor kept in the shared state."""
    from stuntset.doubles.cli import _runtime

    looked: list[object] = []
    accepts = _runtime.accepts

    def counting(match: Any, *args: Any) -> bool:
        looked.append(match)
        return accepts(match, *args)

    # lint-mocks: allow a spy: it calls the real matcher, only to count the turns looked at
    monkeypatch.setattr(_runtime, "accepts", counting)

    class Rt:
        def __init__(self) -> None:
            self.plan = {"script": "s", "turn_count": 200}
            self.state = _runtime.SharedState(str(tmp_path))
            self.read: list[int] = []

        def turn(self, index: int) -> dict[str, Any]:
            self.read.append(index)
            return {"times": 1, "match": None, "describe": "any"}

    rt: Any = Rt()
    for expected in range(200):
        assert _runtime.take_turn(rt, "hi", "m", "claude") == (expected, None)
    assert len(looked) == 200  # one turn looked at per request
    assert len(rt.read) <= 3 * 200  # and read a few times each (the Runtime caches them)
    state = rt.state.update(lambda state: dict(state))
    assert (state["first"], state["used"]) == (200, {})


def test_turn_uses_left_and_given_back_across_the_cursor(tmp_path: Path) -> None:
    from stuntset.doubles.cli import _runtime

    times = [1, 2, 1]

    matches = [None, {"contains": "b"}, None]

    class Rt:
        def __init__(self) -> None:
            self.plan = {"script": "s", "turn_count": 3}
            self.state = _runtime.SharedState(str(tmp_path))

        def turn(self, index: int) -> dict[str, Any]:
            return {"times": times[index], "match": matches[index], "describe": "-"}

    rt: Any = Rt()
    taken = [_runtime.take_turn(rt, prompt, "m", "claude")[0] for prompt in "aabb"]
    assert taken == [0, 2, 1, 1]
    state = rt.state.update(lambda state: dict(state))
    assert (state["first"], state["used"]) == (3, {})
    assert _runtime.turns_left(state, times) == [0, 0, 0]
    rt.state.update(lambda state: _runtime.give_back(state, rt, 1))
    state = rt.state.update(lambda state: dict(state))
    assert _runtime.turns_left(state, times) == [0, 1, 0]
    assert _runtime.take_turn(rt, "b", "m", "claude") == (1, None)
    assert _runtime.take_turn(rt, "b", "m", "claude")[0] == -1
