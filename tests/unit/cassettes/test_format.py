from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from stuntset.cassettes import (
    Cassette,
    CassetteError,
    Frame,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    SecretFound,
    dumps_cassette,
    is_cassette,
    load_cassette,
    loads_cassette,
    write_cassette,
)
from stuntset.cassettes import format as format_module
from stuntset.cassettes.scrub import Scrubber

SYSTEM = "You are a careful assistant. " * 50
TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]


def chat(index: int, question: str, system: str = SYSTEM) -> Interaction:
    return Interaction(
        id=f"i-{index}",
        wire="openai.chat",
        session="s-1",
        request=RecordedRequest(
            method="POST",
            path="/v1/chat/completions",
            headers={"content-type": "application/json"},
            body={
                "model": "gpt-x",
                "system": system,
                "tools": TOOLS,
                "messages": [{"role": "user", "content": question}],
                "stream": True,
            },
        ),
        response=RecordedResponse(
            status=200,
            headers={"content-type": "text/event-stream"},
            frames=[Frame(t=0.012, data='{"choices":[]}'), Frame(t=0.020, data="[DONE]")],
        ),
    )


def test_round_trip_keeps_every_frame_and_its_timing() -> None:
    cassette = Cassette(interactions=[chat(1, "hi"), chat(2, "again")], recorded_by="test")
    loaded = loads_cassette(dumps_cassette(cassette), source="c.jsonl")
    assert loaded.interactions == cassette.interactions
    assert loaded.recorded_by == "test"
    assert loaded.wires == ["openai.chat"]


def test_large_repeated_values_are_stored_once() -> None:
    data = dumps_cassette(Cassette(interactions=[chat(1, "hi"), chat(2, "again")]))
    lines = data.decode().splitlines()
    assert lines[0].startswith('{"format":"stuntset-cassette","kind":"header"')
    kinds = [line.split('"kind":"')[1].split('"')[0] for line in lines]
    assert kinds == ["header", "block", "block", "interaction", "interaction"]
    assert data.count(SYSTEM.encode()) == 1


def test_changing_the_system_prompt_changes_few_lines() -> None:
    before = dumps_cassette(Cassette(interactions=[chat(1, "hi"), chat(2, "again")])).splitlines()
    after = dumps_cassette(
        Cassette(interactions=[chat(1, "hi", SYSTEM + "!"), chat(2, "again", SYSTEM + "!")])
    ).splitlines()
    changed = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    # the block line itself, and the reference in each interaction
    assert changed == [1, 3, 4]


def test_json_is_canonical() -> None:
    line = dumps_cassette(Cassette(interactions=[chat(1, "hi")])).splitlines()[-1]
    assert b": " not in line
    assert line.index(b'"id"') < line.index(b'"kind"') < line.index(b'"request"')


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (b"", "c.jsonl: empty file, not a cassette"),
        (
            b'{"kind":"block","id":"b","value":1}\n',
            "c.jsonl:1: the first line must be the cassette header",
        ),
        (
            b'{"kind":"header","format":"other","version":1}\n',
            "c.jsonl:1: field 'format': 'other' is not 'stuntset-cassette'",
        ),
        (
            b'{"kind":"header","format":"stuntset-cassette","version":9}\n',
            "c.jsonl:1: field 'version': version 9 was written by a newer stuntset",
        ),
        (
            b'{"kind":"header","format":"stuntset-cassette","version":0}\n',
            "c.jsonl:1: field 'version': version 0 is older than 1; run `stuntset cassettes migrate c.jsonl`",
        ),
        (
            b'{"kind":"header","format":"stuntset-cassette","version":1}\n{"kind":"interaction","id":"i-1"',
            "c.jsonl:2: not valid JSON",
        ),
        (
            b'{"kind":"header","format":"stuntset-cassette","version":1}\n{"kind":"interaction","id":"i-1","wire":"w","request":{"method":"GET"},"response":{"status":200}}\n',
            "c.jsonl:2: Object missing required field `path` - at `$.request`",
        ),
        (
            b'{"kind":"header","format":"stuntset-cassette","version":1}\n{"kind":"header","format":"stuntset-cassette","version":1}\n',
            "c.jsonl:2: a second header line",
        ),
    ],
)
def test_bad_cassettes_name_file_line_and_field(text: bytes, expected: str) -> None:
    with pytest.raises(CassetteError) as info:
        loads_cassette(text, source="c.jsonl")
    assert str(info.value).startswith(expected)


def test_truncated_and_duplicate_and_dangling() -> None:
    good = dumps_cassette(Cassette(interactions=[chat(1, "hi")]))
    with pytest.raises(CassetteError, match=r"c.jsonl:4: not valid JSON.*truncated\?"):
        loads_cassette(good[:-40], source="c.jsonl")
    lines = good.splitlines(keepends=True)
    with pytest.raises(
        CassetteError,
        match=r"c.jsonl:5: field 'id': duplicate interaction id 'i-1' \(first on line 4\)",
    ):
        loads_cassette(b"".join([*lines, lines[-1]]), source="c.jsonl")
    without_blocks = lines[0] + lines[-1]
    with pytest.raises(
        CassetteError, match=r"c.jsonl:2: field 'request.body': refers to block 'b-"
    ):
        loads_cassette(without_blocks, source="c.jsonl")


