from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from stuntset.cassettes import (
    Cassette,
    Frame,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    write_cassette,
)
from stuntset.cassettes.diff import diff_cassettes
from stuntset.cli import main


def chat(
    index: int, question: str, answer: str, *, status: int = 200, temperature: float = 0.0
) -> Interaction:
    body = {
        "id": f"c{index}", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": answer}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }  # fmt: skip
    return Interaction(
        id=f"i-{index}",
        wire="openai-chat",
        request=RecordedRequest(
            method="POST",
            path="/v1/chat/completions",
            body={
                "model": "m",
                "temperature": temperature,
                "messages": [{"role": "user", "content": question}],
            },
        ),
        response=RecordedResponse(
            status=status, body=body if status == 200 else {"error": {"message": "x"}}
        ),
    )


def test_identical_recordings_have_no_diff() -> None:
    a = Cassette(interactions=[chat(1, "hi", "hello")])
    assert diff_cassettes(a, a) == []


def test_changes_are_reported_per_interaction_and_field() -> None:
    old = Cassette(
        interactions=[chat(1, "hi", "hello"), chat(2, "more", "sure")], source="old.jsonl"
    )
    new = Cassette(
        interactions=[
            chat(1, "hi", "hello there", temperature=0.5),
            chat(2, "more", "sure", status=500),
            chat(3, "x", "y"),
        ],
        source="new.jsonl",
    )
    assert diff_cassettes(old, new) == [
        "~ interaction 1 (i-1 → i-1):",
        "  request.temperature: 0.0 → 0.5",
        '  response step 0: text {"text": "hello"} → text {"text": "hello there"}',
        "~ interaction 2 (i-2 → i-2):",
        "  status: 200 → 500",
        '  response step 0: text {"text": "sure"} → http_error {"message": "x", "status": 500}',
        '  response step 1: usage {"input_tokens": 3, "output_tokens": 2} → (none)',
        "+ i-3: POST /v1/chat/completions (only in new.jsonl)",
    ]
    assert diff_cassettes(new, old)[-1] == "- i-3: POST /v1/chat/completions (only in new.jsonl)"


def test_the_command_exits_1_on_differences(tmp_path: Path) -> None:
    a = write_cassette(tmp_path / "a.jsonl", Cassette(interactions=[chat(1, "hi", "hello")]))
    b = write_cassette(tmp_path / "b.jsonl", Cassette(interactions=[chat(1, "hi", "bye")]))
    runner = CliRunner()
    assert runner.invoke(main, ["cassettes", "diff", str(a), str(a)]).exit_code == 0
    result = runner.invoke(main, ["cassettes", "diff", str(a), str(b)])
    assert result.exit_code == 1
    assert "~ interaction 1 (i-1 → i-1):" in result.output


def claude_run(prompt: str, answer: str, request_id: str, t: float) -> Interaction:
    stdin = [
        {"type": "control_request", "request_id": request_id, "request": {"subtype": "initialize"}},
        {"type": "user", "message": {"role": "user", "content": prompt}},
    ]
    frames = [
        {"type": "assistant", "message": {"content": [{"type": "text", "text": answer}]}},
        {"type": "result", "subtype": "success", "usage": {}},
    ]
    return Interaction(
        id="i-1",
        wire="claude-cli",
        request=RecordedRequest(
            method="EXEC",
            path="claude",
            body={
                "argv": ["--output-format", "stream-json"],
                "stdin": [{"t": t, "data": json.dumps(m)} for m in stdin],
            },
        ),
        response=RecordedResponse(
            status=0, frames=[Frame(t=t, data=json.dumps(m)) for m in frames]
        ),
    )


def test_cli_runs_differ_by_what_was_sent_and_said_not_by_timing_or_request_ids() -> None:
    old = Cassette(interactions=[claude_run("hi", "Hello!", "req_1_aaaa", 0.1)])
    same = Cassette(interactions=[claude_run("hi", "Hello!", "req_1_bbbb", 0.2)])
    assert diff_cassettes(old, same) == []
    new = Cassette(interactions=[claude_run("hello", "Hi!", "req_1_cccc", 0.1)])
    assert diff_cassettes(old, new) == [
        "~ interaction 1 (i-1 → i-1):",
        '  request.stdin[1]: {"message": {"content": "hi", "role": "user"}, "type": "user"} → '
        '{"message": {"content": "hello", "role": "user"}, "type": "user"}',
        '  response step 0: text {"text": "Hello!"} → text {"text": "Hi!"}',
    ]
