"""System prompts and tool schemas shared by the cassettes of a folder (issue 36, item 5):
stored once in ``_blocks.jsonl``, so a prompt that many tests share is one line in the
repository and changing it changes that line; every wire's system prompt and tools, OpenAI
Chat system messages included."""

from __future__ import annotations

import difflib
import fcntl
import json
import multiprocessing
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner

from stuntset.cassettes import (
    Cassette,
    CassetteError,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    SecretFound,
    dumps_cassette,
    load_cassette,
    loads_cassette,
    write_cassette,
)
from stuntset.cassettes.blocks import (
    STORE_NAME,
    block_id,
    dumps_store,
    gc_store,
    load_store,
    loads_store,
    store_locked,
)
from stuntset.cassettes.format import is_cassette
from stuntset.cassettes.migrate import migrate_file
from stuntset.cassettes.replay import Replayer
from stuntset.cassettes.scrub import Scrubber
from stuntset.cassettes.verify import verify_tree
from stuntset.cli import main


def prompt(seed: int) -> str:
    return f"You are assistant {seed}. Answer in one short sentence, cite nothing. " * 3


def tools(seed: int) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": f"read_file_{seed}",
                "description": "Read one file of the workspace and return its text.",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            },
        }
    ]


Shape = Callable[[str, list[dict[str, Any]], str], dict[str, Any]]

#: wire → (path, a request body holding system prompt p, tools t and question q): the places
#: each wire keeps its system prompt and its tool declarations.
SHAPES: dict[str, tuple[str, str, Shape]] = {
    "chat-system": ("openai-chat", "/v1/chat/completions", lambda p, t, q: {
        "model": "m", "tools": t,
        "messages": [{"role": "system", "content": p}, {"role": "user", "content": q}]}),
    "chat-developer": ("openai-chat", "/v1/chat/completions", lambda p, t, q: {
        "model": "m", "functions": [x["function"] for x in t],
        "messages": [{"role": "developer", "content": p}, {"role": "user", "content": q}]}),
    "chat-system-parts": ("openai-chat", "/v1/chat/completions", lambda p, t, q: {
        "model": "m", "tools": t,
        "messages": [{"role": "system", "content": [{"type": "text", "text": p}]},
                     {"role": "user", "content": q}]}),
    "responses-instructions": ("openai-responses", "/v1/responses", lambda p, t, q: {
        "model": "m", "instructions": p, "tools": t, "input": q}),
    "responses-developer-item": ("openai-responses", "/v1/responses", lambda p, t, q: {
        "model": "m", "tools": t,
        "input": [{"role": "developer", "content": p}, {"role": "user", "content": q}]}),
    "anthropic": ("anthropic-messages", "/v1/messages", lambda p, t, q: {
        "model": "m", "system": p, "tools": [x["function"] for x in t],
        "messages": [{"role": "user", "content": q}]}),
    "anthropic-cached": ("anthropic-messages", "/v1/messages", lambda p, t, q: {
        "model": "m", "system": [{"type": "text", "text": p, "cache_control": {"type": "ephemeral"}}],
        "tools": [x["function"] for x in t], "messages": [{"role": "user", "content": q}]}),
    "gemini": ("gemini", "/v1beta/models/m:generateContent", lambda p, t, q: {
        "systemInstruction": {"parts": [{"text": p}]},
        "tools": [{"functionDeclarations": [x["function"] for x in t]}],
        "contents": [{"role": "user", "parts": [{"text": q}]}]}),
    "bedrock": ("bedrock-converse", "/model/m/converse", lambda p, t, q: {
        "system": [{"text": p}],
        "toolConfig": {"tools": [{"toolSpec": x["function"]} for x in t]},
        "messages": [{"role": "user", "content": [{"text": q}]}]}),
    "ollama": ("ollama-chat", "/api/chat", lambda p, t, q: {
        "model": "m", "tools": t,
        "messages": [{"role": "system", "content": p}, {"role": "user", "content": q}]}),
}  # fmt: skip


