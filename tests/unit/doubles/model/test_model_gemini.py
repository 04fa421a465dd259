"""The Gemini wire of the model double, at the HTTP level: routes, what a request is read as,
Google's error shape for every kind of failure, and the stream's chunks."""

from __future__ import annotations

import json
from typing import Any

import pytest

from stuntset.doubles.model import Framing, ModelDouble
from stuntset.script import (
    AuthExpired,
    HttpError,
    OutOfOrder,
    Overloaded,
    RateLimit,
    Script,
    Text,
    ToolCall,
    ToolResult,
    Usage,
)
from stuntset.wires.gemini import gemini_codec, gemini_status

PATH = "/v1beta/models/gemini-x:generateContent"
STREAM = "/v1beta/models/gemini-x:streamGenerateContent"
ASK = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}


def post(double: ModelDouble, path: str, body: Any, query: str = "") -> tuple[int | None, bytes]:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    reply = double.handle("POST", path, query, {"content-type": "application/json"}, raw)
    return reply.status, b"".join(a for a in reply.actions if isinstance(a, bytes))


def chunks(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in data.split(b"\n") if line.startswith(b"data: ")]


def test_routes_name_the_model_and_the_method() -> None:
    whole = gemini_codec(PATH)
    assert whole is not None
    assert (whole.model, whole.stream) == ("gemini-x", False)
    streamed = gemini_codec("/v1/models/gemini-x:streamGenerateContent")
    assert streamed is not None
    assert streamed.stream
    assert gemini_codec(PATH) is whole  # one codec per path: templates stay per model
    assert gemini_codec("/v1beta/models/gemini-x:countTokens") is None
    assert gemini_codec("/v1/chat/completions") is None


def test_a_response_is_one_candidate_with_its_parts_usage_and_finish_reason() -> None:
    double = ModelDouble(
        Script.of([Text("Calling."), ToolCall("f", {"a": 1}, id="c1"), Usage(5, 3)])
    )
    status, body = post(double, PATH, ASK)
    assert status == 200
    response = json.loads(body)
    (candidate,) = response["candidates"]
    assert candidate == {
        "content": {
            "parts": [
                {"text": "Calling."},
                {"functionCall": {"name": "f", "args": {"a": 1}, "id": "c1"}},
            ],
            "role": "model",
        },
        "finishReason": "STOP",
        "index": 0,
    }
    assert response["usageMetadata"] == {
        "promptTokenCount": 5,
        "candidatesTokenCount": 3,
        "totalTokenCount": 8,
    }
    assert response["modelVersion"] == "gemini-x"
    entry = double.requests[0]
    assert (entry.wire, entry.path) == ("gemini", PATH)


def test_a_stream_is_whole_responses_with_the_finish_reason_on_the_last() -> None:
    double = ModelDouble(Script.of([Text("abcdef", chunks=3), ToolCall("f", {}), Usage(2, 1)]))
    status, body = post(double, "/gemini" + STREAM, ASK, "alt=sse")
    assert status == 200
    seen = chunks(body)
    parts = [c["candidates"][0]["content"]["parts"][0] for c in seen]
    assert parts == [
        {"text": "ab"},
        {"text": "cd"},
        {"text": "ef"},
        {"functionCall": {"name": "f", "args": {}}},
        {"text": ""},
    ]
    assert ["finishReason" in c["candidates"][0] for c in seen] == [False] * 4 + [True]
    assert seen[0]["usageMetadata"] == {"promptTokenCount": 2, "totalTokenCount": 2}
    assert seen[-1]["usageMetadata"]["candidatesTokenCount"] == 1
    assert b"[DONE]" not in body
    assert double.requests[0].path == STREAM  # the /gemini prefix is not part of the API path


def test_function_responses_answer_the_rest_of_the_turn() -> None:
    double = ModelDouble(Script.of([ToolCall("f", {}), ToolResult("ok"), Text("done")]))
    post(double, PATH, ASK)
    answer = {
        "contents": [
            *ASK["contents"],
            {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}]},
        ]
    }
    status, body = post(double, PATH, answer)
    assert status == 200
    assert json.loads(body)["candidates"][0]["content"]["parts"] == [{"text": "done"}]
    double.verify()


