"""Every catalog scenario that applies to model doubles, on every wire, through the official
SDKs (openai 3.x chat + responses, anthropic 2.x), streamed and not, in-process and over
loopback: the client sees what the real provider would make it see (README: "Model doubles")."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from stuntset import scenarios
from stuntset.doubles.model import StandIn

from ._catalog_content import CONTENT, USAGE
from ._clients import WIRES, Answer, Mode, Wire, converse


def _raw(wire: Wire) -> tuple[type[BaseException], ...]:
    return (httpx2.TransportError,) if wire == "anthropic" else ()


def expected_error(name: str, wire: Wire, stream: bool) -> tuple[type[BaseException], ...]:
    """What the SDK raises for a fault scenario (reliability.md §1.4, observed)."""
    api = anthropic if wire == "anthropic" else openai
    if name == "auth_expired_mid_run":
        return (api.AuthenticationError,)
    if name in ("stream_cut", "crash_mid_turn"):
        # streams: openai wraps the dropped connection; anthropic 2.14 (the lock) raises
        # httpx2's own, and the newest release (2.17, `make newest`) wraps it as openai does
        if stream and wire == "anthropic":
            return (httpx2.RemoteProtocolError, api.APIConnectionError)
        return (api.APIConnectionError,)
    if name == "stuck":
        if stream and wire == "anthropic":  # the same: 2.14 httpx2's own, 2.17 wrapped
            return (httpx2.ReadTimeout, api.APITimeoutError)
        return (api.APITimeoutError,)
    if name == "malformed_json":
        return (json.JSONDecodeError,)
    if name == "garbage_bytes":
        # a stream dies on the invalid UTF-8; a 200 text/html body comes back as a str
        return (UnicodeDecodeError,) if stream else (AttributeError,)
    if name == "out_of_order":
        # the stream helpers detect content for an item never started
        if not stream:
            return (AttributeError, TypeError)  # a body of the wrong shape: fields missing
        return (RuntimeError,) if wire == "responses" else (IndexError,)
    raise AssertionError(f"no expectation for {name}")


MODEL_SCENARIOS = [s.name for s in scenarios.all() if s.name != "spawn_missing"]
# connection faults on a non-streamed request are retried by the SDK: one attempt each here
NO_RETRY = {"stream_cut", "crash_mid_turn", "stuck"}


def _check(stand_in: StandIn, name: str, wire: Wire, stream: bool, mode: Mode) -> None:
    stand_in.play(scenarios.build(name))
    options: dict[str, Any] = {"max_retries": 0} if name in NO_RETRY else {}
    if name == "stuck":
        options["timeout"] = httpx2.Timeout(5.0, read=0.2)  # over loopback this is real time
    if name in CONTENT:
        answers = converse(stand_in, wire, stream=stream, mode=mode, **options)
        assert [(a.text, a.calls) for a in answers] == CONTENT[name]
        if name in USAGE:
            assert (answers[-1].input_tokens, answers[-1].output_tokens) == USAGE[name]
        return
    with pytest.raises(expected_error(name, wire, stream)):
        converse(stand_in, wire, stream=stream, mode=mode, **options)


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("name", MODEL_SCENARIOS)
def test_catalog_in_process(stand_in: StandIn, name: str, wire: Wire, stream: bool) -> None:
    _check(stand_in, name, wire, stream, "in-process")


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("name", MODEL_SCENARIOS)
def test_catalog_over_loopback(stand_in: StandIn, name: str, wire: Wire) -> None:
    _check(stand_in, name, wire, True, "loopback")


@pytest.mark.stand_in(allow_unused_turns=True)
def test_rate_limit_beyond_the_retries_surfaces(stand_in: StandIn) -> None:
    """3 failures outlast the SDK's default 2 retries: RateLimitError after 3 attempts."""
    stand_in.play(scenarios.build("rate_limited", failures=3))
    with pytest.raises(openai.RateLimitError):
        converse(stand_in, "chat", stream=True)
    assert [r.headers["x-stainless-retry-count"] for r in stand_in.requests] == ["0", "1", "2"]
    stand_in.play(scenarios.build("happy_path"))
    assert isinstance(converse(stand_in, "chat", stream=False)[0], Answer)


@pytest.mark.stand_in(allow_unused_turns=True)
def test_overloaded_beyond_the_retries_is_anthropic_overloaded_error(stand_in: StandIn) -> None:
    stand_in.play(scenarios.build("overloaded", failures=3))
    with pytest.raises(anthropic.OverloadedError) as raised:
        converse(stand_in, "anthropic", stream=False)
    assert raised.value.status_code == 529
    assert len(stand_in.requests) == 3
