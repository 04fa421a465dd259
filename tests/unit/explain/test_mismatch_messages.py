"""Mismatch messages show the differing part of long values: a window around the first
difference, with its path (CassetteMismatch, ``cassettes diff``, event snapshots, prefix
stability). Each change is generated at many places in a long value, not one example."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stuntset.cassettes import Cassette, Interaction, RecordedRequest, RecordedResponse
from stuntset.cassettes.diff import diff_cassettes
from stuntset.cassettes.replay import CassetteMismatch, Replayer
from stuntset.cassettes.snapshot import SnapshotMismatch, check_events_snapshot
from stuntset.checks.prefix import _details
from stuntset.events import MessageCompleted

LONG = "".join(f"word{n} " for n in range(800))  # ~6 KB, no two windows alike


def _changed(at: int) -> str:
    return LONG[:at] + "CHANGED" + LONG[at + 7 :]


def _messages(content: str) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": content},
    ]


def _interaction(content: str) -> Interaction:
    return Interaction(
        id="i-1",
        wire="openai-chat",
        request=RecordedRequest(
            method="POST",
            path="/v1/chat/completions",
            body={"model": "m", "messages": _messages(content)},
        ),
        response=RecordedResponse(status=200, body={"choices": []}),
    )


AT = [0, 150, 2999, len(LONG) - 7]


@pytest.mark.parametrize("at", AT)
def test_cassette_mismatch_shows_the_window_and_the_path(at: int) -> None:
    replayer = Replayer(Cassette(interactions=[_interaction(LONG)]))
    with pytest.raises(CassetteMismatch) as raised:
        replayer.match(
            "POST", "/v1/chat/completions", {"model": "m", "messages": _messages(_changed(at))}
        )
    message = str(raised.value)
    assert f"first difference at body.messages[3].content, character {at}" in message
    got = next(line for line in message.splitlines() if line.strip().startswith("got:"))
    assert "CHANGED" in got
    assert len(got) < 200


@pytest.mark.parametrize("at", AT)
def test_cassettes_diff_shows_the_window_and_the_path(at: int) -> None:
    old = Cassette(interactions=[_interaction(LONG)], source="old.jsonl")
    new = Cassette(interactions=[_interaction(_changed(at))], source="new.jsonl")
    lines = diff_cassettes(old, new)
    where = f"first difference at request.messages[3].content, character {at}"
    assert any(where in line for line in lines), lines
    assert any(line.strip().startswith("new:") and "CHANGED" in line for line in lines)


@pytest.mark.parametrize("at", AT)
def test_snapshot_mismatch_shows_the_window_and_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, at: int
) -> None:
    monkeypatch.delenv("CI", raising=False)
    path = tmp_path / "s.jsonl"
    event = MessageCompleted(run_id="r", ts=0.0, item_id="m", text=LONG)
    check_events_snapshot([event], path, update=True)
    changed = MessageCompleted(run_id="r", ts=0.0, item_id="m", text=_changed(at))
    with pytest.raises(SnapshotMismatch) as raised:
        check_events_snapshot([changed], path)
    message = str(raised.value)
    assert f"first difference at text, character {at}" in message
    assert "1 event(s) differ" in message
    got = next(line for line in message.splitlines() if line.strip().startswith("got:"))
    assert "CHANGED" in got


@pytest.mark.parametrize("at", AT)
def test_prefix_details_show_the_window_and_the_path(at: int) -> None:
    # (prefix-stability messages already showed a window: this keeps them doing so)
    (line,) = _details(_messages(LONG), _messages(_changed(at)), "messages")
    assert line.startswith("messages[3].content: ")
    assert f"first difference at character {at}" in line
    assert "CHANGED" in line
    assert len(line) < 300