@pytest.mark.parametrize(
    ("fault", "status", "google", "message"),
    [
        (RateLimit(), 429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
        (Overloaded(), 503, "UNAVAILABLE", "The model is overloaded."),
        (HttpError(500), 500, "INTERNAL", "Internal Server Error"),
        (HttpError(504), 504, "DEADLINE_EXCEEDED", "Gateway Timeout"),
        (HttpError(418), 418, "INVALID_ARGUMENT", "I'm a Teapot"),
        (HttpError(502), 502, "INTERNAL", "Bad Gateway"),
        (
            HttpError(400, "API key expired.", error_type="API_KEY_INVALID"),
            400,
            "API_KEY_INVALID",
            "API key expired.",
        ),
        (RateLimit(message="slow down"), 429, "RESOURCE_EXHAUSTED", "slow down"),
    ],
)
def test_status_faults_are_googles_error_object(
    fault: Any, status: int, google: str, message: str
) -> None:
    status_seen, body = post(ModelDouble(Script.of([fault])), PATH, ASK)
    assert status_seen == status
    error = json.loads(body)["error"]
    assert (error["code"], error["status"]) == (status, google)
    assert error["message"].startswith(message)
    assert set(error) == {"code", "message", "status"}


KEY_EXPIRED = {
    "code": 400,
    "message": "API key expired. Please renew the API key.",
    "status": "INVALID_ARGUMENT",
    "details": [
        {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "API_KEY_INVALID",
            "domain": "googleapis.com",
            "metadata": {"service": "generativelanguage.googleapis.com"},
        },
        {
            "@type": "type.googleapis.com/google.rpc.LocalizedMessage",
            "locale": "en-US",
            "message": "API key expired. Please renew the API key.",
        },
    ],
}


@pytest.mark.parametrize(("path", "query"), [(PATH, ""), (STREAM, "alt=sse")])
def test_an_expired_key_is_the_developer_apis_400_not_a_401(path: str, query: str) -> None:
    status, body = post(ModelDouble(Script.of([AuthExpired()])), path, ASK, query)
    assert status == 400
    assert json.loads(body) == {"error": KEY_EXPIRED}


def test_an_expired_key_keeps_a_scripted_message_and_fires_mid_stream_too() -> None:
    double = ModelDouble(Script.of([Text("partial"), AuthExpired(message="key gone")]))
    status, body = post(double, STREAM, ASK, "alt=sse")
    assert status == 200
    error = chunks(body)[-1]["error"]
    assert (error["code"], error["status"], error["message"]) == (
        400,
        "INVALID_ARGUMENT",
        "key gone",
    )
    assert error["details"][0]["reason"] == "API_KEY_INVALID"
    assert error["details"][1]["message"] == "key gone"


def test_a_fault_after_content_is_an_error_chunk_in_the_stream() -> None:
    double = ModelDouble(Script.of([Text("partial"), Overloaded()]))
    status, body = post(double, STREAM, ASK, "alt=sse")
    assert status == 200
    last = chunks(body)[-1]
    assert last == {
        "error": {
            "code": 503,
            "message": "The model is overloaded. Please try again later.",
            "status": "UNAVAILABLE",
        }
    }


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"contents": []}, "contents is not specified"),
        ({"prompt": "hi"}, "contents is not specified"),
        (b"{not json", "could not parse the JSON body"),
        ([1, 2], "must be a JSON object"),
    ],
)
def test_a_request_the_api_refuses_is_its_400(body: Any, message: str) -> None:
    status, raw = post(ModelDouble(Script.of([Text("x")])), PATH, body)
    assert status == 400
    error = json.loads(raw)["error"]
    assert (error["code"], error["status"]) == (400, "INVALID_ARGUMENT")
    assert message in error["message"]


def test_out_of_order_is_text_after_the_finish_or_an_array_for_an_object() -> None:
    streamed = chunks(post(ModelDouble(Script.of([OutOfOrder()])), STREAM, ASK, "alt=sse")[1])
    assert "finishReason" in streamed[-2]["candidates"][0]
    assert streamed[-1]["candidates"][0]["content"]["parts"] == [{"text": "out of order"}]
    whole = json.loads(post(ModelDouble(Script.of([OutOfOrder()])), PATH, ASK)[1])
    assert isinstance(whole, list)
    assert [c["candidates"][0]["content"]["parts"][0]["text"] for c in whole] == ["out", "of order"]


def test_an_unknown_event_is_a_chunk_without_candidates() -> None:
    double = ModelDouble(Script.of([Text("ab", chunks=2)]), framing=Framing(unknown_events=True))
    seen = chunks(post(double, STREAM, ASK, "alt=sse")[1])
    assert "candidates" not in seen[1]
    assert [("candidates" in c) for c in seen] == [True, False, True, True]


def test_status_names_follow_google_rpc() -> None:
    assert [gemini_status(s) for s in (400, 401, 403, 404, 429, 499, 500, 503, 504, 599)] == [
        "INVALID_ARGUMENT",
        "UNAUTHENTICATED",
        "PERMISSION_DENIED",
        "NOT_FOUND",
        "RESOURCE_EXHAUSTED",
        "CANCELLED",
        "INTERNAL",
        "UNAVAILABLE",
        "DEADLINE_EXCEEDED",
        "INTERNAL",
    ]


def test_a_body_over_the_limit_is_googles_413() -> None:
    double = ModelDouble(Script.of())
    reply = double.too_large("POST", PATH, "", {}, 10)
    error = json.loads(reply.actions[0])["error"]  # type: ignore[arg-type]
    assert (reply.status, error["status"]) == (413, "INVALID_ARGUMENT")
    assert double.requests[0].wire == "gemini"