def recorded(shape: str, name: str, system: str, question: str, seed: int = 1) -> Cassette:
    """One recorded test: two requests of the conversation, sharing the system prompt."""
    wire, path, body = SHAPES[shape]
    return Cassette(
        interactions=[
            Interaction(
                id=f"i-{n}",
                wire=wire,
                request=RecordedRequest(
                    method="POST", path=path, body=body(system, tools(seed), f"{question} {n}")
                ),
                response=RecordedResponse(status=200, body={"answer": f"{name} {n}"}),
            )
            for n in (1, 2)
        ],
        recorded_by="test",
    )


def files(folder: Path) -> dict[str, list[str]]:
    return {p.name: p.read_text().splitlines() for p in sorted(folder.iterdir()) if p.is_file()}


def changes(before: dict[str, list[str]], after: dict[str, list[str]]) -> dict[str, list[str]]:
    """file → its ``-``/``+`` lines (what ``git diff`` shows), for each file that changed."""
    out = {}
    for name in sorted(set(before) | set(after)):
        diff = [
            line
            for line in difflib.ndiff(before.get(name, []), after.get(name, []))
            if line[:1] in "+-"
        ]
        if diff:
            out[name] = diff
    return out


TESTS = 6


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_prompt_many_tests_share_is_one_line_and_changing_it_changes_that_line(
    tmp_path: Path, shape: str
) -> None:
    old, new = prompt(1), prompt(2)
    for n in range(TESTS):
        write_cassette(tmp_path / f"test_{n}.jsonl", recorded(shape, f"t{n}", old, f"q{n}"))
    before = files(tmp_path)
    store = before.pop(STORE_NAME)
    # the prompt and the tools are in the store once, in no cassette
    assert sum(old[:40] in line for line in store) == 1
    assert sum("read_file_1" in line for line in store) == 1
    assert all(old[:40] not in line for lines in before.values() for line in lines)
    assert all("read_file_1" not in line for lines in before.values() for line in lines)
    before[STORE_NAME] = store

    # one test's prompt changes: its cassette, and one new line in the store
    write_cassette(tmp_path / "test_3.jsonl", recorded(shape, "t3", new, "q3"))
    one = changes(before, files(tmp_path))
    assert sorted(one) == [STORE_NAME, "test_3.jsonl"]
    assert [line[0] for line in one[STORE_NAME]] == ["+"]
    assert new[:40] in one[STORE_NAME][0]

    # every test's prompt changes and migrate drops the old block: one line out, one in
    for n in range(TESTS):
        write_cassette(tmp_path / f"test_{n}.jsonl", recorded(shape, f"t{n}", new, f"q{n}"))
    assert gc_store(tmp_path, is_cassette) == [block_id(_stored_prompt(shape, old))]
    every = changes(before, files(tmp_path))
    assert sorted(line[0] for line in every[STORE_NAME]) == ["+", "-"]
    old_id, new_id = block_id(_stored_prompt(shape, old)), block_id(_stored_prompt(shape, new))
    for n in range(TESTS):
        name = f"test_{n}.jsonl"
        # in a cassette, only the reference changed
        assert [line.replace(new_id, old_id) for line in files(tmp_path)[name]] == before[name]
        assert load_cassette(tmp_path / name).interactions == (
            recorded(shape, f"t{n}", new, f"q{n}").interactions
        )


