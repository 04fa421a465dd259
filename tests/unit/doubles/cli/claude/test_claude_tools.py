"""Tool calls in the fake ``claude`` (``_process/tools.py``): the tool result's content, the
answers to ``can_use_tool`` that deny a tool (an error response, stdin closing), and the
``AskUserQuestion`` tool a scripted question becomes — asked, answered, declined, or denied
without a prompt tool, as Claude Code 2.1.332 does."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from stuntset import scenarios
from stuntset.doubles.cli import InstalledCli, install_cli
from stuntset.doubles.cli._neutral import NEUTRAL_TOOLS
from stuntset.doubles.cli.claude import DEFAULT_TOOLS, UNLISTED_TOOLS
from stuntset.doubles.cli.claude._client import StreamJsonClient
from stuntset.script import ApprovalRequest, Script, Text, ToolCall, ToolResult

STREAM = ["--output-format", "stream-json", "--verbose", "--input-format", "stream-json"]
PROMPT = "Which branch should I deploy?"


def user(text: str) -> dict[str, Any]:
    return {"type": "user", "message": {"role": "user", "content": text}}


def Session(cli: InstalledCli, *args: str) -> StreamJsonClient:
    """A fake claude process driven message by message, as the SDK drives it (reads block; the
    test timeout bounds them)."""
    return StreamJsonClient(str(cli.path), *args, base=STREAM)


def tool_results(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``tool_result`` blocks of the ``user`` messages, with their ``tool_use_result``."""
    return [
        {**m["message"]["content"][0], "extra": m["tool_use_result"]}
        for m in messages
        if m["type"] == "user"
    ]


@pytest.mark.parametrize(
    ("output", "content"),
    [
        ("plain text", "plain text"),
        ([{"type": "text", "text": "a block"}], [{"type": "text", "text": "a block"}]),
        ({"rows": 2}, '{"rows":2}'),  # other data: as JSON text
        ([1, 2], "[1,2]"),  # a list that is no content blocks
    ],
)
def test_a_tool_result_is_text_blocks_or_json(tmp_path: Path, output: Any, content: Any) -> None:
    script = Script.of([ToolCall("Bash", {"command": "ls"}), ToolResult(output), Text("done")])
    cli = install_cli("claude", script, bin_dir=tmp_path)
    done = subprocess.run(
        [str(cli.path), *STREAM],
        input=json.dumps(user("go")).encode() + b"\n",
        capture_output=True,
        timeout=30,
    )
    assert done.returncode == 0
    messages = [json.loads(line) for line in done.stdout.splitlines()]
    (result,) = tool_results(messages)
    assert result["content"] == content
    assert result["is_error"] is False
    assert result["extra"] == {"input": {"command": "ls"}, "output": output}


def test_a_permission_request_that_fails_denies_the_tool(tmp_path: Path) -> None:
    cli = install_cli("claude", scenarios.build("needs_approval"), bin_dir=tmp_path)
    session = Session(cli, "--permission-prompt-tool", "stdio")
    session.send(user("clean"))
    request = session.read_until("control_request")[-1]
    session.answer(request, {"subtype": "error", "error": "the prompt crashed"})
    seen = session.read_until("result")
    (result,) = tool_results(seen)
    assert result["content"] == "Tool permission request failed: the prompt crashed"
    assert result["is_error"] is True
    assert seen[-1]["permission_denials"][0]["tool_name"] == "Bash"
    assert session.close() == 0


def test_stdin_closing_while_asking_denies_the_tool(tmp_path: Path) -> None:
    cli = install_cli("claude", scenarios.build("needs_approval"), bin_dir=tmp_path)
    session = Session(cli, "--permission-prompt-tool", "stdio")
    session.send(user("clean"))
    session.read_until("control_request")
    session.end_input()
    (result,) = tool_results(session.read_until("result"))
    assert (result["content"], result["is_error"]) == ("Stream closed", True)
    assert session.close() == 0


def test_a_question_without_a_prompt_tool_is_denied_as_headless(tmp_path: Path) -> None:
    cli = install_cli("claude", scenarios.build("input_request"), bin_dir=tmp_path)
    session = Session(cli)
    session.send(user("deploy"))
    seen = session.read_until("result")
    blocks = [m["message"]["content"][0] for m in seen if m["type"] == "assistant"]
    assert [b["name"] for b in blocks if b["type"] == "tool_use"] == ["AskUserQuestion"]
    (result,) = tool_results(seen)
    assert result["content"] == (
        "Claude requested permissions to use AskUserQuestion, but you haven't granted it yet."
    )
    assert result["is_error"] is True
    assert seen[-1]["permission_denials"][0]["tool_name"] == "AskUserQuestion"
    assert session.close() == 0


def test_an_answered_question_is_the_tool_result(tmp_path: Path) -> None:
    cli = install_cli("claude", scenarios.build("input_request"), bin_dir=tmp_path)
    session = Session(cli, "--permission-prompt-tool", "stdio")
    session.send(user("deploy"))
    request = session.read_until("control_request")[-1]
    assert request["request"]["tool_name"] == "AskUserQuestion"
    questions = request["request"]["input"]["questions"]
    assert [q["question"] for q in questions] == [PROMPT]
    answered = {"questions": questions, "answers": {PROMPT: "main"}}
    session.answer(
        request,
        {"subtype": "success", "response": {"behavior": "allow", "updatedInput": answered}},
    )
    (result,) = tool_results(session.read_until("result"))
    assert result["content"] == (
        f'User has answered your questions: "{PROMPT}"="main". You can now continue with the '
        "user's answers in mind."
    )
    assert result["is_error"] is False
    assert result["extra"] == answered
    assert session.close() == 0


