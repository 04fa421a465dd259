"""``stuntset cassettes show``: a readable transcript — what was asked, what came back as
steps, when; a CLI run in both directions with every line described briefly."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest
from click.testing import CliRunner

import stuntset
from stuntset.cassettes import (
    Cassette,
    Frame,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    write_cassette,
)
from stuntset.cassettes.show import describe_line, transcript
from stuntset.cassettes.sse import parse_sse
from stuntset.cli import main
from stuntset.script import Script, Text, ToolCall, Usage


@pytest.mark.parametrize(
    ("message", "described"),
    [
        ({"type": "user", "message": {"content": "read a.txt"}}, 'user "read a.txt"'),
        (
            {
                "type": "assistant",
                "message": {"content": [{"type": "tool_use", "name": "Read", "input": {"p": 1}}]},
            },
            'assistant tool_use Read {"p": 1}',
        ),
        (
            {
                "type": "control_request",
                "request": {"subtype": "can_use_tool", "tool_name": "Bash"},
            },
            "control_request can_use_tool Bash",
        ),
        (
            {"type": "result", "subtype": "success", "result": "ok", "usage": {"input_tokens": 3}},
            'result success "ok" (3 in / 0 out)',
        ),
        ({"id": 4, "method": "turn/start", "params": {}}, "turn/start #4"),
        ({"id": 4, "error": {"message": "busy"}}, 'response #4 error "busy"'),
        (
            {
                "method": "item/completed",
                "params": {"item": {"type": "agentMessage", "text": "hi"}},
            },
            'item/completed agentMessage "hi"',
        ),
        (
            {"type": "item.completed", "item": {"type": "command_execution", "command": "ls"}},
            'item.completed command_execution "ls"',
        ),
        (
            {
                "type": "assistant",
                "message": {
                    "content": [
                        {"type": "thinking", "thinking": "hmm"},
                        {"type": "text", "text": "ok"},
                        {"type": "x"},
                    ]
                },
            },
            'assistant thinking "hmm", "ok"',
        ),
        (
            {
                "type": "user",
                "message": {
                    "content": [{"type": "tool_result", "is_error": True, "content": "denied"}]
                },
            },
            'user tool_result (error) "denied"',
        ),
        (
            {"method": "item/agentMessage/delta", "params": {"delta": "Hel"}},
            'item/agentMessage/delta "Hel"',
        ),
        (
            {"method": "turn/completed", "params": {"turn": {"status": "interrupted"}}},
            "turn/completed interrupted",
        ),
        (
            {"method": "item/started", "params": {"item": {"type": "reasoning", "text": ""}}},
            "item/started reasoning",
        ),
        ({"id": 2, "result": {}}, "response #2"),
        ({"type": "system", "subtype": "init", "session_id": "s"}, "system init"),
    ],
)
def test_lines_are_described_briefly(message: dict[str, object], described: str) -> None:
    assert describe_line(json.dumps(message)) == described


def test_a_line_that_is_not_json_says_so() -> None:
    assert describe_line("half a li") == '(not JSON) "half a li"'


def test_json_that_is_not_an_object_is_shown_as_is_clipped() -> None:
    assert describe_line("[1, 2]") == "[1, 2]"
    assert describe_line(json.dumps("x" * 100)) == '"' + "x" * 78 + "…"


def test_a_cli_run_reads_in_both_directions_with_offsets() -> None:
    run = Interaction(
        id="i-1",
        wire="claude-cli",
        request=RecordedRequest(
            method="EXEC",
            path="claude",
            body={
                "argv": ["-p", "hi"],
                "cwd": "/work",
                "stdin": [
                    {"t": 0.001, "data": json.dumps({"type": "user", "message": {"content": "hi"}})}
                ],
                "stdin_closed": 0.002,
            },
        ),
        response=RecordedResponse(
            status=-15,
            frames=[Frame(t=0.25, data='{"type":"assi', event="partial")],
            body={"stderr": [{"t": 0.3, "data": "boom\n"}]},
        ),
    )
    lines = transcript(Cassette(interactions=[run], source="c.jsonl"))
    assert lines == [
        "c.jsonl: 1 interaction(s), wires claude-cli, recorded by stuntset",
        "",
        "i-1 claude-cli: claude -p hi",
        "  in /work; killed by signal 15",
        '  +     1.0 ms → user "hi"',
        "  +     2.0 ms → (stdin closed)",
        '  +   250.0 ms ← (not JSON) "{\\"type\\":\\"assi" (cut)',
        '  +   300.0 ms ! stderr "boom⏎"',
    ]


def test_a_model_response_reads_as_its_steps(tmp_path: Path) -> None:
    script = Script.of(
        [Text("Let me look."), ToolCall("read_file", {"path": "a.txt"}), Usage(4, 2)]
    )
    body = {
        "model": "m",
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [{"role": "user", "content": "read it"}],
    }
    with httpx2.Client(transport=stuntset.transport(script), base_url="http://x") as http:
        raw = http.post("/v1/chat/completions", json=body).content
    frames = [Frame(t=0.01 * n, data=d, event=e) for n, (e, d) in enumerate(parse_sse(raw))]
    interaction = Interaction(
        id="i-1",
        wire="openai-chat",
        request=RecordedRequest(method="POST", path="/v1/chat/completions", body=body),
        response=RecordedResponse(status=200, frames=frames),
    )
    lines = transcript(Cassette(interactions=[interaction]))
    assert lines[2:7] == [
        "i-1 openai-chat: POST /v1/chat/completions → 200",
        "  model m",
        '  asked "read it"',
        f"  {len(frames)} frame(s), first after 0 ms, last after {(len(frames) - 1) * 10} ms",
        '  text {"text": "Let me look.", "chunks": 3}',
    ]
    assert lines[7].startswith('  tool_call {"name": "read_file", "input": {"path": "a.txt"}')
    assert lines[8] == '  usage {"input_tokens": 4, "output_tokens": 2}'
    path = tmp_path / "c.jsonl"
    write_cassette(path, Cassette(interactions=[interaction]))
    shown = CliRunner().invoke(main, ["cassettes", "show", "--frames", str(path)])
    assert shown.exit_code == 0
    assert "  tool_call " in shown.output
    assert "ms  {" in shown.output  # --frames: each frame's data


def test_a_whole_response_and_an_error_read_without_frames_or_model() -> None:
    script = Script.of([Text("done")])
    with httpx2.Client(transport=stuntset.transport(script), base_url="http://x") as http:
        whole = http.post("/v1/responses", json={"model": "m", "input": "sum it up"}).json()
    answered = Interaction(
        id="i-1",
        wire="openai-responses",
        request=RecordedRequest(method="POST", path="/v1/responses", body={"input": "sum it up"}),
        response=RecordedResponse(status=200, body=whole),
    )
    refused = Interaction(
        id="i-2",
        wire="anthropic-messages",
        session="s-1",
        request=RecordedRequest(
            method="POST",
            path="/v1/messages",
            body={"messages": ["not a message", {"role": "assistant", "content": "hi"}]},
        ),
        response=RecordedResponse(
            status=529,
            body={"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        ),
    )
    lines = transcript(Cassette(interactions=[answered, refused]))
    # no model in the request, a string input, no frames: no "model"/"frame(s)" lines
    assert lines[2:5] == [
        "i-1 openai-responses: POST /v1/responses → 200",
        '  asked "sum it up"',
        '  text {"text": "done"}',
    ]
    # no user message to quote: no "asked" line; the error reads as its step
    assert lines[-2:] == [
        "i-2 anthropic-messages session s-1: POST /v1/messages → 529",
        '  http_error {"status": 529, "message": "Overloaded", "error_type": "overloaded_error"}',
    ]
