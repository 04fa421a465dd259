"""The cassettes' demo rows: recorded from the doubles and replayed, and a row that says so
when the replay differs from the recording."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from stuntset.cassettes import Cassette, load_cassette, write_cassette
from stuntset.cassettes import _demo as demo


@pytest.mark.slow
def test_every_row_replays_what_was_recorded() -> None:
    rows = demo.cassette_rows()
    assert [(r.layer, r.scenario) for r in rows] == [
        *(("cassette (openai chat)", name) for name in demo.HTTP_SCENARIOS),
        *(("cassette (claude cli)", name) for name in demo.CLI_SCENARIOS),
    ]
    assert [r.detail for r in rows if not r.ok] == []
    assert rows[0].outcome == "10 frames recorded, replayed byte for byte"


def tamper(path: Path, old: str, new: str) -> None:
    """Change one recorded frame of the (only) interaction of the cassette at ``path``."""
    cassette = load_cassette(path)
    (interaction,) = cassette.interactions
    frames = list(interaction.response.frames or [])
    index = next(n for n, frame in enumerate(frames) if old in frame.data)
    frames[index] = msgspec.structs.replace(
        frames[index], data=frames[index].data.replace(old, new)
    )
    response = msgspec.structs.replace(interaction.response, frames=frames)
    changed = msgspec.structs.replace(interaction, response=response)
    write_cassette(path, Cassette(interactions=[changed]))


def test_a_replay_that_differs_fails_its_http_row(tmp_path: Path) -> None:
    path = tmp_path / "happy_path.jsonl"
    recorded = demo._record_http("happy_path", path)
    tamper(path, "Hello", "Bye")
    row = demo._replayed_http_row("happy_path", path, recorded)
    assert (row.ok, row.detail) == (False, "the replayed bytes differ from the recorded ones")


def test_a_replay_that_differs_fails_its_cli_row(tmp_path: Path) -> None:
    cassette = tmp_path / "happy_path.claude.jsonl"
    recorded = demo._record_cli("happy_path", tmp_path, cassette)
    tamper(cassette, "Hello", "Bye")
    row = demo._replayed_cli_row("happy_path", tmp_path, cassette, recorded)
    assert (row.ok, row.detail) == (False, "the replayed session differs from the recorded one")
