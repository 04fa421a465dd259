"""A test's cassette session and the CLIs it hands out: record through a tee (written only if
the test passed), replay from the transcript beside the HTTP cassette, or pass the real
program through — the four modes, for a stand-in "real" program."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from stuntset.cassettes import load_cassette
from stuntset.cassettes.replay import CassetteMismatch, UnusedInteractions
from stuntset.cassettes.session import CassetteSession
from stuntset.errors import UsageError

#: The "real" program: answers each stdin line with its upper-cased text, as JSON, and counts
#: its runs in ``shout.runs`` beside itself.
REAL = """\
import json, sys
with open(__file__ + ".runs", "a") as runs:
    runs.write("run\\n")
for line in sys.stdin:
    print(json.dumps({"echo": line.strip().upper()}), flush=True)
"""


@pytest.fixture
def real(tmp_path: Path) -> Path:
    path = tmp_path / "real" / "shout"
    path.parent.mkdir()
    path.write_text(f"#!{sys.executable}\n{REAL}")
    path.chmod(0o755)
    return path


def runs(real: Path) -> int:
    """How often the real program ran."""
    counter = real.with_name(real.name + ".runs")
    return len(counter.read_text().splitlines()) if counter.exists() else 0


def shout(program: Path, *lines: str) -> list[str]:
    done = subprocess.run(
        [str(program), "--loud"],
        input="".join(f"{line}\n" for line in lines).encode(),
        capture_output=True,
        check=True,
    )
    return [json.loads(line)["echo"] for line in done.stdout.splitlines()]


def test_refresh_records_then_replay_serves_it(tmp_path: Path, real: Path) -> None:
    path = tmp_path / "cassettes" / "test_it.jsonl"
    session = CassetteSession(path, mode="refresh")
    assert shout(session.cli("shout", real), "hi", "there") == ["HI", "THERE"]
    session.close()
    transcript = session.cli_path("shout")
    assert transcript == tmp_path / "cassettes" / "test_it.shout.jsonl"
    (run,) = load_cassette(transcript).interactions
    assert (run.wire, run.request.body["argv"]) == ("shout-cli", ["--loud"])

    replaying = CassetteSession(path)  # no HTTP cassette: fine while only the CLI is used
    fake = replaying.cli("shout")
    assert fake != real
    assert shout(fake, "hi", "there") == ["HI", "THERE"]
    assert runs(real) == 1  # only while recording
    replaying.close()
    assert not fake.exists()  # the session's scratch directory is gone
    with pytest.raises(UsageError, match=r"no cassette at .*test_it.jsonl"):
        replaying.client_options()


def test_a_failed_test_writes_nothing_and_keeps_the_old_transcript(
    tmp_path: Path, real: Path
) -> None:
    path = tmp_path / "test_it.jsonl"
    first = CassetteSession(path, mode="refresh")
    shout(first.cli("shout", real), "one")
    first.close()
    before = first.cli_path("shout").read_bytes()
    second = CassetteSession(path, mode="refresh")
    shout(second.cli("shout", real), "two")
    second.close(failed=True)
    assert first.cli_path("shout").read_bytes() == before


def test_record_mode_records_only_what_is_missing(tmp_path: Path, real: Path) -> None:
    path = tmp_path / "test_it.jsonl"
    recording = CassetteSession(path, mode="record")
    assert shout(recording.cli("shout", real), "x") == ["X"]
    recording.close()
    assert runs(real) == 1
    again = CassetteSession(path, mode="record")
    assert shout(again.cli("shout", real), "x") == ["X"]  # there now: replayed
    again.close()
    assert runs(real) == 1


def test_off_hands_out_the_real_program(real: Path, tmp_path: Path) -> None:
    session = CassetteSession(tmp_path / "t.jsonl", mode="off", upstream="http://127.0.0.1:9")
    assert session.cli("shout", real) == real
    session.close()


def test_replay_fails_on_unused_runs_and_on_what_departs(tmp_path: Path, real: Path) -> None:
    path = tmp_path / "test_it.jsonl"
    session = CassetteSession(path, mode="refresh")
    shout(session.cli("shout", real), "hi")
    session.close()

    unused = CassetteSession(path)
    unused.cli("shout")
    with pytest.raises(UnusedInteractions, match=r"1 recorded shout invocation\(s\) were never"):
        unused.close()

    allowed = CassetteSession(path, allow_unused=["i-1"])
    allowed.cli("shout")
    allowed.close()

    departed = CassetteSession(path)
    with pytest.raises(subprocess.CalledProcessError):
        shout(departed.cli("shout"), "bye")
    # the test failed; the cause is still reported
    with pytest.raises(
        CassetteMismatch, match=r"stdin line 1 differs .*\n  line: recorded hi, got bye"
    ):
        departed.close(failed=True)


def test_missing_transcripts_and_programs_are_named(tmp_path: Path, real: Path) -> None:
    path = tmp_path / "test_it.jsonl"
    with pytest.raises(UsageError, match=r"no cassette at"):
        CassetteSession(path)  # nothing at all recorded for this test
    (tmp_path / "test_it.other.jsonl").write_text("")
    session = CassetteSession(path)
    with pytest.raises(UsageError, match=r"no shout transcript at .*test_it.shout.jsonl"):
        session.cli("shout")
    recording = CassetteSession(path, mode="refresh")
    with pytest.raises(UsageError, match=r"recording no-such-tool needs the real program"):
        recording.cli("no-such-tool")
    with pytest.raises(UsageError, match=r"mode 'refresh' needs the real upstream"):
        recording.base_url  # noqa: B018
