"""Rate limits, retries and steering through the real, unmodified ``openai-codex`` SDK: over
the fake ``codex``, and — where the real binary is installed (openai-codex-cli-bin) — the
same script over the real binary and the Responses model double, compared notification by
notification (docs/protocol-reference.md has the shapes observed)."""

from __future__ import annotations

from pathlib import Path

import pytest

openai_codex = pytest.importorskip("openai_codex")

import stuntset  # noqa: E402
from stuntset.doubles.cli import install_cli  # noqa: E402
from stuntset.script import (  # noqa: E402
    Overloaded,
    RateLimitCredits,
    RateLimits,
    RateLimitWindow,
    Script,
    Stall,
    Text,
    ToolCall,
    ToolResult,
    Turn,
    Usage,
)

from ._codex_app import REAL_CODEX, Trace, fake_config, play, real_config  # noqa: E402

LIMITS = RateLimits(
    primary=RateLimitWindow(used_percent=42.5, window_minutes=300, resets_at=1767240000),
    secondary=RateLimitWindow(used_percent=7, window_minutes=10080),
    credits=RateLimitCredits(has_credits=True, balance="12.50"),
)
#: What codex-cli 0.163.0 shows for ``LIMITS``' headers (observed).
SHOWN = {
    "limitId": "codex",
    "limitName": None,
    "primary": {"usedPercent": 43, "windowDurationMins": 300, "resetsAt": 1767240000},
    "secondary": {"usedPercent": 7, "windowDurationMins": 10080, "resetsAt": None},
    "credits": {"hasCredits": True, "unlimited": False, "balance": "12.50"},
    "planType": None,
}

#: A turn whose model response stalls until steered; the next turn answers the follow-up.
STEERED = Script.of(
    [Text("Thinking"), Stall()], [Text("Steered answer"), Usage(30, 4)], rate_limits=LIMITS
)
#: Two 503s, then the answer.
OVERLOADED = Script.of(
    Turn(steps=(Overloaded(),), times=2),
    [Text("Back in service."), Usage(12, 9)],
    rate_limits=LIMITS,
)
#: No silent request retry, two announced ones: each 503 shows as "Reconnecting... n/2". (The
#: provider in use is the custom ``stuntset`` of the config.toml both sides get: codex refuses
#: any setting of the built-in ``openai`` provider, and the fake as well.)
RETRIES = (
    "model_providers.stuntset.request_max_retries=0",
    "model_providers.stuntset.stream_max_retries=2",
)

needs_real_codex = pytest.mark.skipif(REAL_CODEX is None, reason="no real codex binary here")


def on_fake(tmp_path: Path, script: Script, **options: object) -> Trace:
    cli = install_cli("codex", script, bin_dir=tmp_path / "bin", time_scale=0)
    overrides = options.pop("overrides", ())
    assert isinstance(overrides, tuple)
    trace = play(fake_config(cli.path, tmp_path, overrides), "Hello", **options)  # type: ignore[arg-type]
    cli.assert_all_used()
    return trace


def on_real(tmp_path: Path, script: Script, **options: object) -> Trace:
    overrides = options.pop("overrides", ())
    assert isinstance(overrides, tuple)
    with stuntset.serve(script) as stand_in:
        config = real_config(stand_in.url("openai"), tmp_path, overrides)
        trace = play(config, "Hello", **options)  # type: ignore[arg-type]
    stand_in.verify()
    return trace


def only(shown: dict[str, object]) -> dict[str, object]:
    return {key: shown[key] for key in SHOWN}


# --- over the fake ------------------------------------------------------------------------------


