from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from stuntset.cassettes import (
    Cassette,
    CassetteError,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    load_cassette,
    write_cassette,
)
from stuntset.cassettes.migrate import MIGRATIONS, migrate_file
from stuntset.cli import main

SYSTEM = "Be brief. " * 20


def recording() -> Cassette:
    return Cassette(
        interactions=[
            Interaction(
                id="i-1",
                wire="openai-chat",
                request=RecordedRequest(
                    method="POST",
                    path="/v1/chat/completions",
                    body={"model": "m", "system": SYSTEM},
                ),
                response=RecordedResponse(status=200, body={"ok": True}),
            )
        ]
    )


def test_a_hand_edited_cassette_is_made_canonical_again(tmp_path: Path) -> None:
    path = write_cassette(tmp_path / "c.jsonl", recording())
    canonical = path.read_bytes()
    lines = [json.loads(line) for line in canonical.splitlines()]
    # a reviewer's editor re-indented it and inlined the shared block
    lines[-1]["request"]["body"]["system"] = SYSTEM
    path.write_text(
        "\n".join(json.dumps(line, indent=None) for line in [lines[0], lines[-1]]) + "\n"
    )
    assert migrate_file(path) is True
    assert path.read_bytes() == canonical
    assert migrate_file(path) is False
    assert load_cassette(path).interactions == recording().interactions


@pytest.fixture
def v0_migration() -> Iterator[None]:
    def rename_endpoint(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for line in lines:
            if line.get("kind") == "interaction":
                line["request"]["path"] = line["request"].pop("endpoint")
        return lines

    MIGRATIONS[0] = rename_endpoint
    yield
    del MIGRATIONS[0]


def test_an_older_version_is_upgraded_through_the_registered_steps(
    tmp_path: Path, v0_migration: None
) -> None:
    path = tmp_path / "old.jsonl"
    header = {"kind": "header", "format": "stuntset-cassette", "version": 0}
    interaction = {"kind": "interaction", "id": "i-1", "wire": "openai-chat",
                   "request": {"method": "GET", "endpoint": "/v1/models"}, "response": {"status": 200}}  # fmt: skip
    path.write_text(json.dumps(header) + "\n" + json.dumps(interaction) + "\n")
    with pytest.raises(
        CassetteError, match="version 0 is older than 1; run `stuntset cassettes migrate"
    ):
        load_cassette(path)
    assert migrate_file(path) is True
    assert load_cassette(path).interactions[0].request.path == "/v1/models"


def test_no_route_from_an_unknown_version(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    path.write_text('{"kind":"header","format":"stuntset-cassette","version":0}\n')
    with pytest.raises(
        CassetteError, match=r"old.jsonl:1: field 'version': no migration from version 0"
    ):
        migrate_file(path)
    with pytest.raises(CassetteError, match="no such cassette"):
        migrate_file(tmp_path / "missing.jsonl")


def test_the_command(tmp_path: Path) -> None:
    path = write_cassette(tmp_path / "c.jsonl", recording())
    result = CliRunner().invoke(main, ["cassettes", "migrate", str(path)])
    assert result.exit_code == 0, result.output
    assert result.output == f"{path}: already current\n"


def test_a_broken_line_is_named_by_its_number_in_the_file(
    tmp_path: Path, v0_migration: None
) -> None:
    """Blank lines count: the number is the file's, not the n-th non-blank line's (it was
    always 1, from parsing each line on its own)."""
    path = tmp_path / "old.jsonl"
    path.write_text(
        '{"kind":"header","format":"stuntset-cassette","version":0}\n\n\n{"kind": oops}\n'
    )
    with pytest.raises(CassetteError, match=r"old.jsonl:4: not valid JSON"):
        migrate_file(path)
    current = tmp_path / "current.jsonl"
    current.write_text('{"kind":"header","format":"stuntset-cassette","version":1}\n\n{oops\n')
    with pytest.raises(CassetteError, match=r"current.jsonl:3: not valid JSON"):
        migrate_file(current)
