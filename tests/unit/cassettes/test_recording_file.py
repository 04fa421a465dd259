"""Recording the same cassette from two workers or two processes loses nothing and tears
nothing (issue 32): a unique temporary name, a lock, and a merge with what another recorder
wrote since this one started."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from stuntset.cassettes import (
    Cassette,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    load_cassette,
    write_cassette,
)
from stuntset.cassettes.recording_file import FileState, write_recording
from stuntset.cassettes.replay import Replayer


def one(tag: str) -> Cassette:
    body = {"model": "m", "messages": [{"role": "user", "content": tag}]}
    return Cassette(
        interactions=[
            Interaction(
                id="i-1",
                wire="openai-chat",
                request=RecordedRequest(method="POST", path="/v1/chat/completions", body=body),
                response=RecordedResponse(status=200, body={"answer": tag}),
            )
        ]
    )


def contents(path: Path) -> list[str]:
    return sorted(i.response.body["answer"] for i in load_cassette(path).interactions)


def test_a_cassette_unchanged_since_the_start_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    write_cassette(path, one("old"))
    write_recording(path, one("new"), since=FileState.of(path))
    assert contents(path) == ["new"]


def test_one_written_meanwhile_is_kept_and_each_replays_on_its_own(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    write_cassette(path, one("old"))
    a, b = FileState.of(path), FileState.of(path)  # two recorders start
    write_recording(path, one("a"), since=a)
    write_recording(path, one("b"), since=b)
    assert contents(path) == ["a", "b"]
    replayer = Replayer(load_cassette(path))
    for tag in ("b", "a"):  # in either order
        body = {"model": "m", "messages": [{"role": "user", "content": tag}]}
        assert replayer.match("POST", "/v1/chat/completions", body).response.body == {"answer": tag}
    # the guard: without the merge (the file taken as unchanged), one recording is lost
    write_recording(path, one("c"), since=FileState.of(path))
    assert contents(path) == ["c"]


def _record_many(path: str, worker: int, count: int, start: object) -> None:
    start.wait()  # type: ignore[attr-defined]
    for n in range(count):
        since = FileState(None, None, None)  # each write as a recording begun before any
        write_recording(path, one(f"{worker}-{n}"), since=since)


def test_two_processes_writing_one_cassette_lose_and_tear_nothing(tmp_path: Path) -> None:
    path = tmp_path / "shared.jsonl"
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    workers = [context.Process(target=_record_many, args=(str(path), w, 8, start)) for w in (1, 2)]
    for worker in workers:
        worker.start()
    start.set()
    for worker in workers:
        worker.join(60)
    assert [w.exitcode for w in workers] == [0, 0]
    expected = sorted(f"{w}-{n}" for w in (1, 2) for n in range(8))
    assert contents(path) == expected
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
