"""The demo section of the cassettes: a few scenarios recorded from the doubles and replayed —
an OpenAI chat stream through the recording proxy and the replay transport (byte for byte),
and a ``claude`` session through the CLI tee and the replaying fake (message for message,
with the client's own request ids)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import cast

import httpx2

from stuntset import scenarios
from stuntset._demo_rows import DemoRow
from stuntset.cassettes.cli_record import install_cli_recorder
from stuntset.cassettes.cli_replay import install_cli_replay
from stuntset.cassettes.format import load_cassette
from stuntset.cassettes.record import record
from stuntset.cassettes.replay import Replayer
from stuntset.doubles.cli import install_cli
from stuntset.doubles.model import serve
from stuntset.errors import HarnessFailure
from stuntset.wires import OPENAI_CHAT, wire_named

__all__ = ["cassette_rows"]

#: Streamed answers, one request each (a tool round trip needs a client that runs tools).
HTTP_SCENARIOS = ("happy_path", "long_stream", "multi_turn")
CLI_SCENARIOS = ("happy_path", "needs_approval", "multi_turn")

_ASK = {
    "model": "gpt-demo",
    "stream": True,
    "messages": [{"role": "user", "content": "demo"}],
}


def _chat_bodies(client: httpx2.Client, requests: int) -> list[bytes]:
    chat = wire_named(OPENAI_CHAT.name)
    assert chat is not None
    assert chat.endpoint is not None
    return [client.post(chat.endpoint, json=_ASK).content for _ in range(requests)]


def _record_http(name: str, path: Path) -> list[bytes]:
    """Record ``name``'s chat answers from the model double into ``path``; their bytes."""
    script = scenarios.build(name)
    with (
        serve(script) as upstream,
        record(upstream.url("openai"), path) as recording,
        httpx2.Client(base_url=recording.url) as client,
    ):
        return _chat_bodies(client, sum(turn.times for turn in script.turns))


def _http_row(name: str, directory: Path) -> DemoRow:
    path = directory / f"{name}.jsonl"
    return _replayed_http_row(name, path, _record_http(name, path))


def _replayed_http_row(name: str, path: Path, recorded: list[bytes]) -> DemoRow:
    """Replay ``path`` to the same requests: ok if the bytes are the ``recorded`` ones."""
    requests = len(recorded)
    replayer = Replayer(load_cassette(path))
    transport = cast(httpx2.BaseTransport, replayer.transport())
    with httpx2.Client(transport=transport, base_url="http://replay/v1") as client:
        replayed = _chat_bodies(client, requests)
    frames = sum(len(i.response.frames or []) for i in replayer.cassette.interactions)
    try:
        replayer.verify()
        ok = replayed == recorded
        detail = "" if ok else "the replayed bytes differ from the recorded ones"
    except HarnessFailure as failure:
        ok, detail = False, str(failure)
    outcome = f"{frames} frames recorded, replayed byte for byte"
    return DemoRow("cassette (openai chat)", name, requests, frames, outcome, ok, detail)


def _claude_session(path: str, prompts: int, init_id: str) -> list[dict[str, object]]:
    from stuntset.doubles.cli.claude._client import StreamJsonClient

    client = StreamJsonClient(path)
    client.send(
        {"type": "control_request", "request_id": init_id, "request": {"subtype": "initialize"}}
    )
    client.read()
    for index in range(prompts):
        client.turn(f"prompt {index}", stall=False, last=False)
    client.close()
    return client.messages


def _record_cli(name: str, directory: Path, cassette: Path) -> list[dict[str, object]]:
    """Record a claude session of ``name`` through the tee into ``cassette``; its messages."""
    script = scenarios.build(name)
    real = install_cli("claude", script, bin_dir=directory / name / "real", time_scale=0.0)
    tee = install_cli_recorder("claude", real.path, cassette, bin_dir=directory / name / "tee")
    return _claude_session(str(tee), sum(turn.times for turn in script.turns), "init-recorded")


def _cli_row(name: str, directory: Path) -> DemoRow:
    cassette = directory / f"{name}.claude.jsonl"
    recorded = _record_cli(name, directory, cassette)
    return _replayed_cli_row(name, directory, cassette, recorded)


def _replayed_cli_row(
    name: str, directory: Path, cassette: Path, recorded: list[dict[str, object]]
) -> DemoRow:
    """Replay ``cassette`` to a client with other request ids: ok if it sees the ``recorded``
    messages, re-addressed to its ids, and the replay found nothing amiss."""
    prompts = sum(turn.times for turn in scenarios.build(name).turns)
    replay = install_cli_replay("claude", cassette, bin_dir=directory / name / "replay")
    replayed = _claude_session(str(replay.path), prompts, "init-replayed")
    answer = replayed[0].get("response") if replayed else None
    readdressed = isinstance(answer, dict) and answer.get("request_id") == "init-replayed"
    expected = [
        json.loads(json.dumps(m).replace("init-recorded", "init-replayed")) for m in recorded
    ]
    try:
        replay.verify()
        ok = replayed == expected and readdressed
        detail = "" if ok else "the replayed session differs from the recorded one"
    except HarnessFailure as failure:
        ok, detail = False, str(failure)
    outcome = "replayed message for message, to its own request ids"
    return DemoRow("cassette (claude cli)", name, prompts, len(replayed), outcome, ok, detail)


def cassette_rows() -> list[DemoRow]:
    """Record-then-replay rows: model wire and agent CLI."""
    with tempfile.TemporaryDirectory(prefix="stuntset-demo-cassettes-") as directory:
        root = Path(directory)
        rows = [_http_row(name, root) for name in HTTP_SCENARIOS]
        rows += [_cli_row(name, root) for name in CLI_SCENARIOS]
    return rows
