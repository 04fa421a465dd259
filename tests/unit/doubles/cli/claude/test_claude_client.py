"""The minimal stream-json client of the fake ``claude`` (``claude/_client.py``): what the demo
and this suite drive the fake with, as claude-agent-sdk drives the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from stuntset import scenarios
from stuntset.doubles.cli import install_cli
from stuntset.doubles.cli.claude._client import StreamJsonClient, allow_all


def test_a_session_initializes_asks_answers_and_ends(tmp_path: Path) -> None:
    cli = install_cli("claude", scenarios.build("needs_approval"), bin_dir=tmp_path)
    client = StreamJsonClient(str(cli.path))
    request = {"subtype": "initialize"}
    client.send({"type": "control_request", "request_id": "init", "request": request})
    assert client.read_until("control_response")[-1]["response"]["request_id"] == "init"
    client.send({"type": "user", "message": {"role": "user", "content": "clean up"}})
    asked = client.read_until("control_request")[-1]
    assert asked["request"]["subtype"] == "can_use_tool"
    client.send(allow_all(asked))
    assert client.read_until("result")[-1]["subtype"] == "success"
    assert client.close() == 0
    assert client.bad == []


def test_a_message_that_never_comes_is_an_eof_error_naming_it(tmp_path: Path) -> None:
    cli = install_cli("claude", scenarios.build("happy_path"), bin_dir=tmp_path)
    client = StreamJsonClient(str(cli.path))
    client.send({"type": "user", "message": {"role": "user", "content": "hi"}})
    client.end_input()
    with pytest.raises(EOFError, match=r"before a 'control_request' message \(after \d+ others\)"):
        client.read_until("control_request")
    assert client.close() == 0


def test_an_answer_is_addressed_to_its_request(tmp_path: Path) -> None:
    cli = install_cli("claude", scenarios.build("needs_approval"), bin_dir=tmp_path)
    client = StreamJsonClient(str(cli.path))
    client.send({"type": "user", "message": {"role": "user", "content": "clean up"}})
    asked = client.read_until("control_request")[-1]
    client.answer(asked, {"subtype": "error", "error": "no prompt here"})
    seen = client.read_until("result")
    # the catalog's bash, played as claude's own tool
    assert seen[-1]["permission_denials"][0]["tool_name"] == "Bash"
    assert client.close() == 0
