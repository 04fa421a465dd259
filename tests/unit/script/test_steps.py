from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stuntset.script import (
    FAULT_KINDS,
    STEP_KINDS,
    Delay,
    Exit,
    Garbage,
    HttpError,
    Overloaded,
    RateLimit,
    Reasoning,
    StreamCut,
    Text,
    ToolCall,
    Usage,
    kind_of,
    split_text,
)


def test_text_splits_into_word_deltas_that_rebuild_it() -> None:
    assert Text("Hello big  world ").deltas() == ["Hello", " big", "  world", " "]
    assert Text("").deltas() == []


def test_chunking_is_controllable() -> None:
    assert Text("abcdefg", chunk_size=3).deltas() == ["abc", "def", "g"]
    assert Text("abcdefgh", chunks=4).deltas() == ["ab", "cd", "ef", "gh"]
    assert Reasoning("abc", chunks=10).deltas() == ["a", "b", "c"]


@given(text=st.text(), chunks=st.none() | st.integers(1, 50), size=st.none() | st.integers(1, 50))
def test_deltas_always_concatenate_to_the_text(
    text: str, chunks: int | None, size: int | None
) -> None:
    parts = split_text(text, chunks=chunks, chunk_size=size)
    assert "".join(parts) == text
    assert all(parts)


def test_tool_call_arguments_stream_in_fragments() -> None:
    call = ToolCall("read", {"path": "a.txt", "n": 1}, fragments=3)
    assert call.arguments() == '{"path":"a.txt","n":1}'
    assert len(call.argument_fragments()) == 3
    assert "".join(call.argument_fragments()) == call.arguments()


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda: Text("x", chunks=0), "chunks must be at least 1"),
        (lambda: Reasoning("x", chunk_size=0), "chunk_size must be at least 1"),
        (lambda: ToolCall("x", fragments=0), "fragments must be at least 1"),
        (lambda: Delay(-1), "must not be negative"),
        (lambda: HttpError(200), "400-599"),
        (lambda: HttpError(429, retry_after=600), "retry_after_ms"),
        (lambda: RateLimit(retry_after=61), "allow_long_retry_after"),
        (lambda: StreamCut(after_events=-1), "must not be negative"),
        (lambda: Delay(float("nan")), "seconds must not be negative, and finite"),
        (lambda: Delay(float("inf")), "seconds must not be negative, and finite"),
        (lambda: Delay(1e308), "at most 86400"),
        (lambda: Delay(86_400.5), "at most 86400"),
        (lambda: Text("x", interval=1e300), "at most 86400"),
        (lambda: RateLimit(retry_after=1e308, allow_long_retry_after=True), "at most 86400"),
        (lambda: Text("x", interval=float("nan")), "interval must not be negative"),
        (lambda: Reasoning("x", interval=-1), "interval must not be negative"),
        (lambda: RateLimit(retry_after=-1), "retry_after must not be negative"),
        (lambda: HttpError(429, retry_after=float("nan")), "retry_after must not be negative"),
        (lambda: HttpError(429, retry_after_ms=-1), "retry_after_ms must not be negative"),
        (lambda: Overloaded(retry_after_ms=-5), "retry_after_ms must not be negative"),
        (lambda: Usage(input_tokens=-1), "input_tokens must not be negative"),
        (lambda: Usage(output_tokens=-1), "output_tokens must not be negative"),
        (lambda: Usage(cost=float("nan")), "cost must not be negative"),
        (lambda: Exit(300), "0-255"),
        (lambda: Exit(-1), "0-255"),
    ],
)
def test_invalid_steps_are_refused_when_built(make: object, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        make()  # type: ignore[operator]


def test_a_long_retry_after_can_be_asked_for_explicitly() -> None:
    assert RateLimit(retry_after=600, allow_long_retry_after=True).retry_after == 600


def test_garbage_payload() -> None:
    assert Garbage("x").payload() == b"x\xff\xfe\xc3"
    assert Garbage("x", invalid_utf8=False, half_line=False).payload() == b"x\n"


def test_kinds() -> None:
    assert kind_of(Text("x")) == "text"
    assert len(STEP_KINDS) == 19
    assert {
        "http_error", "auth_expired", "rate_limit", "overloaded", "stream_cut",
        "malformed_json", "garbage", "out_of_order", "stall", "exit", "spawn_failure",
    } == FAULT_KINDS  # fmt: skip


def test_steps_encode_with_their_kind_and_without_defaults() -> None:
    assert msgspec.json.encode(Text("hi")) == b'{"kind":"text","text":"hi"}'