def test_a_declined_question_is_the_denial_only(tmp_path: Path) -> None:
    cli = install_cli("claude", scenarios.build("input_request"), bin_dir=tmp_path)
    session = Session(cli, "--permission-prompt-tool", "stdio")
    session.send(user("deploy"))
    request = session.read_until("control_request")[-1]
    session.answer(
        request,
        {"subtype": "success", "response": {"behavior": "deny", "message": "not now"}},
    )
    seen = session.read_until("result")
    (result,) = tool_results(seen)  # no answer follows the denial
    assert (result["content"], result["is_error"]) == ("not now", True)
    assert seen[-1]["permission_denials"][0]["tool_name"] == "AskUserQuestion"
    assert session.close() == 0


# --- tools the real claude lacks ------------------------------------------------------------

#: Names the real 2.1.332 offers (``system/init`` and the first model request, observed).
_REAL_TOOLS = {*DEFAULT_TOOLS, *UNLISTED_TOOLS}


def _missing_tool_script(name: str) -> Script:
    return Script.of(
        [
            ToolCall(name, {"q": 1}),
            ApprovalRequest(),
            ToolResult("what the script says the tool printed"),
            Text("The tool was not there."),
        ]
    )


@given(name=st.text(st.characters(codec="ascii", categories=("L", "N")), min_size=1, max_size=12))
@settings(max_examples=6, deadline=None)
def test_a_call_of_a_tool_claude_lacks_is_answered_no_such_tool(
    tmp_path_factory: pytest.TempPathFactory, name: str
) -> None:
    """Any name the real CLI does not offer (not a built-in, nor a connected MCP server's,
    nor one of the catalog's tools, which are played as its own) gets the error the real
    2.1.332 answers: the scripted result is skipped, no permission is asked, no PreToolUse
    hook runs, and the model's next response follows."""
    assume(name not in _REAL_TOOLS and name not in NEUTRAL_TOOLS)
    tmp_path = tmp_path_factory.mktemp("missing")
    cli = install_cli("claude", _missing_tool_script(name), bin_dir=tmp_path)
    ran = tmp_path / "hook-ran"
    hook = {"type": "command", "command": f"touch {ran}"}
    settings_ = {"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [hook]}]}}
    session = Session(cli, "--permission-prompt-tool", "stdio", "--settings", json.dumps(settings_))
    session.send(user("go"))
    seen = session.read_until("result")
    assert session.close() == 0
    assert not ran.exists()  # no PreToolUse hook ran
    assert not [m for m in seen if m["type"] == "control_request"]  # no permission asked
    (init,) = [m for m in seen if m.get("subtype") == "init"]
    assert name not in init["tools"]
    (result,) = tool_results(seen)
    error = f"Error: No such tool available: {name}"
    assert (result["content"], result["is_error"]) == (
        f"<tool_use_error>{error}</tool_use_error>",
        True,
    )
    assert result["extra"] == error
    assert seen[-1]["result"] == "The tool was not there."
    assert seen[-1]["permission_denials"] == []


def test_tools_narrows_what_a_call_may_name(tmp_path: Path) -> None:
    """``--tools Bash``: the real CLI offers only that, so a ``Read`` call is answered "No such
    tool available" too; ``Bash`` still runs."""
    script = Script.of(
        [
            ToolCall("Read", {"file_path": "a.txt"}),
            ToolResult("a"),
            ToolCall("Bash", {"command": "ls"}),
            ToolResult("a.txt"),
            Text("done"),
        ]
    )
    cli = install_cli("claude", script, bin_dir=tmp_path)
    session = Session(cli, "--tools", "Bash")
    session.send(user("go"))
    seen = session.read_until("result")
    assert session.close() == 0
    assert [(r["content"], r["is_error"]) for r in tool_results(seen)] == [
        ("<tool_use_error>Error: No such tool available: Read</tool_use_error>", True),
        ("a.txt", False),
    ]


def test_the_catalog_tools_are_played_as_claudes_own(tmp_path: Path) -> None:
    """``read_file`` is ``Read`` (its lines numbered), ``list_files`` and ``bash`` are
    ``Bash``; ``system/init`` lists the real CLI's tools and nothing the script named."""
    cli = install_cli("claude", scenarios.build("tool_use"), bin_dir=tmp_path)
    session = Session(cli)
    session.send(user("read a.txt"))
    seen = session.read_until("result")
    assert session.close() == 0
    (init,) = [m for m in seen if m.get("subtype") == "init"]
    assert init["tools"] == list(DEFAULT_TOOLS)
    blocks = [b for m in seen if m["type"] == "assistant" for b in m["message"]["content"]]
    assert [(b["name"], b["input"]) for b in blocks if b["type"] == "tool_use"] == [
        ("Read", {"file_path": "a.txt"})
    ]
    assert [r["content"] for r in tool_results(seen)] == ["1\thello from a.txt"]
