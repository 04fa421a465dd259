"""Case: the fake ``claude``, spawn to ``result`` of a 20-event turn, against a naive Python
script printing 20 JSON lines (the budget: no slower) and the physical floor (``python -I -S``
writing 20 pre-encoded lines)."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from bench.cases._spawn import anchors, cleanup, spawn, verdict
from bench.runner import Case, Variant
from stuntset.doubles.cli import install_cli
from stuntset.script import Script, Text, Turn, Usage

#: ``--include-partial-messages`` output of this turn is exactly 20 lines: init, message_start,
#: content_block_start, 12 deltas, assistant, content_block_stop, message_delta, message_stop,
#: result.
TEXT = "".join(f"w{i} " for i in range(12)).rstrip()
ARGS = [
    "--output-format",
    "stream-json",
    "--verbose",
    "--input-format",
    "stream-json",
    "--include-partial-messages",
]
PROMPT = b'{"type":"user","message":{"role":"user","content":"hi"},"parent_tool_use_id":null}\n'
INIT = b'{"type":"control_request","request_id":"req_1","request":{"subtype":"initialize"}}\n'


def claude_spawn() -> Case:
    directory = Path(tempfile.mkdtemp(prefix="stuntset-bench-claude-"))
    script = Script.of(Turn(steps=(Text(TEXT), Usage(10, 12)), times=10**9), name="bench")
    cli = install_cli("claude", script, bin_dir=directory / "bin")
    check = subprocess.run([str(cli.path), *ARGS], input=PROMPT, capture_output=True, check=True)
    assert len(check.stdout.splitlines()) == 20, check.stdout
    return Case(
        name="claude_spawn",
        title="fake claude: spawn → result of a 20-event stream-json turn",
        variants=[
            Variant("fake claude", lambda: spawn([str(cli.path), *ARGS], PROMPT, b'"result"')),
            Variant(
                "fake claude + initialize",
                lambda: spawn([str(cli.path), *ARGS], INIT + PROMPT, b'"type":"result"'),
            ),
            *anchors(directory, "stream_event", "result", b'"result"'),
        ],
        budget="≤ 1.0× the naive script; reported against the -I -S floor",
        verdict=verdict("fake claude"),
        calls_per_round=10,
        rounds=7,
        close=cleanup(cli.uninstall, directory),
    )


def claude_sdk_query() -> Case:
    """The same fake turn through the real claude-agent-sdk ``query()`` (reported: the SDK's
    own start-up and control handshake are in the measure)."""
    import anyio
    from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, query

    directory = Path(tempfile.mkdtemp(prefix="stuntset-bench-claude-sdk-"))
    script = Script.of(Turn(steps=(Text(TEXT), Usage(10, 12)), times=10**9), name="bench")
    cli = install_cli("claude", script, bin_dir=directory / "bin")
    options = ClaudeAgentOptions(cli_path=cli.path, include_partial_messages=True)

    async def one() -> None:
        messages = [message async for message in query(prompt="hi", options=options)]
        assert isinstance(messages[-1], ResultMessage), messages[-1]

    return Case(
        name="claude_sdk_query",
        title="fake claude through claude-agent-sdk query(): spawn → ResultMessage",
        variants=[Variant("query() over the fake claude", lambda: anyio.run(one))],
        budget="reported",
        calls_per_round=5,
        rounds=5,
        close=cleanup(cli.uninstall, directory),
    )
