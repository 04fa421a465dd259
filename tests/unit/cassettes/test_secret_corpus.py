"""The corpus (``_secret_corpus``) × every channel a cassette holds: planted unscrubbed, the
scan (``verify``) finds each one; scrubbed, none of its core reaches the bytes in any
encoding and the scan is clean. Split positions are generated per shape (seeded), not
listed."""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest
from _secret_corpus import SHAPES, Shape, encodings, planted

from stuntset.cassettes import (
    Cassette,
    Frame,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    Scrubber,
    dumps_cassette,
    scan_for_secrets,
)
from stuntset.cassettes.format import scrub_cassette

ENV_NAME = "ACME_SERVICE_TOKEN"


def cuts(text: str, seed: str, pieces: int = 4) -> list[str]:
    """``text`` cut in ``pieces`` at positions drawn from ``seed``."""
    rng = random.Random(seed)
    points = sorted(rng.sample(range(1, len(text)), min(pieces - 1, len(text) - 1)))
    bounds = [0, *points, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def http(**parts: Any) -> Cassette:
    request = RecordedRequest(
        method="POST",
        path=parts.get("path", "/v1/chat/completions"),
        query=parts.get("query", ""),
        body=parts.get("body", {"model": "m"}),
    )
    frames = parts.get("frames")
    response = RecordedResponse(
        status=200,
        frames=None if frames is None else [Frame(t=0.0, data=d) for d in frames],
        body=parts.get("response_body"),
    )
    return Cassette(
        interactions=[Interaction(id="i-1", wire="openai-chat", request=request, response=response)]
    )


def cli(**parts: Any) -> Cassette:
    body = {
        "argv": parts.get("argv", ["-p", "hi"]),
        "cwd": "/work",
        "stdin": [{"t": 0.0, "data": line} for line in parts.get("stdin", [])],
    }
    stderr = parts.get("stderr")
    return Cassette(
        interactions=[
            Interaction(
                id="i-1",
                wire="claude-cli",
                request=RecordedRequest(method="EXEC", path="claude", body=body),
                response=RecordedResponse(
                    status=0,
                    frames=[Frame(t=0.0, data=d) for d in parts.get("stdout", ['{"x":1}'])],
                    body={"stderr": [{"t": 0.0, "data": d} for d in stderr]} if stderr else None,
                ),
            )
        ]
    )


def chunk(text: str) -> str:
    return json.dumps({"choices": [{"index": 0, "delta": {"content": text}}]})


def tool_delta(arguments: str) -> str:
    call = {"index": 0, "function": {"arguments": arguments}}
    return json.dumps({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})


def block_delta(text: str) -> str:
    event = {"type": "content_block_delta", "index": 0, "delta": {"text": text}}
    return json.dumps({"type": "stream_event", "event": event})


Channel = Callable[[str, str], Cassette]

CHANNELS: dict[str, Channel] = {
    "request body": lambda t, _: http(body={"messages": [{"role": "user", "content": t}]}),
    "request body, nested JSON text": lambda t, _: http(
        body={"input": [{"type": "function_call_output", "output": json.dumps({"out": t})}]}
    ),
    "response body": lambda t, _: http(response_body={"output_text": f"here: {t}."}),
    "sse text, split": lambda t, seed: http(
        frames=[chunk(p) for p in cuts(f"the key: {t} ok", seed)] + ["[DONE]"]
    ),
    "tool arguments, split": lambda t, seed: http(
        frames=[tool_delta(p) for p in cuts(json.dumps({"command": f"echo {t}"}), seed, 6)]
    ),
    "query": lambda t, _: http(query="q=" + quote(t, safe="")),
    "path": lambda t, _: http(path="/v1/files/" + quote(t, safe="") + "/content"),
    "cli stdout, split": lambda t, seed: cli(stdout=[block_delta(p) for p in cuts(t, seed)]),
    "cli stdout, text lines": lambda t, seed: cli(stdout=cuts(f"out {t} end", seed, 3)),
    "cli stderr": lambda t, _: cli(stderr=[f"error: {t}\n"]),
    "cli stdin": lambda t, _: cli(stdin=[json.dumps({"type": "user", "message": {"content": t}})]),
    "cli argv": lambda t, _: cli(argv=["-p", t]),
}


def scrubber_for(shape: Shape, secret: str) -> Scrubber:
    return Scrubber(env={ENV_NAME: secret} if shape.name == "env-value" else {})


@pytest.mark.parametrize("channel", CHANNELS)
def test_every_shape_in_this_channel_is_found_planted_and_never_reaches_the_bytes(
    channel: str,
) -> None:
    missed: list[str] = []
    leaked: list[str] = []
    for shape in SHAPES:
        secret, text, core = planted(shape)
        cassette = CHANNELS[channel](text, f"{shape.name}/{channel}")
        scrubber = scrubber_for(shape, secret)
        if not scan_for_secrets(dumps_cassette(cassette), scrubber):
            missed.append(shape.name)
        clean = dumps_cassette(scrub_cassette(cassette, scrubber))
        written = clean.decode()
        if any(form in written for form in encodings(core)) or scan_for_secrets(clean, scrubber):
            leaked.append(shape.name)
    assert (missed, leaked) == ([], []), f"{channel}: verify misses / reaches disk"


def test_the_corpus_holds_the_issues_shapes_and_the_earlier_ones() -> None:
    assert len(SHAPES) >= 23 + 18
    assert len({s.name for s in SHAPES}) == len(SHAPES)
