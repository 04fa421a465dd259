"""The Gemini wire's other stream form: ``streamGenerateContent`` without ``alt=sse`` is one
JSON array of responses, written element by element (docs/protocol-gemini.md#streams), and
every fault of the catalog in that form."""

from __future__ import annotations

import json
from typing import Any

import pytest

from stuntset.doubles.model import Framing, ModelDouble
from stuntset.script import (
    AuthExpired,
    Exit,
    Garbage,
    MalformedJson,
    OutOfOrder,
    Overloaded,
    RateLimit,
    Script,
    Stall,
    StreamCut,
    Text,
    ToolCall,
    Usage,
)
from stuntset.wires._reply import ABORT, STALL, Reply
from stuntset.wires.gemini import asks_for_sse, gemini_codec

STREAM = "/v1beta/models/gemini-x:streamGenerateContent"
ASK = json.dumps({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}).encode()
JSON_TYPE = ("content-type", "application/json; charset=UTF-8")


def answer(double: ModelDouble, query: str = "") -> Reply:
    return double.handle("POST", STREAM, query, {"content-type": "application/json"}, ASK)


def written(reply: Reply) -> bytes:
    return b"".join(a for a in reply.actions if isinstance(a, bytes))


def sse_parts(reply: Reply) -> list[Any]:
    events = [json.loads(line[6:]) for line in written(reply).split(b"\n") if line[:6] == b"data: "]
    return [e["candidates"][0]["content"]["parts"] for e in events]


@pytest.mark.parametrize(
    ("query", "sse"),
    [
        ("alt=sse", True),
        ("key=k&alt=sse", True),
        ("%24alt=sse", True),  # Google's front end reads ``$alt`` too
        ("$alt=sse;enum-encoding=int", True),
        ("", False),
        ("alt=json", False),
        ("key=sse", False),
    ],
)
def test_only_alt_sse_asks_for_sse(query: str, sse: bool) -> None:
    assert asks_for_sse(query) is sse


def test_the_stream_form_is_part_of_the_codec() -> None:
    array = gemini_codec(STREAM, sse=False)
    assert array is not None
    assert array.array
    assert gemini_codec(STREAM, sse=False) is array
    assert gemini_codec(STREAM) is not array
    whole = gemini_codec("/v1beta/models/gemini-x:generateContent", sse=False)
    assert whole is not None
    assert not whole.array  # only a stream has two forms


def test_without_alt_sse_the_stream_is_one_json_array_of_the_same_responses() -> None:
    script = Script.of([Text("abcd", chunks=2), ToolCall("f", {"a": 1}), Usage(2, 1)])
    reply = answer(ModelDouble(script))
    assert reply.status == 200
    assert reply.streaming
    assert reply.headers[0] == JSON_TYPE
    body = written(reply)
    # Google's layout: ``[`` glued to the first element, each element pretty-printed with a
    # two-space indent, ``\n,\r\n`` between two, ``\n]`` at the end
    assert body.startswith(b'[{\n  "candidates": [\n    {\n')
    assert body.count(b"}\n,\r\n{\n") == 3
    assert body.endswith(b"}\n]")
    elements = json.loads(body)
    assert [e["candidates"][0]["content"]["parts"] for e in elements] == sse_parts(
        answer(ModelDouble(script), "alt=sse")
    )
    assert ["finishReason" in e["candidates"][0] for e in elements] == [False] * 3 + [True]
    # one write per element: the array is sent as it grows
    assert len([a for a in reply.actions if isinstance(a, bytes)]) == 4


def test_framing_stress_keeps_the_array_valid() -> None:
    framing = Framing(unknown_events=True, repeat_first_event=True, write_size=7)
    reply = answer(ModelDouble(Script.of([Text("ab", chunks=2)]), framing=framing))
    elements = json.loads(written(reply))
    assert ["candidates" in e for e in elements] == [True, True, False, True, True]
    assert elements[0] == elements[1]  # the repeated first element
    assert all(len(a) <= 7 for a in reply.actions if isinstance(a, bytes))


