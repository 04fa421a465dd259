"""Requests and cassettes for the console's browser tests."""

from __future__ import annotations

from pathlib import Path

import httpx

from stuntset.cassettes.format import (
    Cassette,
    Frame,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    dumps_cassette,
)
from stuntset.console.testing import ConsoleServer

CHAT = {"model": "gpt-x", "messages": [{"role": "user", "content": "hi"}], "stream": True}
MESSAGES = {
    "model": "claude-x",
    "max_tokens": 64,
    "messages": [{"role": "user", "content": "hi"}],
    "stream": True,
}


def send(console: ConsoleServer) -> None:
    stand_in = console.stand_in
    httpx.post(stand_in.url("openai") + "/chat/completions", json=CHAT)
    limited = stand_in.url("openai", scenario="rate_limited")
    httpx.post(limited + "/chat/completions", json={**CHAT, "stream": False})
    httpx.post(
        stand_in.url("anthropic", scenario="happy_path") + "/v1/messages",
        json=MESSAGES,
        headers={"anthropic-version": "2023-06-01", "x-api-key": "sk-test"},
    )


def interaction(number: int, words: list[str], times: list[float]) -> Interaction:
    frames = [
        Frame(t=t, data=f'{{"choices":[{{"delta":{{"content":"{word}"}},"index":0}}]}}')
        for word, t in zip(words, times, strict=True)
    ]
    frames.append(Frame(t=times[-1] + 0.01, data="[DONE]"))
    return Interaction(
        id=f"i-{number}",
        wire="openai.chat",
        request=RecordedRequest(
            method="POST", path="/v1/chat/completions", body={**CHAT, "model": "gpt-x"}
        ),
        response=RecordedResponse(
            status=200, headers={"content-type": "text/event-stream"}, frames=frames
        ),
    )


def write_cassettes(folder: Path) -> None:
    old = Cassette(interactions=[interaction(1, ["Hello", " there"], [0.25, 0.3])])
    new = Cassette(interactions=[interaction(1, ["Hello", " world", "!"], [0.1, 0.15, 0.9])])
    (folder / "old.jsonl").write_bytes(dumps_cassette(old))
    (folder / "new.jsonl").write_bytes(dumps_cassette(new))
    (folder / "notes.txt").write_text("not a cassette")
