"""Ollama's request checks, as Ollama words them: a missing model and messages that are not
an array are 400s whose ``error`` says so, before any turn is played."""

from __future__ import annotations

import json

import pytest

from stuntset.doubles.model import ModelDouble
from stuntset.script import Script, Text


@pytest.mark.parametrize(
    ("path", "body", "said"),
    [
        ("/ollama/api/chat", {}, "model is required"),
        ("/ollama/api/chat", {"model": "m", "messages": "hi"}, "cannot unmarshal messages"),
        ("/ollama/api/generate", {"prompt": "hi"}, "model is required"),
        ("/ollama/api/generate", {"model": "", "prompt": "hi"}, "model is required"),
    ],
)
def test_a_bad_request_is_a_400_in_ollamas_words(path: str, body: dict, said: str) -> None:  # type: ignore[type-arg]
    double = ModelDouble(Script.of([Text("unused")]))
    reply = double.handle("POST", path, "", {"host": "h"}, json.dumps(body).encode())
    data = b"".join(a for a in reply.actions if isinstance(a, bytes))
    assert reply.status == 400
    assert said in json.loads(data)["error"]
    assert len(double.unused()) == 1  # the request played no turn