@pytest.mark.parametrize(
    ("fault", "status", "google"),
    [
        (RateLimit(), 429, "RESOURCE_EXHAUSTED"),
        (Overloaded(), 503, "UNAVAILABLE"),
        (AuthExpired(), 400, "INVALID_ARGUMENT"),
    ],
)
def test_a_status_fault_before_content_is_an_array_of_the_one_error(
    fault: Any, status: int, google: str
) -> None:
    reply = answer(ModelDouble(Script.of([fault])))
    assert reply.status == status
    assert JSON_TYPE in reply.headers
    body = written(reply)
    assert body.startswith(b'[{\n  "error": {\n    "code": ')
    assert body.endswith(b"}\n]")
    (element,) = json.loads(body)
    assert (element["error"]["code"], element["error"]["status"]) == (status, google)


def test_a_request_the_api_refuses_is_an_array_too() -> None:
    double = ModelDouble(Script.of([Text("x")]))
    reply = double.handle("POST", STREAM, "", {}, b'{"contents": []}')
    assert reply.status == 400
    (element,) = json.loads(written(reply))
    assert element["error"]["status"] == "INVALID_ARGUMENT"


def test_an_expired_key_mid_stream_is_the_last_element_and_the_array_closes() -> None:
    reply = answer(ModelDouble(Script.of([Text("partial"), AuthExpired()])))
    assert reply.status == 200
    elements = json.loads(written(reply))
    error = elements[-1]["error"]
    assert (error["code"], error["status"]) == (400, "INVALID_ARGUMENT")
    assert error["details"][0]["reason"] == "API_KEY_INVALID"
    assert elements[0]["candidates"][0]["content"]["parts"] == [{"text": "partial"}]


def test_a_cut_stream_leaves_the_array_open() -> None:
    reply = answer(ModelDouble(Script.of([Text("abc", chunks=3), StreamCut(after_events=2)])))
    assert reply.actions[-1] is ABORT
    body = written(reply)
    assert body.startswith(b"[{")
    assert not body.endswith(b"]")
    assert body.count(b"\n,\r\n") == 1  # two elements, then the connection drops
    clean = answer(ModelDouble(Script.of([Text("abc", chunks=3), StreamCut(clean=True)])))
    assert not written(clean).endswith(b"]")
    assert clean.actions[-1] is not ABORT


def test_malformed_json_is_an_element_that_does_not_parse() -> None:
    reply = answer(ModelDouble(Script.of([Text("ok"), MalformedJson(text='{"candidates": [')])))
    body = written(reply)
    assert body.endswith(b'\n,\r\n{"candidates": [\n]')
    with pytest.raises(json.JSONDecodeError):
        json.loads(body)


def test_garbage_stall_and_a_crash_follow_the_elements_sent() -> None:
    garbage = written(answer(ModelDouble(Script.of([Text("ok"), Garbage()]))))
    assert garbage.startswith(b"[{")
    assert b"\n,\r\n" not in garbage
    stalled = answer(ModelDouble(Script.of([Text("ok"), Stall()])))
    assert stalled.actions[-1] is STALL
    assert written(stalled).startswith(b"[{")
    crashed = answer(ModelDouble(Script.of([Text("ok"), Exit(1)])))
    assert crashed.actions[-1] is ABORT


def test_out_of_order_is_text_after_the_finishing_element_inside_the_array() -> None:
    elements = json.loads(written(answer(ModelDouble(Script.of([OutOfOrder()])))))
    assert "finishReason" in elements[-2]["candidates"][0]
    assert elements[-1]["candidates"][0]["content"]["parts"] == [{"text": "out of order"}]


def test_the_journal_keeps_the_query_that_chose_the_form() -> None:
    double = ModelDouble(Script.of([Text("a")], [Text("b")]))
    answer(double)
    answer(double, "alt=sse")
    assert [(r.path, r.query, r.wire) for r in double.requests] == [
        (STREAM, "", "gemini"),
        (STREAM, "alt=sse", "gemini"),
    ]
