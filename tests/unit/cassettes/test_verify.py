from __future__ import annotations

from pathlib import Path

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
