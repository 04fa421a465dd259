"""``--live``: the wire shape of a "live" provider against the double's, offline. The provider
is a server on 127.0.0.1 found through the SDKs' own variables (``ANTHROPIC_BASE_URL``,
``OPENAI_BASE_URL``): a cassette of the real APIs' streams replayed (same shape), the same
streams with one thing changed (drift, naming the first difference), or a second double. No
real key is used: the keys are dummies and nothing leaves the machine.

``cassettes/live_anthropic.jsonl`` and ``cassettes/live_openai.jsonl`` are composed, frame for
frame, after recordings of the real services — Anthropic's from the streams in
anthropic-sdk-python's ``tests/lib/streaming/fixtures`` (``tool_use_response.txt``,
``message_delta_fields_response.txt``: ``ping``, ``service_tier``, the ``cache_creation``
breakdown, ``caller`` on a tool_use block, an empty first ``input_json_delta``, cumulative usage
in ``message_delta``); OpenAI's after the Responses API's snapshot in openai-python's
``tests/lib/responses/test_responses.py`` (usage and its ``*_details``) and the documented
stream of a reasoning model (``gpt-5``: a reasoning item first, ``obfuscation`` on deltas) —
with our own ids and text; the request bodies are what ``--live`` sends.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

import stuntset
from stuntset import scenarios
from stuntset.cassettes.format import Cassette, Frame, load_cassette, write_cassette
from stuntset.cassettes.replay_server import replay_server
from stuntset.cli import main
from stuntset.drift.live import live_scenarios, programs, request_body, shape, stream_shape
from stuntset.script import Script, Text

_KEYS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")
CASSETTES = Path(__file__).with_name("cassettes")
ANTHROPIC = CASSETTES / "live_anthropic.jsonl"
OPENAI = CASSETTES / "live_openai.jsonl"


def test_without_a_key_live_exits_2_with_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in _KEYS:
        monkeypatch.delenv(key, raising=False)
    result = CliRunner().invoke(main, ["drift", "--live", "--cli", "codex"])
    assert result.exit_code == 2
    assert (
        result.output
        == "error: --live needs a provider key: set OPENAI_API_KEY (nothing was sent)\n"
    )
    result = CliRunner().invoke(main, ["drift", "--live", "--cli", "codex-exec", "--cli", "codex"])
    assert result.exit_code == 2  # a column counts by its CLI: one key asked for, once
    assert "set OPENAI_API_KEY (nothing" in result.output


def _env(anthropic_url: str, openai_url: str) -> dict[str, str]:
    """What a user sets: the SDKs' own variables (the Anthropic base URL without ``/v1``, the
    OpenAI one with it) and dummy keys."""
    return {
        "ANTHROPIC_API_KEY": "sk-ant-offline",
        "OPENAI_API_KEY": "sk-offline",
        "ANTHROPIC_BASE_URL": anthropic_url,
        "OPENAI_BASE_URL": openai_url,
    }


def _recorded(
    args: list[str], anthropic: Path = ANTHROPIC, openai: Path = OPENAI
) -> tuple[int, str]:
    with replay_server(anthropic) as one, replay_server(openai) as two:
        env = _env(one.url, two.url + "/v1")
        result = CliRunner().invoke(main, ["drift", "--live", *args], env=env)
        one.replayer.verify(allow_unused=True)  # every request was one the cassette has
        two.replayer.verify(allow_unused=True)
    return result.exit_code, result.output


@pytest.mark.slow
def test_the_real_apis_recorded_streams_have_the_doubles_shape() -> None:
    """Pings, breakdowns, labels and a reasoning item on the live side, none on the double's:
    the same shape. Each distinct request is sent once (four scenarios ask alike)."""
    with replay_server(ANTHROPIC) as one, replay_server(OPENAI) as two:
        result = CliRunner().invoke(main, ["drift", "--live"], env=_env(one.url, two.url + "/v1"))
        one.replayer.verify()  # both recorded interactions played, nothing else asked
        two.replayer.verify()
    assert result.output.splitlines() == [
        f"{name}  {cli}  live shape: same"
        for name in ("happy_path", "tool_use", "long_stream", "multi_turn", "slow")
        for cli in ("claude", "codex")
    ]
    assert result.exit_code == 0


Change = Callable[[list[Frame]], list[Frame]]


def _changed(tmp_path: Path, source: Path, interaction: str, change: Change) -> Path:
    """``source`` with the frames of ``interaction`` changed, written beside the test."""
    cassette = load_cassette(source)
    interactions = []
    for recorded in cassette.interactions:
        if recorded.id == interaction:
            frames = change(list(recorded.response.frames or []))
            response = msgspec.structs.replace(recorded.response, frames=frames)
            recorded = msgspec.structs.replace(recorded, response=response)
        interactions.append(recorded)
    target = tmp_path / source.name
    write_cassette(target, Cassette(interactions=interactions, recorded_by=cassette.recorded_by))
    return target


def _named(frames: list[Frame], event: str) -> int:
    return next(i for i, frame in enumerate(frames) if frame.event == event)


def _extra_event(frames: list[Frame]) -> list[Frame]:
    """An annotation on the answer: an event kind the double never sends."""
    at = _named(frames, "response.output_text.done")
    extra = {"type": "response.output_text.annotation.added", "sequence_number": 99}
    frame = Frame(t=frames[at].t, event=extra["type"], data=json.dumps(extra))
    return [*frames[:at], frame, *frames[at:]]


def _reordered(frames: list[Frame]) -> list[Frame]:
    """``message_delta`` before the text block's ``content_block_stop``."""
    stop, delta = _named(frames, "content_block_stop"), _named(frames, "message_delta")
    frames[stop], frames[delta] = frames[delta], frames[stop]
    return frames