def test_a_steer_ends_the_streaming_response_and_the_next_turn_answers(tmp_path: Path) -> None:
    trace = on_fake(tmp_path, STEERED, steer="Also say bye")
    assert trace.turn == [
        ("item/started", "userMessage"),
        ("item/completed", "userMessage", ["Hello"]),
        ("item/started", "agentMessage"),
        ("item/agentMessage/delta", "Thinking"),
        ("item/completed", "agentMessage", "Thinking"),
        ("item/started", "userMessage"),
        ("item/completed", "userMessage", ["Also say bye"]),
        ("item/started", "agentMessage"),
        ("item/agentMessage/delta", "Steered"),
        ("item/agentMessage/delta", " answer"),
        ("item/completed", "agentMessage", "Steered answer"),
        # the dropped response never reported usage: only the follow-up's counts
        ("thread/tokenUsage/updated", 30, 4, 30),
        ("turn/completed", "completed"),
    ]
    # after the dropped response (its head had come) and after the follow-up
    assert [only(r) for r in trace.rate_limits] == [SHOWN, SHOWN]


def test_rate_limits_come_after_each_model_response_typed(tmp_path: Path) -> None:
    script = Script.of(
        [ToolCall("exec_command", {"cmd": "ls"}), ToolResult("a.txt"), Text("done"), Usage(5, 2)],
        rate_limits=LIMITS,
    )
    trace = on_fake(tmp_path, script)
    assert [e for e in trace.turn if e[0] == "thread/tokenUsage/updated"] == [
        ("thread/tokenUsage/updated", 0, 0, 0),  # the tool call's response
        ("thread/tokenUsage/updated", 5, 2, 5),  # the answer's
    ]
    assert [only(r) for r in trace.rate_limits] == [SHOWN, SHOWN]


def test_a_503_is_retried_and_each_retry_announced(tmp_path: Path) -> None:
    trace = on_fake(tmp_path, OVERLOADED, overrides=RETRIES)
    disconnected = {"responseStreamDisconnected": {"httpStatusCode": 503}}
    assert trace.turn[2:] == [
        ("error", "Reconnecting... 1/2", disconnected, True),
        ("error", "Reconnecting... 2/2", disconnected, True),
        ("item/started", "agentMessage"),
        ("item/agentMessage/delta", "Back"),
        ("item/agentMessage/delta", " in"),
        ("item/agentMessage/delta", " service."),
        ("item/completed", "agentMessage", "Back in service."),
        ("thread/tokenUsage/updated", 12, 9, 12),
        ("turn/completed", "completed"),
    ]
    assert [only(r) for r in trace.rate_limits] == [SHOWN]


def test_by_default_a_single_503_is_retried_silently(tmp_path: Path) -> None:
    script = Script.of([Overloaded()], [Text("Back in service.")])
    trace = on_fake(tmp_path, script)
    assert [e[0] for e in trace.turn if e[0] == "error"] == []
    assert trace.status == "completed"


# --- the same scripts over the real binary -------------------------------------------------------


# real time: the real binary starts and talks to the double over loopback (a few seconds)
@pytest.mark.real_cli
@needs_real_codex
@pytest.mark.real_time
@pytest.mark.timeout(180)
def test_steering_matches_the_real_binary(tmp_path: Path) -> None:
    real = on_real(tmp_path / "real", STEERED, steer="Also say bye")
    fake = on_fake(tmp_path / "fake", STEERED, steer="Also say bye")
    # the real binary usually completes the cut message, but not always (in 1 of ~16 runs
    # here its item/completed never came): a race of its own, left out of the comparison
    racy = ("item/completed", "agentMessage", "Thinking")
    assert racy in fake.turn
    assert [e for e in fake.turn if e != racy] == [e for e in real.turn if e != racy]
    assert [only(r) for r in fake.rate_limits] == [only(r) for r in real.rate_limits]
    assert fake.status == real.status == "completed"


@pytest.mark.real_cli
@needs_real_codex
@pytest.mark.real_time
@pytest.mark.timeout(180)
def test_retries_and_rate_limits_match_the_real_binary(tmp_path: Path) -> None:
    real = on_real(tmp_path / "real", OVERLOADED, overrides=RETRIES)
    fake = on_fake(tmp_path / "fake", OVERLOADED, overrides=RETRIES)
    assert fake.turn == real.turn
    assert [only(r) for r in fake.rate_limits] == [only(r) for r in real.rate_limits] == [SHOWN]