def test_write_is_atomic_scrubbed_and_discoverable(tmp_path: Path) -> None:
    key = "sk-" + "proj-" + "A1b2C3d4" * 4
    interaction = chat(1, f"my key is {key}")
    interaction = Interaction(
        id=interaction.id,
        wire=interaction.wire,
        request=RecordedRequest(
            method="POST",
            path="/v1/chat/completions",
            query=f"api_key={key}",
            headers={
                "Authorization": f"Bearer {key}",
                "Content-Type": "application/json",
                "X-Trace": "t",
            },
            body=interaction.request.body | {"api_key": "plain-secret-value"},
        ),
        response=RecordedResponse(
            status=200, headers={"set-cookie": "a=b", "x-request-id": "req_1"}, body={"ok": True}
        ),
    )
    path = write_cassette(tmp_path / "deep" / "c.jsonl", Cassette(interactions=[interaction]))
    data = path.read_bytes()
    assert key.encode() not in data
    assert b"plain-secret-value" not in data
    assert b"Bearer" not in data
    stored = load_cassette(path).interactions[0]
    assert stored.request.headers == {"content-type": "application/json"}
    assert stored.response.headers == {"x-request-id": "req_1"}
    assert stored.request.body["api_key"] == "<scrubbed:api_key>"
    assert "<scrubbed:openai-key>" in stored.request.body["messages"][0]["content"]
    assert is_cassette(path)
    assert sorted(p.name for p in path.parent.iterdir()) == ["_blocks.jsonl", "c.jsonl"]
    umask = os.umask(0o022)
    try:
        again = write_cassette(tmp_path / "deep" / "d.jsonl", Cassette(interactions=[interaction]))
    finally:
        os.umask(umask)
    assert stat.S_IMODE(again.stat().st_mode) == 0o644  # a normal file, not mkstemp's 0600


def test_a_secret_the_scrubber_cannot_see_stops_the_write(tmp_path: Path) -> None:
    token = "acme_" + "0123456789abcdef" * 2
    scrubber = Scrubber(env={})
    # a scrubber that knows nothing of acme tokens lets it through; the scan must still catch it
    # when told the shape, and nothing may be written
    strict = Scrubber(env={}, extra_patterns={"acme-token": r"acme_[0-9a-f]{32}"})
    cassette = Cassette(interactions=[chat(1, token)])
    write_cassette(tmp_path / "loose.jsonl", cassette, scrubber=scrubber)
    assert token.encode() in (tmp_path / "loose.jsonl").read_bytes()
    target = tmp_path / "strict.jsonl"
    target.write_bytes(b"previous content\n")
    written = write_cassette(target, cassette, scrubber=strict)
    assert token.encode() not in written.read_bytes()


def test_secret_found_refuses_and_keeps_the_old_file(tmp_path: Path) -> None:
    class Leaky(Scrubber):
        def value(self, data: object, **_: object) -> object:  # a broken filter: scrubs nothing
            return data

    key = "sk-" + "ant-" + "k" * 30
    target = tmp_path / "c.jsonl"
    target.write_bytes(b"old\n")
    with pytest.raises(
        SecretFound,
        match=r"refused to write: 1 thing\(s\) still look like secrets.*anthropic-key \(sk-ant…\)",
    ):
        write_cassette(target, Cassette(interactions=[chat(1, key)]), scrubber=Leaky(env={}))
    assert target.read_bytes() == b"old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["c.jsonl"]


def test_write_scans_each_streamed_frame_even_though_it_joins_the_channels_once(
    tmp_path: Path,
) -> None:
    """The scan at write time reads each frame alone (the scrub joined the channels): a
    broken stream scrub that leaves a key in a frame still fails the write."""

    class Leaky(Scrubber):
        def stream(self, datas: list[str]) -> list[str]:  # a broken filter: scrubs nothing
            return datas

        def value(self, data: object, **_: object) -> object:
            return data

    key = "sk-" + "ant-" + "k" * 30
    escaped = key.replace("a", "\\u0061")  # only a decoded reading of the frame shows it
    frames = [
        Frame(t=0.0, data='{"delta":{"text":"hi"}}'),
        Frame(t=0.1, data=f'{{"delta":{{"text":"{escaped}"}}}}'),
    ]
    interaction = Interaction(
        id="i-1",
        wire="anthropic.messages",
        request=RecordedRequest(method="POST", path="/v1/messages", body={"model": "m"}),
        response=RecordedResponse(status=200, frames=frames),
    )
    with pytest.raises(
        SecretFound, match=r"line 2, frame 1: looks like a anthropic-key \(sk-ant…\)"
    ):
        write_cassette(
            tmp_path / "c.jsonl", Cassette(interactions=[interaction]), scrubber=Leaky(env={})
        )
    assert not (tmp_path / "c.jsonl").exists()


def test_not_a_cassette(tmp_path: Path) -> None:
    other = tmp_path / "events.jsonl"
    other.write_text('{"type":"run.started"}\n')
    assert not is_cassette(other)
    assert not is_cassette(tmp_path / "missing.jsonl")
    with pytest.raises(CassetteError, match="no such cassette"):
        load_cassette(tmp_path / "missing.jsonl")


def test_a_write_pauses_the_cyclic_collector_and_gives_it_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each collection walks every object alive: a long recording's write paid for it once
    per few hundred frames (not flat in the frames); the collector is left as it was."""
    import gc

    from stuntset.cassettes import decoded

    seen: list[bool] = []
    scan = format_module.scan_for_secrets

    def watching(*args: object, **kwargs: object) -> object:
        seen.append(gc.isenabled())
        return scan(*args, **kwargs)  # type: ignore[arg-type]

    # lint-mocks: allow a spy: it calls the real scanner, only to see the collector's state
    monkeypatch.setattr(format_module, "scan_for_secrets", watching)
    assert gc.isenabled()
    write_cassette(tmp_path / "c.jsonl", Cassette(interactions=[chat(1, "hi")]))
    assert seen == [False]
    assert gc.isenabled()
    gc.disable()
    try:
        with decoded.collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # paused by someone else: left paused
    finally:
        gc.enable()
