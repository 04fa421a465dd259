"""Replay matches a live request as it was recorded: scrubbed by the same rules (issue 32).
A prompt holding a secret-shaped string is written scrubbed; the live one is not."""

from __future__ import annotations

from pathlib import Path

import httpx2
import openai
import pytest
from _secret_corpus import SHAPES, planted

from stuntset.cassettes import (
    Cassette,
    Frame,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    Scrubber,
    load_cassette,
    write_cassette,
)
from stuntset.cassettes.replay import CassetteMismatch, Replayer

CHAT = "/v1/chat/completions"


def prompt(text: str) -> dict[str, object]:
    return {"model": "gpt-x", "messages": [{"role": "user", "content": f"use {text} please"}]}


def recorded(tmp_path: Path, bodies: list[dict[str, object]]) -> Cassette:
    interactions = [
        Interaction(
            id=f"i-{n}",
            wire="openai-chat",
            request=RecordedRequest(method="POST", path=CHAT, body=body),
            response=RecordedResponse(status=200, body={"n": n}),
        )
        for n, body in enumerate(bodies, start=1)
    ]
    path = tmp_path / "c.jsonl"
    write_cassette(path, Cassette(interactions=interactions), scrubber=Scrubber(env={}))
    return load_cassette(path)


def test_every_shape_in_a_prompt_replays_and_a_different_prompt_still_misses(
    tmp_path: Path,
) -> None:
    shapes = [s for s in SHAPES if s.name != "env-value"]  # its rule is the recorder's env
    texts = [planted(shape)[1] for shape in shapes]
    cassette = recorded(tmp_path, [prompt(t) for t in texts])
    # what the scrub equates is only the secret: another prompt is still a mismatch, and the
    # message names it scrubbed (the live secret is not printed)
    secret = planted(shapes[0])[0]
    with pytest.raises(CassetteMismatch) as raised:
        Replayer(cassette, scrubber=Scrubber(env={})).match("POST", CHAT, prompt(secret + " x"))
    assert secret[-16:] not in str(raised.value)
    assert "<scrubbed:" in str(raised.value)
    replayer = Replayer(cassette, scrubber=Scrubber(env={}))
    unmatched = []
    for shape, text in zip(shapes, texts, strict=True):
        try:
            replayer.match("POST", CHAT, prompt(text))
        except CassetteMismatch:
            unmatched.append(shape.name)
    assert unmatched == []
    assert replayer.unused() == []


def test_the_real_client_replays_a_prompt_with_a_key_in_it(tmp_path: Path) -> None:
    key = "sk-" + "proj-" + "Qm4vR8tZ2wXy6pLk" * 3
    body = {
        "model": "gpt-x",
        "messages": [{"role": "user", "content": "my key is " + key}],
        "stream": True,
    }
    cassette = Cassette(
        interactions=[
            Interaction(
                id="i-1",
                wire="openai-chat",
                request=RecordedRequest(method="POST", path=CHAT, body=body),
                response=RecordedResponse(
                    status=200,
                    headers={"content-type": "text/event-stream"},
                    frames=[
                        Frame(
                            t=0.0,
                            data='{"id":"c","object":"chat.completion.chunk","created":1,'
                            '"model":"gpt-x","choices":[{"index":0,"delta":{"content":"ok"},'
                            '"finish_reason":null}]}',
                        ),
                        Frame(t=0.0, data="[DONE]"),
                    ],
                ),
            )
        ]
    )
    path = tmp_path / "k.jsonl"
    write_cassette(path, cassette, scrubber=Scrubber(env={}))
    assert key not in path.read_text()
    replayer = Replayer(load_cassette(path), scrubber=Scrubber(env={}))
    client = openai.OpenAI(
        api_key="x",
        base_url="http://replay/v1",
        http_client=httpx2.Client(transport=replayer.transport()),
        max_retries=0,
    )
    with client:
        stream = client.chat.completions.create(
            model="gpt-x", messages=[{"role": "user", "content": "my key is " + key}], stream=True
        )
        text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text == "ok"
    replayer.verify()
