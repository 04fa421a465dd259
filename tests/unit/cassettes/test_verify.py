from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from stuntset.cassettes import (
    Cassette,
    Frame,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    verify_tree,
    write_cassette,
)
from stuntset.cassettes.verify import SKIP_MARKER, Problem
from stuntset.cli import main


def recording() -> Cassette:
    return Cassette(
        interactions=[
            Interaction(
                id="i-1",
                wire="anthropic.messages",
                request=RecordedRequest(
                    method="POST", path="/v1/messages", body={"model": "claude-x", "messages": []}
                ),
                response=RecordedResponse(
                    status=200,
                    frames=[
                        Frame(t=0.25, event="message_start", data="{}"),
                        Frame(t=0.5, event="message_stop", data="{}"),
                    ],
                ),
            )
        ]
    )


def test_verify_passes_a_clean_tree_and_flags_leaks_and_broken_files(tmp_path: Path) -> None:
    write_cassette(tmp_path / "cassettes" / "ok.jsonl", recording())
    (tmp_path / "notes.json").write_text('{"unrelated": true}')
    assert verify_tree(tmp_path) == (1, [])
    (tmp_path / "events.jsonl").write_text('{"text":"' + "sk-" + "ant-" + "z" * 30 + '"}\n')
    broken = tmp_path / "cassettes" / "broken.json"
    broken.write_bytes((tmp_path / "cassettes" / "ok.jsonl").read_bytes()[:-5])
    checked, problems = verify_tree(tmp_path)
    assert checked == 3
    messages = sorted(f"{Path(p.path).name}: {p.message}" for p in problems)
    assert messages[0].startswith("broken.json: ")
    assert "not valid JSON" in messages[0]
    assert messages[1] == "events.jsonl: line 1, column 10: looks like a anthropic-key (sk-ant…)"


def test_cli_verify_and_show(tmp_path: Path) -> None:
    path = write_cassette(tmp_path / "ok.jsonl", recording())
    runner = CliRunner()
    result = runner.invoke(main, ["cassettes", "verify", str(tmp_path)])
    assert result.exit_code == 0
    assert "checked 1 cassette/JSONL file(s): 0 problem(s)" in result.output
    result = runner.invoke(main, ["cassettes", "show", "--frames", str(path)])
    assert result.exit_code == 0, result.output
    assert "i-1 anthropic.messages: POST /v1/messages → 200" in result.output
    assert "model claude-x" in result.output
    assert "2 frame(s), first after 250 ms, last after 500 ms" in result.output
    assert "message_start: {}" in result.output
    (tmp_path / "leak.jsonl").write_text('{"auth":"Bearer ' + "q" * 40 + '"}\n')
    result = runner.invoke(main, ["cassettes", "verify", str(tmp_path)])
    assert result.exit_code == 1
    assert "leak.jsonl: line 1, column 10: looks like a bearer-token" in result.output
    result = runner.invoke(main, ["cassettes", "show", str(tmp_path / "nope.jsonl")])
    assert result.exit_code == 2
    assert "no such cassette" in result.output


HEADER = '{"format":"stuntset-cassette","kind":"header","version":1}\n'


def test_verify_validates_cassettes_as_the_loader_does(tmp_path: Path) -> None:
    """What it passed before: a truncated header, a BOM, binary garbage, a version as a string
    (found by the format's name on the first line), and in a named file anything at all."""
    (tmp_path / "cut.jsonl").write_text('{"format":"stuntset-cassette","kind":"hea')
    (tmp_path / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + HEADER.encode())
    (tmp_path / "garbage.jsonl").write_bytes(bytes(range(256)))
    (tmp_path / "string.jsonl").write_text(HEADER.replace('"version":1', '"version":"1"'))
    (tmp_path / "empty.jsonl").write_text("")  # a JSONL file of no records: fine in a tree
    checked, problems = verify_tree(tmp_path)
    assert checked == 5
    found = sorted((Path(p.path).name, p.line, p.kind) for p in problems)
    assert found == [
        ("bom.jsonl", 1, "invalid"),
        ("cut.jsonl", 1, "invalid"),
        ("garbage.jsonl", 1, "invalid"),
        ("string.jsonl", 1, "invalid"),
    ]
    assert verify_tree(tmp_path / "empty.jsonl")[1] == [
        Problem(str(tmp_path / "empty.jsonl"), "empty file, not a cassette", "invalid")
    ]


def test_verify_skips_what_is_not_a_regular_file_saying_so(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.jsonl")  # reading it would block forever
    (tmp_path / "gone.jsonl").symlink_to(tmp_path / "nowhere")
    write_cassette(tmp_path / "ok.jsonl", recording())
    checked, problems = verify_tree(tmp_path)
    assert checked == 1
    assert sorted((Path(p.path).name, p.kind, p.message) for p in problems) == [
        ("gone.jsonl", "skipped", "skipped: a dangling symbolic link"),
        ("pipe.jsonl", "skipped", "skipped: not a regular file"),
    ]
    result = CliRunner().invoke(main, ["cassettes", "verify", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert result.stderr.count("note: ") == 2
    # named on the command line, it is an error
    result = CliRunner().invoke(main, ["cassettes", "verify", str(tmp_path / "pipe.jsonl")])
    assert result.exit_code == 2
    assert (
        result.stderr
        == f"error: {tmp_path / 'pipe.jsonl'}: not a regular file: nothing to verify\n"
    )


def test_exit_codes_say_broken_over_leaking(tmp_path: Path) -> None:
    write_cassette(tmp_path / "ok.jsonl", recording())
    (tmp_path / "leak.jsonl").write_text('{"k":"' + "sk-" + "ant-" + "z" * 30 + '"}\n')
    assert CliRunner().invoke(main, ["cassettes", "verify", str(tmp_path)]).exit_code == 1
    (tmp_path / "broken.jsonl").write_text(HEADER + "{\n")
    result = CliRunner().invoke(main, ["cassettes", "verify", str(tmp_path)])
    assert result.exit_code == 2
    assert f"error: {tmp_path / 'broken.jsonl'}:2: not valid JSON" in result.stderr
    assert "leak.jsonl: line 1, column 7: looks like a anthropic-key" in result.stdout


def test_a_folder_marked_hostile_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / SKIP_MARKER).write_text("hostile inputs, broken on purpose\n")
    (tmp_path / "corpus" / "broken.jsonl").write_text("{")
    checked, problems = verify_tree(tmp_path)
    assert checked == 0
    assert [(p.kind, p.message) for p in problems] == [
        ("skipped", f"skipped: the folder holds {SKIP_MARKER}")
    ]


@pytest.mark.parametrize("text", ["", " ", "\n\n", "\t \r\n"])
def test_an_empty_skip_marker_fails_the_gate_instead_of_passing_having_checked_nothing(
    tmp_path: Path, text: str
) -> None:
    (tmp_path / SKIP_MARKER).write_text(text)  # at the root: the whole tree would be skipped
    (tmp_path / "broken.jsonl").write_text("{")
    _, problems = verify_tree(tmp_path)
    assert [(p.kind, p.path) for p in problems] == [("invalid", str(tmp_path / SKIP_MARKER))]
    result = CliRunner().invoke(main, ["cassettes", "verify", str(tmp_path)])
    assert result.exit_code == 2, result.output
