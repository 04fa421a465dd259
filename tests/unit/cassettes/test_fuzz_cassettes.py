"""The cassette parser, fuzzed (issue #33): Hypothesis draws whole cassettes — headers of any
version, block lines, interactions of every wire (HTTP and CLI) whose fields hold any JSON
value, streamed frames shaped like each wire's chunks with any values in them, lines cut
short — and each command that reads one (``verify``, ``show``, ``to-script``, ``diff``) and
the console's cassette page must read it or refuse it in one line (exit 2), never with a
traceback; ``verify`` passes only what ``show`` reads. Derandomized (the suite's profile),
a small ``max_examples``: the slow tier runs it in a few seconds."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stuntset.cassettes.format import loads_cassette
from stuntset.cli import main
from stuntset.console.cassettes_view import render_one
from stuntset.errors import CassetteError, UsageError
from stuntset.wires import WIRE_NAMES

pytestmark = pytest.mark.slow

CLI_WIRES = ("claude-cli", "codex-cli", "gemini-cli")

plausible = st.one_of(
    st.text(max_size=6), st.integers(-2, 600), st.floats(0, 3), st.booleans(), st.none()
)
hostile = st.one_of(
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=False),
    st.sampled_from(["\ud800", "", "x" * 200, 10**400]),
)
values = st.recursive(
    st.one_of(plausible, plausible, hostile),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)

#: Stream chunks shaped like the wires' (OpenAI chat and responses, Anthropic, Gemini,
#: claude stream-json, codex JSONL), any value where a field goes.
CHUNKS = [
    {"choices": [{"delta": {"content": "@"}, "index": 0}]},
    {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": "@"}}]}}]},
    {"type": "response.output_text.delta", "delta": "@"},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "@"}},
    {"type": "message_delta", "usage": {"output_tokens": "@"}},
    {"candidates": [{"content": {"parts": [{"text": "@"}]}}]},
    {"type": "assistant", "message": {"content": [{"type": "text", "text": "@"}]}},
    {"type": "result", "subtype": "success", "result": "@", "usage": "@"},
    {"type": "item.completed", "item": {"type": "agent_message", "text": "@"}},
]


def filled(shape: Any, value: Any) -> Any:
    if shape == "@":
        return value
    if isinstance(shape, dict):
        return {k: filled(v, value) for k, v in shape.items()}
    if isinstance(shape, list):
        return [filled(v, value) for v in shape]
    return shape


frame_data = st.one_of(
    st.builds(
        lambda shape, value: json.dumps(filled(shape, value)), st.sampled_from(CHUNKS), values
    ),
    st.sampled_from(["[DONE]", "", "{", "not json", '"\\ud800"']),
    st.text(max_size=10),
)
frames = st.lists(
    st.fixed_dictionaries(
        {"t": st.one_of(st.floats(0, 10), hostile), "data": frame_data},
        optional={"event": st.one_of(st.none(), st.text(max_size=6))},
    ),
    max_size=4,
)
bodies = st.one_of(
    st.fixed_dictionaries(
        {
            "model": plausible,
            "messages": st.lists(
                st.fixed_dictionaries(
                    {"role": st.sampled_from(["user", "system", "assistant"]), "content": values}
                ),
                max_size=2,
            ),
        },
        optional={"stream": st.booleans(), "input": values},
    ),
    st.fixed_dictionaries(
        {"argv": st.one_of(st.lists(st.text(max_size=5), max_size=3), values)},
        optional={"stdin": values, "cwd": values},
    ),
    values,
)


@st.composite
def interactions(draw: st.DrawFn, number: int, hostile: bool) -> dict[str, Any]:
    wire = draw(st.sampled_from([*WIRE_NAMES, *CLI_WIRES, "http", "bogus"]))
    cli = wire.endswith("-cli")
    found: dict[str, Any] = {
        "id": draw(st.one_of(st.just(f"i-{number}"), st.just("i-0"), values))
        if hostile
        else f"i-{number}",
        "kind": "interaction",
        "wire": wire,
        "session": draw(st.one_of(st.none(), st.text(max_size=4))),
        "request": {
            "method": "EXEC" if cli else "POST",
            "path": draw(
                st.sampled_from(["claude", "codex", "/v1/chat/completions", "/v1/messages", "/x"])
            ),
            "query": "",
            "headers": draw(st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=2)),
            "body": draw(bodies),
        },
        "response": {
            "status": draw(
                st.one_of(st.sampled_from([0, 1, 200, 429, 500, -9]), st.integers(-(10**6), 10**6))
            ),
            "headers": {
                "content-type": draw(
                    st.sampled_from(["text/event-stream", "application/json", "x"])
                )
            },
            "frames": draw(st.one_of(st.none(), frames)),
            "body": draw(values),
        },
    }
    # a field of any type anywhere, now and then
    if hostile and draw(st.booleans()):
        where = draw(st.sampled_from(["request", "response", "id", "wire", "session"]))
        found[where] = draw(values)
    return found


@st.composite
def cassettes(draw: st.DrawFn) -> bytes:
    """Cassettes well-formed but for their content (two in three), or hostile anywhere."""
    hostile = draw(st.integers(0, 2)) == 0
    header = {
        "format": draw(st.sampled_from(["stuntset-cassette", "other"]))
        if hostile
        else "stuntset-cassette",
        "kind": "header",
        "recorded_by": "stuntset",
        "version": draw(st.sampled_from([1, 2, 3, 0]) if hostile else st.sampled_from([1, 2])),
        "wires": [],
    }
    lines = [json.dumps(header)]
    for number in range(draw(st.integers(1, 3))):
        if draw(st.booleans()) and draw(st.booleans()):
            lines.append(json.dumps({"id": "b-1", "kind": "block", "value": draw(values)}))
        lines.append(json.dumps(draw(interactions(number, hostile))))
    data = ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")
    cut = draw(st.integers(0, len(data))) if hostile and draw(st.booleans()) else None
    return data if cut is None else data[:cut]


def run(*argv: str, codes: tuple[int, ...] = (0, 2)) -> int:
    result = CliRunner().invoke(main, list(argv))
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        argv,
        repr(result.exception),
    )
    assert "Traceback" not in result.output
    assert result.exit_code in codes, (argv, result.output)
    if result.exit_code == 2:
        assert len(result.stderr.splitlines()) == 1, result.stderr
    return result.exit_code


_settings = settings(
    max_examples=80,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(data=cassettes())
def test_a_generated_cassette_loads_or_is_a_cassette_error(data: bytes) -> None:
    try:
        loads_cassette(data, source="c.jsonl")
    except CassetteError as error:
        message = str(error)
    else:
        return
    assert "c.jsonl" in message  # the place is named


@_settings
@given(data=cassettes(), other=cassettes())
def test_every_command_reads_a_generated_cassette_or_refuses_it_in_one_line(
    tmp_path: Path, data: bytes, other: bytes
) -> None:
    path, second = tmp_path / "c.jsonl", tmp_path / "d.jsonl"
    path.write_bytes(data)
    second.write_bytes(other)
    verified = run("cassettes", "verify", str(path))
    shown = run("cassettes", "show", str(path))
    run("cassettes", "show", "--frames", str(path))
    run("cassettes", "to-script", str(path))
    run("cassettes", "diff", str(path), str(second), codes=(0, 1, 2))  # 1: they differ
    if verified == 0:
        assert shown == 0  # verify passes only what show reads
    with contextlib.suppress(UsageError):  # the console's page: a page, or a 404's message
        render_one("", tmp_path, "c.jsonl", page=1)