def _stored_prompt(shape: str, system: str) -> Any:
    """The value the system prompt's block holds for ``shape`` (the whole ``system`` list of
    an Anthropic or Bedrock request, the content of a system message...)."""
    body = SHAPES[shape][2](system, tools(1), "q")
    holders: dict[str, Callable[[dict[str, Any]], Any]] = {
        "chat-system": lambda b: b["messages"][0]["content"],
        "chat-developer": lambda b: b["messages"][0]["content"],
        "chat-system-parts": lambda b: b["messages"][0]["content"],
        "responses-instructions": lambda b: b["instructions"],
        "responses-developer-item": lambda b: b["input"][0]["content"],
        "anthropic": lambda b: b["system"],
        "anthropic-cached": lambda b: b["system"],
        "gemini": lambda b: b["systemInstruction"],
        "bedrock": lambda b: b["system"],
        "ollama": lambda b: b["messages"][0]["content"],
    }
    return holders[shape](body)


def test_the_store_is_canonical_and_sorted_one_block_a_line(tmp_path: Path) -> None:
    for n in range(5):
        write_cassette(tmp_path / f"t{n}.jsonl", recorded("anthropic", "t", prompt(n), "q", n))
    lines = (tmp_path / STORE_NAME).read_bytes().splitlines()
    assert json.loads(lines[0]) == {"format": "stuntset-blocks", "kind": "header", "version": 1}
    ids = [json.loads(line)["id"] for line in lines[1:]]
    assert ids == sorted(ids)
    assert len(ids) == 10  # five prompts, five tool lists
    assert (tmp_path / STORE_NAME).read_bytes() == dumps_store(load_store(tmp_path / STORE_NAME))


def test_a_cassette_refers_to_the_store_and_loads_only_with_it(tmp_path: Path) -> None:
    path = write_cassette(tmp_path / "c.jsonl", recorded("chat-system", "t", prompt(1), "q"))
    data = path.read_bytes()
    assert b'"kind":"block"' not in data
    assert b'"version":2' in data
    with pytest.raises(CassetteError, match=r"c.jsonl:2: field 'request.body': refers to block"):
        loads_cassette(data, source="c.jsonl")
    assert loads_cassette(data, store=load_store(tmp_path / STORE_NAME)).interactions
    (tmp_path / STORE_NAME).unlink()
    with pytest.raises(CassetteError, match=rf"which neither an earlier line nor .*{STORE_NAME}"):
        load_cassette(path)


def test_a_self_contained_cassette_holds_its_blocks(tmp_path: Path) -> None:
    cassette = recorded("chat-system", "t", prompt(1), "q")
    path = write_cassette(tmp_path / "c.jsonl", cassette, shared_blocks=False)
    assert not (tmp_path / STORE_NAME).exists()
    assert path.read_bytes() == dumps_cassette(cassette)
    assert loads_cassette(path.read_bytes()).interactions == cassette.interactions


def _version_1(cassette: Cassette) -> bytes:
    """``cassette`` as stuntset wrote it before blocks were shared (block lines inline)."""
    return dumps_cassette(cassette).replace(b'"version":2', b'"version":1', 1)


