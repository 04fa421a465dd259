"""A prefix divergence deep inside a long value shows where it is: the path to the first
difference and a window of text around it (``stuntset.explain.window``), not only the two
values cut to their first hundred characters."""

from __future__ import annotations

from typing import Any

import pytest

from stuntset.checks import ModelRequest, PrefixUnstable, assert_prefix_stable

FILLER = "The assistant keeps a careful record of every step it has taken so far. " * 3


def _failure(requests: list[ModelRequest]) -> str:
    with pytest.raises(PrefixUnstable) as caught:
        assert_prefix_stable(requests)
    return str(caught.value)


def _history(day: str) -> list[dict[str, Any]]:
    said = f"{FILLER}The meeting is on {day}, in room four. {FILLER}"
    return [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "When is the meeting?"},
        {"role": "assistant", "content": [{"type": "text", "text": said}]},
        {"role": "user", "content": "Thanks."},
    ]


def test_a_change_deep_in_a_long_message_shows_its_window_and_path() -> None:
    before = _history("Tuesday")
    after = [*_history("Thursday"), {"role": "user", "content": "And the room?"}]
    text = before[2]["content"][0]["text"]
    assert text.index("Tuesday") > 100  # deep inside: past what a cut value shows
    message = _failure(
        [
            ModelRequest(wire="openai-chat", body={"model": "m", "messages": before}),
            ModelRequest(wire="openai-chat", body={"model": "m", "messages": after}),
        ]
    )
    at = text.index("Tuesday") + 1  # "T" is shared; "u" / "h" differ
    assert f"first difference at messages[2].content[0].text, character {at}" in message, message
    lines = message.splitlines()
    shown_before = next(line for line in lines if line.strip().startswith("before:"))
    shown_after = next(line for line in lines if line.strip().startswith("after:"))
    assert "meeting is on Tuesday, in room" in shown_before, message
    assert "meeting is on Thursday, in room" in shown_after, message
    assert shown_before.rstrip().endswith("…"), message  # a window, not the whole text
    assert len(shown_before) < 140, message
    caret = next(line for line in lines if line.strip() == "^")
    assert shown_after[caret.index("^")] == "h", message  # the caret is on the first change


def test_a_long_changed_system_prompt_shows_its_window() -> None:
    system = f"{FILLER}Today is 2024-05-01. {FILLER}"
    requests = [
        ModelRequest(
            wire="openai-chat",
            body={"model": "m", "messages": [{"role": "system", "content": system}]},
        ),
        ModelRequest(
            wire="openai-chat",
            body={
                "model": "m",
                "messages": [{"role": "system", "content": system.replace("05-01", "05-02")}],
            },
        ),
    ]
    message = _failure(requests)
    assert "first difference at messages[0].content, character " in message, message
    assert "after:  …" in message, message
    assert "Today is 2024-05-02." in message, message


def test_short_values_get_no_window() -> None:
    requests = [
        ModelRequest(wire="openai-chat", body={"messages": [{"role": "user", "content": "hi"}]}),
        ModelRequest(wire="openai-chat", body={"messages": [{"role": "user", "content": "ho"}]}),
    ]
    message = _failure(requests)
    assert "'hi' -> 'ho'" in message, message
    assert "first difference at " not in message, message
