"""The Bedrock wires in process (no boto3: the model double's ``handle``): the model id in the
path, Bedrock's error shapes by status and fault, exceptions inside a stream and how they read
back, streams rendered per request (their ids sit behind CRCs), and a binary frame's JSON
rewritten with its CRCs made again."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from stuntset.doubles.model import ModelDouble
from stuntset.script import HttpError, Overloaded, RateLimit, Script, Step, Text, ToolCall
from stuntset.wires import (
    EventStreamParser,
    Reply,
    ResponseReader,
    decode_frame,
    map_json,
    wire_named,
)
from stuntset.wires._eventstream import event_message

CONVERSE = "/model/anthropic.claude-x-v1%3A0/converse"
BODY = json.dumps({"messages": [{"role": "user", "content": [{"text": "hi"}]}]}).encode()
INVOKE_BODY = json.dumps(
    {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 8,
        "messages": [{"role": "user", "content": "hi"}],
    }
).encode()


def _body(reply: Reply) -> bytes:
    return b"".join(a for a in reply.actions if isinstance(a, bytes))


def _frames(reply: Reply) -> list[tuple[str | None, str]]:
    parser = EventStreamParser()
    return parser.feed(_body(reply)) + parser.close()


def test_the_model_id_is_read_from_the_path_percent_decoded() -> None:
    double = ModelDouble(Script.of([Text("ok")]))
    reply = double.handle("POST", "/model/anthropic.claude-x-v1%3A0/invoke", "", {}, INVOKE_BODY)
    assert json.loads(_body(reply))["model"] == "anthropic.claude-x-v1:0"
    assert double.requests[0].wire == "bedrock-invoke"


def test_a_body_bedrock_refuses_is_a_validation_exception() -> None:
    double = ModelDouble(Script.of([Text("unused")]))
    reply = double.handle("POST", CONVERSE, "", {}, b'{"messages": []}')
    assert reply.status == 400
    headers = dict(reply.headers)
    assert headers["x-amzn-ErrorType"].startswith("ValidationException:http://")
    assert set(json.loads(_body(reply))) == {"message"}


CODES: list[tuple[Step, int, str]] = [
    (HttpError(424), 424, "ModelErrorException"),
    (HttpError(418), 418, "ValidationException"),
    (HttpError(502), 502, "InternalServerException"),
    (HttpError(404), 404, "ResourceNotFoundException"),
    (HttpError(429, error_type="ModelNotReadyException"), 429, "ModelNotReadyException"),
    (RateLimit(), 429, "ThrottlingException"),
    (Overloaded(), 503, "ServiceUnavailableException"),
]


@pytest.mark.parametrize(("fault", "status", "code"), CODES, ids=[c[2] for c in CODES])
def test_a_status_fault_is_bedrocks_code_in_its_header(fault: Step, status: int, code: str) -> None:
    double = ModelDouble(Script.of([fault]))
    reply = double.handle("POST", CONVERSE, "", {}, BODY)
    assert reply.status == status
    assert dict(reply.headers)["x-amzn-ErrorType"].partition(":")[0] == code
    wire = wire_named("bedrock-converse")
    assert wire is not None
    step = wire.read_error(status, json.loads(_body(reply)), dict(reply.headers))
    assert isinstance(step, HttpError)
    assert (step.status, step.error_type) == (status, code)


STREAMED: list[tuple[str, Step, str, type[Step]]] = [
    ("converse", RateLimit(), "throttlingException", RateLimit),
    ("converse", Overloaded(), "serviceUnavailableException", Overloaded),
    ("converse", HttpError(400), "validationException", HttpError),
    ("converse", HttpError(408), "modelStreamErrorException", HttpError),
    ("invoke", HttpError(408), "modelTimeoutException", HttpError),
    ("invoke", HttpError(500), "internalServerException", HttpError),
]


@pytest.mark.parametrize(("operation", "fault", "name", "kind"), STREAMED)
def test_a_fault_after_content_is_an_exception_inside_the_stream(
    operation: str, fault: Step, name: str, kind: type[Step]
) -> None:
    double = ModelDouble(Script.of([Text("partial"), fault]))
    stream = "/converse-stream" if operation == "converse" else "/invoke-with-response-stream"
    body = BODY if operation == "converse" else INVOKE_BODY
    reply = double.handle("POST", f"/model/m{stream}", "", {}, body)
    frames = _frames(reply)
    message = decode_frame(frames[-1][1])
    assert (message.kind, message.name) == ("exception", name)
    wire = wire_named(f"bedrock-{operation}")
    assert wire is not None
    reader = ResponseReader()

    class Frame:
        def __init__(self, event: str | None, data: str) -> None:
            self.event, self.data = event, data

    assert wire.read_frames([Frame(e, d) for e, d in frames], reader)
    steps = reader.steps()
    assert steps[0] == Text("partial", chunks=1)
    assert type(steps[-1]) is kind


def test_streams_are_rendered_per_request_with_fresh_ids_and_valid_crcs() -> None:
    # a template would fill ids in after the CRCs were computed (or miss them in base64)
    turn = [ToolCall("f", {"a": 1})]
    double = ModelDouble(Script.of(turn, turn))
    ids = []
    for _ in range(2):
        reply = double.handle("POST", "/model/m/converse-stream", "", {}, BODY)
        events = [decode_frame(data) for _, data in _frames(reply)]  # CRCs checked
        start = next(json.loads(m.payload) for m in events if m.name == "contentBlockStart")
        ids.append(start["start"]["toolUse"]["toolUseId"])
    assert ids[0] != ids[1]
    assert all(i.startswith("tooluse") for i in ids)


def test_map_json_rewrites_a_payload_and_makes_the_crcs_again() -> None:
    data = base64.b64encode(event_message("contentBlockDelta", b'{"text":"sk-secret"}')).decode()

    def clean(value: Any) -> Any:
        return {"text": "<scrubbed>"} if value == {"text": "sk-secret"} else value

    out = map_json(data, clean)
    assert json.loads(decode_frame(out).payload) == {"text": "<scrubbed>"}
    assert decode_frame(out).headers == decode_frame(data).headers
    assert map_json(out, clean) == out  # nothing to change: the frame as it was
    assert map_json("not base64!", clean) == "not base64!"


def test_map_json_reaches_the_event_inside_an_invoke_chunk() -> None:
    inner = base64.b64encode(b'{"type":"ping","key":"sk-secret"}').decode()
    data = base64.b64encode(event_message("chunk", json.dumps({"bytes": inner}).encode()))

    def clean(value: Any) -> Any:
        return (
            {**value, "key": "<scrubbed>"} if isinstance(value, dict) and "key" in value else value
        )

    out = decode_frame(map_json(data.decode(), clean))
    event = json.loads(base64.b64decode(json.loads(out.payload)["bytes"]))
    assert event == {"type": "ping", "key": "<scrubbed>"}


def test_an_unknown_event_type_in_the_framing_stress_is_its_own_message() -> None:
    """``Framing(unknown_events=True)`` adds an event no client knows (botocore skips it)."""
    import json as _json

    from stuntset import Framing
    from stuntset.doubles.model import ModelDouble
    from stuntset.script import Script as _Script
    from stuntset.script import Text as _Text
    from stuntset.wires._eventstream import EventStreamParser

    double = ModelDouble(_Script.of([_Text("hi")]), framing=Framing(unknown_events=True))
    body = _json.dumps({"messages": [{"role": "user", "content": [{"text": "hi"}]}]}).encode()
    reply = double.handle(
        "POST", "/bedrock/model/anthropic.claude-x/converse-stream", "", {"host": "h"}, body
    )
    assert reply.status == 200
    data = b"".join(a for a in reply.actions if isinstance(a, bytes))
    names = [name for name, _ in EventStreamParser().feed(data)]
    assert names[:2] == ["messageStart", "stuntsetUnknown"]