def test_migrate_moves_old_cassettes_blocks_to_the_folder_and_drops_unused_ones(
    tmp_path: Path,
) -> None:
    names = [f"test_{n}.jsonl" for n in range(6)]
    cassettes = {name: recorded("chat-system", name, prompt(1), name) for name in names}
    for name, cassette in cassettes.items():
        (tmp_path / name).write_bytes(_version_1(cassette))
        assert load_cassette(tmp_path / name).interactions == cassette.interactions  # still loads
    result = CliRunner().invoke(main, ["cassettes", "migrate", "--check", str(tmp_path)])
    assert result.exit_code == 1, result.output
    assert result.output.count("would be rewritten") == 6
    assert not (tmp_path / STORE_NAME).exists()  # --check wrote nothing

    result = CliRunner().invoke(main, ["cassettes", "migrate", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert result.output.count(": rewritten") == 6
    for name, cassette in cassettes.items():
        data = (tmp_path / name).read_bytes()
        assert b'"kind":"block"' not in data
        assert b'"version":2' in data
        assert load_cassette(tmp_path / name).interactions == cassette.interactions
    assert len(load_store(tmp_path / STORE_NAME)) == 2  # the prompt and the tools, once
    assert (
        CliRunner().invoke(main, ["cassettes", "migrate", "--check", str(tmp_path)]).exit_code == 0
    )

    # a test that is gone leaves its own blocks behind until migrate drops them
    write_cassette(tmp_path / "gone.jsonl", recorded("chat-system", "g", prompt(9), "q", 9))
    (tmp_path / "gone.jsonl").unlink()
    assert len(load_store(tmp_path / STORE_NAME)) == 4
    result = CliRunner().invoke(main, ["cassettes", "migrate", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "dropped 2 unused block(s)" in result.output
    assert len(load_store(tmp_path / STORE_NAME)) == 2
    assert all(load_cassette(tmp_path / name).interactions for name in names)


def test_keep_unused_keeps_them(tmp_path: Path) -> None:
    write_cassette(tmp_path / "gone.jsonl", recorded("anthropic", "g", prompt(9), "q", 9))
    write_cassette(tmp_path / "kept.jsonl", recorded("anthropic", "k", prompt(1), "q"))
    (tmp_path / "gone.jsonl").unlink()
    result = CliRunner().invoke(main, ["cassettes", "migrate", "--keep-unused", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert len(load_store(tmp_path / STORE_NAME)) == 4
    assert migrate_file(tmp_path / "kept.jsonl") is False


def test_verify_scans_the_store_for_secrets_and_names_unused_and_edited_blocks(
    tmp_path: Path,
) -> None:
    path = write_cassette(tmp_path / "c.jsonl", recorded("chat-system", "t", prompt(1), "q"))
    assert verify_tree(path) == (2, [])  # the cassette and its blocks
    store = tmp_path / STORE_NAME
    blocks = load_store(store)
    leaked = "sk-" + "ant-" + "k" * 32
    blocks[block_id(leaked)] = leaked  # written by hand: the writer refuses it
    edited = next(k for k, v in blocks.items() if v == prompt(1))
    blocks[edited] = prompt(1).replace("short", "long")
    store.write_bytes(dumps_store(blocks))
    for root in (path, tmp_path):  # the cassette named alone, or its folder
        checked, problems = verify_tree(root)
        assert checked == 2
        found = {(p.kind, p.line): p.message for p in problems}
        kinds = sorted(kind for kind, _ in found)
        assert kinds == ["invalid", "secret", "unused"], found
        assert any("looks like a anthropic-key" in m for m in found.values())
        assert any("does not hold what its id says" in m for m in found.values())
    result = CliRunner().invoke(main, ["cassettes", "verify", str(tmp_path)])
    assert result.exit_code == 2
    assert "note: " in result.output
    assert "no cassette of" in result.output

    # migrate stores the edited prompt under its own id, and the leaked block goes
    assert CliRunner().invoke(main, ["cassettes", "migrate", str(tmp_path)]).exit_code == 0
    assert verify_tree(tmp_path) == (2, [])
    asked = load_cassette(path).interactions[0].request.body["messages"][0]["content"]
    assert asked == prompt(1).replace("short", "long")


def test_replay_show_and_to_script_read_resolved_requests(tmp_path: Path) -> None:
    long_question = "Summarise this: " + "lorem ipsum " * 120  # 1 KiB or more: a block
    path = write_cassette(tmp_path / "c.jsonl", recorded("chat-system", "t", prompt(1), "q"))
    write_cassette(tmp_path / "long.jsonl", recorded("chat-system", "t", prompt(1), long_question))
    body = SHAPES["chat-system"][2](prompt(1), tools(1), "q 1")
    replayer = Replayer(load_cassette(path))
    assert replayer.match("POST", "/v1/chat/completions", body).response.body == {"answer": "t 1"}
    shown = CliRunner().invoke(main, ["cassettes", "show", str(tmp_path / "long.jsonl")])
    assert shown.exit_code == 0, shown.output
    assert "Summarise this: lorem ipsum" in shown.output
    script = CliRunner().invoke(main, ["cassettes", "to-script", str(path)])
    assert script.exit_code == 0, script.output


def test_a_secret_left_in_a_shared_block_refuses_the_write(tmp_path: Path) -> None:
    class Leaky(Scrubber):
        def value(self, data: object, **_: object) -> object:  # a broken filter: scrubs nothing
            return data

    key = "sk-" + "ant-" + "k" * 30
    leaked = recorded("anthropic", "t", prompt(1) + f" Use the key {key}.", "q")
    with pytest.raises(SecretFound, match=r"anthropic-key"):
        write_cassette(tmp_path / "c.jsonl", leaked, scrubber=Leaky(env={}))
    assert list(tmp_path.iterdir()) == []  # neither the cassette nor the store
    with pytest.raises(CassetteError, match=r"_blocks.jsonl is the name of the folder's block"):
        write_cassette(tmp_path / STORE_NAME, recorded("anthropic", "t", prompt(1), "q"))


def test_a_bad_store_is_named_by_file_and_line(tmp_path: Path) -> None:
    header = b'{"format":"stuntset-blocks","kind":"header","version":1}\n'
    block = b'{"id":"b-1","kind":"block","value":"x"}\n'
    cases = {
        b"": "empty file, not a block store",
        block: ":1: the first line must be the block store's header",
        header + block + block: ":3: field 'id': duplicate block id 'b-1' (first on line 2)",
        header + b"{oops\n": ":2: not valid JSON",
        header + header: ":2: a second header line",
        b'{"format":"stuntset-blocks","kind":"header","version":7}\n': "written by a newer",
        b'{"format":"other","kind":"header","version":1}\n': "'other' is not 'stuntset-blocks'",
    }
    for data, expected in cases.items():
        with pytest.raises(CassetteError) as info:
            loads_store(data, source="s.jsonl")
        assert expected in str(info.value)
        assert str(info.value).startswith("s.jsonl")


def test_the_store_lock_is_the_folders(tmp_path: Path) -> None:
    """Writers and the garbage collector hold ``flock`` on the folder: another holder, even a
    thread of this process, cannot take it meanwhile."""
    taken: list[bool] = []

    def try_lock() -> None:
        fd = os.open(tmp_path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            taken.append(True)
        except BlockingIOError:
            taken.append(False)
        finally:
            os.close(fd)

    with store_locked(tmp_path):
        thread = threading.Thread(target=try_lock)
        thread.start()
        thread.join()
    try_lock()
    assert taken == [False, True]


def _write_many(folder: str, worker: int, count: int, start: Any) -> None:
    start.wait()
    for n in range(count):
        shared = recorded("anthropic", f"{worker}-{n}", prompt(0), "q")
        own = recorded("responses-instructions", f"{worker}-{n}", prompt(100 * worker + n), "q")
        last = msgspec.structs.replace(own.interactions[0], id="i-3")
        cassette = Cassette(interactions=[*shared.interactions, last])
        write_cassette(Path(folder) / f"w{worker}-{n}.jsonl", cassette)
        if n % 3 == 2:
            gc_store(folder, is_cassette)


@pytest.mark.slow
def test_two_processes_writing_cassettes_of_one_folder_lose_no_block(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    count = 6
    workers = [
        context.Process(target=_write_many, args=(str(tmp_path), w, count, start)) for w in (1, 2)
    ]
    for worker in workers:
        worker.start()
    start.set()
    for worker in workers:
        worker.join(120)
    assert [w.exitcode for w in workers] == [0, 0]
    for w in (1, 2):
        for n in range(count):
            loaded = load_cassette(tmp_path / f"w{w}-{n}.jsonl")
            assert loaded.interactions[-1].request.body["instructions"] == prompt(100 * w + n)
    assert gc_store(tmp_path, is_cassette) == []
    assert verify_tree(tmp_path)[1] == []
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
