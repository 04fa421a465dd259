"""What ``Framing`` does to a typical client, as its docstring says."""

from __future__ import annotations

from typing import Any

import httpx2
import openai
import pytest

import stuntset
from stuntset import Framing, scenarios
from stuntset.doubles.model import ModelDouble, transport


def test_framing_is_importable_from_stuntset() -> None:
    assert stuntset.Framing is stuntset.doubles.model.Framing
    assert "Framing" in stuntset.__all__


def test_unknown_events_crash_a_typical_chat_loop_as_documented() -> None:
    double = ModelDouble(scenarios.build("happy_path"), framing=Framing(unknown_events=True))
    client = openai.OpenAI(
        api_key="k", http_client=httpx2.Client(transport=transport(double=double))
    )
    messages: Any = [{"role": "user", "content": "hi"}]
    stream = client.chat.completions.create(model="m", messages=messages, stream=True)

    def typical_loop() -> str:
        text = ""
        with stream:
            for chunk in stream:
                text += chunk.choices[0].delta.content or ""
        return text

    with pytest.raises(TypeError, match="'NoneType' object is not subscriptable"):
        typical_loop()
    assert "TypeError: 'NoneType' object is not subscriptable" in (Framing.__doc__ or "")


def test_the_guard_the_docstring_gives_survives_it() -> None:
    double = ModelDouble(scenarios.build("happy_path"), framing=Framing(unknown_events=True))
    client = openai.OpenAI(
        api_key="k", http_client=httpx2.Client(transport=transport(double=double))
    )
    messages: Any = [{"role": "user", "content": "hi"}]
    text = ""
    for chunk in client.chat.completions.create(model="m", messages=messages, stream=True):
        if not chunk.choices:
            continue
        text += chunk.choices[0].delta.content or ""
    assert text == "Hello! How can I help you today?"