def _without_output_tokens(frames: list[Frame]) -> list[Frame]:
    at = _named(frames, "response.completed")
    data = json.loads(frames[at].data)
    del data["response"]["usage"]["output_tokens"]
    frames[at] = msgspec.structs.replace(frames[at], data=json.dumps(data))
    return frames


@pytest.mark.slow
def test_an_extra_event_kind_is_drift_named_at_its_place(tmp_path: Path) -> None:
    changed = _changed(tmp_path, OPENAI, "i-1", _extra_event)
    code, out = _recorded(["--scenario", "happy_path", "--cli", "codex"], openai=changed)
    assert out == (
        "happy_path  codex  live shape: DIFFERS event 5: live "
        "response.output_text.annotation.added; double response.output_text.done\n"
    )
    assert code == 1


@pytest.mark.slow
def test_a_reordered_frame_is_drift_named_at_its_place(tmp_path: Path) -> None:
    changed = _changed(tmp_path, ANTHROPIC, "i-1", _reordered)
    code, out = _recorded(["--scenario", "happy_path", "--cli", "claude"], anthropic=changed)
    assert out == (
        "happy_path  claude  live shape: DIFFERS event 3: live message_delta "
        "usage=cache_creation_input_tokens,cache_read_input_tokens,input_tokens,output_tokens; "
        "double content_block_stop\n"
    )
    assert code == 1


@pytest.mark.slow
def test_a_missing_usage_field_is_drift_named_at_its_place(tmp_path: Path) -> None:
    changed = _changed(tmp_path, OPENAI, "i-2", _without_output_tokens)
    code, out = _recorded(["--scenario", "tool_use", "--cli", "codex-exec"], openai=changed)
    assert out == (
        "tool_use  codex  live shape: DIFFERS event 12: live response.completed "
        "usage=input_tokens,total_tokens; double response.completed "
        "usage=input_tokens,output_tokens,total_tokens\n"
    )
    assert code == 1


def _live(args: list[str], anthropic: Script, openai: Script) -> tuple[int, str]:
    with stuntset.serve(anthropic) as one, stuntset.serve(openai) as two:
        env = _env(one.url("anthropic"), two.url("openai"))
        result = CliRunner().invoke(main, ["drift", "--live", *args], env=env)
    return result.exit_code, result.output


@pytest.mark.slow
def test_the_same_shape_passes_whatever_the_text() -> None:
    other_words = Script.of([Text("Entirely different words, same shape."), *_usage()])
    code, out = _live(["--scenario", "happy_path"], other_words, other_words)
    assert out.splitlines() == [
        "happy_path  claude  live shape: same",
        "happy_path  codex  live shape: same",
    ]
    assert code == 0


@pytest.mark.slow
def test_a_changed_shape_fails_naming_the_first_event_that_differs() -> None:
    happy = scenarios.build("happy_path")
    tool_use = scenarios.build("tool_use")  # the "provider" now frames a tool call
    code, out = _live(["--scenario", "tool_use", "--cli", "claude"], happy, tool_use)
    assert code == 1
    assert out == (
        "tool_use  claude  live shape: DIFFERS event 4: live message_delta "
        "usage=cache_creation_input_tokens,cache_read_input_tokens,input_tokens,output_tokens; "
        "double content_block_start content_block=tool_use\n"
    )


def test_a_provider_that_refuses_is_an_error_cell() -> None:
    refusing = scenarios.build("rate_limited")  # answers 429 first
    code, out = _live(["--scenario", "happy_path", "--cli", "codex"], refusing, refusing)
    assert code == 1
    assert out.startswith("happy_path  codex  live shape: ERROR RuntimeError: http://127.0.0.1:")
    assert out.endswith("/openai/v1/responses answered 429\n")


def _usage() -> list[object]:
    from stuntset.script import Usage

    return [Usage(12, 9)]


def test_shapes() -> None:
    assert shape("ping", {}) is None
    assert shape("content_block_start", {"content_block": {"type": "tool_use"}}) == (
        "content_block_start content_block=tool_use"
    )
    assert shape("response.completed", {"response": {"usage": {"b": 1, "a": 2}}}) == (
        "response.completed usage=a,b"
    )
    # usage: the token counts; breakdowns and labels are not compared
    usage = {"output_tokens": 3, "service_tier": "standard", "cache_creation": {"x": 0}}
    assert shape("message_start", {"message": {"usage": usage}}) == (
        "message_start usage=output_tokens"
    )
    # a reasoning model's own reasoning item is not compared
    assert shape("response.output_item.added", {"item": {"type": "reasoning"}}) is None
    assert shape("response.reasoning_summary_text.delta", {"delta": "x"}) is None
    lines = ["event: ping", "data: {}", "data: not json", "data: [DONE]", 'data: {"type": "x"}']
    assert stream_shape(lines) == ["(not JSON)", "x"]
    assert live_scenarios(["stuck", "happy_path", "spawn_missing"]) == ["happy_path"]
    body = request_body("openai", scenarios.build("tool_use"))
    assert body["tool_choice"] == {"type": "function", "name": "read_file"}
    assert programs(["claude-session", "codex-exec", "claude", "codex"]) == ["claude", "codex"]
