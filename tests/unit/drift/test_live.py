"""``--live``: the wire shape of a "live" provider (here a second double on loopback, through
the base-URL variables) against the double's; a shape change fails."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import stuntset
from stuntset import scenarios
from stuntset.cli import main
from stuntset.drift.live import live_scenarios, request_body, shape, stream_shape
from stuntset.script import Script, Text

_KEYS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")


def test_without_a_key_live_exits_2_with_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in _KEYS:
        monkeypatch.delenv(key, raising=False)
    result = CliRunner().invoke(main, ["drift", "--live", "--cli", "codex"])
    assert result.exit_code == 2
    assert (
        result.output
        == "error: --live needs a provider key: set OPENAI_API_KEY (nothing was sent)\n"
    )


def _live(args: list[str], anthropic: Script, openai: Script) -> tuple[int, str]:
    with stuntset.serve(anthropic) as one, stuntset.serve(openai) as two:
        env = {
            "ANTHROPIC_API_KEY": "sk-ant-live",
            "OPENAI_API_KEY": "sk-live",
            "STUNTSET_LIVE_ANTHROPIC_URL": one.url("anthropic"),
            "STUNTSET_LIVE_OPENAI_URL": two.url("openai"),
        }
        result = CliRunner().invoke(main, ["drift", "--live", *args], env=env)
    return result.exit_code, result.output


def test_the_same_shape_passes_whatever_the_text() -> None:
    other_words = Script.of([Text("Entirely different words, same shape."), *_usage()])
    code, out = _live(["--scenario", "happy_path"], other_words, other_words)
    assert out.splitlines() == [
        "happy_path  claude  live shape: same",
        "happy_path  codex  live shape: same",
    ]
    assert code == 0


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
    lines = ["event: ping", "data: {}", "data: not json", "data: [DONE]", 'data: {"type": "x"}']
    assert stream_shape(lines) == ["(not JSON)", "x"]
    assert live_scenarios(["stuck", "happy_path", "spawn_missing"]) == ["happy_path"]
    body = request_body("openai", scenarios.build("tool_use"))
    assert body["tool_choice"] == {"type": "function", "name": "read_file"}
