"""The cassettes' demo rows: recorded from the doubles and replayed, and a row that says so
when the replay differs from the recording."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from stuntset.cassettes import Cassette, load_cassette
from stuntset.cassettes import _demo as demo


def test_every_row_replays_what_was_recorded() -> None:
    rows = demo.cassette_rows()
    assert [(r.layer, r.scenario) for r in rows] == [
        *(("cassette (openai chat)", name) for name in demo.HTTP_SCENARIOS),
        *(("cassette (claude cli)", name) for name in demo.CLI_SCENARIOS),
    ]
    assert [r.detail for r in rows if not r.ok] == []
    assert rows[0].outcome == "10 frames recorded, replayed byte for byte"


def test_a_replay_that_differs_fails_its_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def tampered(path: Path) -> Cassette:
        cassette = load_cassette(path)
        (interaction,) = cassette.interactions
        frames = list(interaction.response.frames or [])
        frames[1] = msgspec.structs.replace(frames[1], data=frames[1].data.replace("Hello", "Bye"))
        response = msgspec.structs.replace(interaction.response, frames=frames)
        return Cassette(interactions=[msgspec.structs.replace(interaction, response=response)])

    monkeypatch.setattr(demo, "load_cassette", tampered)
    row = demo._http_row("happy_path", tmp_path)
    assert (row.ok, row.detail) == (False, "the replayed bytes differ from the recorded ones")
