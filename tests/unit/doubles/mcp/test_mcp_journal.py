"""The journal: lines from many servers read back in arrival order."""

from __future__ import annotations

from pathlib import Path

from stuntset.doubles.mcp.journal import JournalWriter, McpCall, read_journal


def entry(method: str) -> McpCall:
    return McpCall(transport="stdio", session="s", method=method, outcome="request")


def test_files_of_several_writers_merge_in_arrival_order(tmp_path: Path) -> None:
    first, second = JournalWriter(tmp_path), JournalWriter(tmp_path)
    first.write(entry("a"))
    second.write(entry("b"))
    first.write(entry("c"))
    first.close()
    first.close()  # twice is fine
    second.close()
    assert [c.method for c in read_journal(tmp_path)] == ["a", "b", "c"]
    assert [c.seq for c in read_journal(tmp_path)] == [1, 1, 2]


def test_a_torn_last_line_is_skipped_and_no_folder_is_no_calls(tmp_path: Path) -> None:
    writer = JournalWriter(tmp_path)
    writer.write(entry("a"))
    assert writer.path is not None
    with writer.path.open("ab") as file:
        file.write(b'{"transport": "std')
    assert [c.method for c in read_journal(tmp_path)] == ["a"]
    assert read_journal(tmp_path / "missing") == []


def test_a_writer_without_a_folder_keeps_nothing() -> None:
    writer = JournalWriter(None)
    assert writer.write(entry("a")).seq == 1
    assert writer.path is None
    writer.close()
