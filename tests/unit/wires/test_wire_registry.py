"""Every face of every wire in the registry, one parameterised test per face: a new wire is
checked by these as soon as it is listed in ``stuntset.wires.WIRES``.

- routing: each of its paths reaches its codec through the registry, the double and the
  cassettes' ``wire_of``, under its provider's prefix too;
- render → read back: a script rendered by the double (streamed and whole) reads back, from
  the frames its framing cuts, as the steps it was made of;
- errors: a status fault rendered on the wire reads back as the status it was;
- request views: a conversation its demo client sends is read by the prefix view, the history
  reader and the tool reader of the checks.
"""

from __future__ import annotations

import json
import typing
from typing import Any

import httpx2
import pytest

from stuntset.cassettes.format import wire_of
from stuntset.checks.prefix import CACHE_FIELDS
from stuntset.checks.requests import MODEL_WIRES
from stuntset.doubles.model import ModelDouble, ModelTransport
from stuntset.doubles.model.double import is_model_route
from stuntset.ids import SequentialIds
from stuntset.script import HttpError, RateLimit, Reasoning, Script, Step, Text, ToolCall, Usage
from stuntset.wires import (
    API_PATHS,
    PROVIDERS,
    SSE,
    WIRE_NAMES,
    WIRES,
    Framing,
    ModelWire,
    ProviderName,
    RenderContext,
    ResponseReader,
    Seen,
    codec_for,
    plan_of,
    recorded_wire,
    render,
    stream_framing,
    wire_named,
    wire_of_path,
)

by_name = pytest.mark.parametrize("wire", WIRES, ids=WIRE_NAMES)


class _Frame:
    def __init__(self, event: str | None, data: str) -> None:
        self.event, self.data = event, data


def _split(query_path: str) -> tuple[str, str]:
    path, _, query = query_path.partition("?")
    return path, query


def _api_paths(wire: ModelWire) -> list[tuple[str, str]]:
    """Its fixed paths and its demo client's path, as (path, query)."""
    return [*((path, "") for path in wire.paths), _split(wire.client.path)]


# --- the registry itself ---------------------------------------------------------------------


def test_names_aliases_and_providers_are_unique_and_agree() -> None:
    names = [name for wire in WIRES for name in (wire.name, *wire.aliases)]
    assert len(names) == len(set(names))
    assert all(wire_named(wire.name) is wire for wire in WIRES)
    assert all(wire.declared.name == wire.name for wire in WIRES)
    assert typing.get_args(ProviderName) == PROVIDERS
    assert MODEL_WIRES == WIRE_NAMES
    assert set(CACHE_FIELDS) == set(WIRE_NAMES)


def test_an_unknown_recorded_wire_reads_as_the_first_and_is_no_model_wire() -> None:
    assert recorded_wire("http") is WIRES[0]
    assert wire_named("http") is None
    assert wire_of("/v1/embeddings") == "http"
    assert codec_for("/v1/embeddings") is None


# --- routing ---------------------------------------------------------------------------------


@by_name
def test_each_path_routes_to_the_wire(wire: ModelWire) -> None:
    for path, query in _api_paths(wire):
        codec = codec_for(path, query)
        assert codec is not None, path
        assert codec.wire is wire.declared
        assert wire.codec_for(path, query) is codec
        assert wire_of_path(path) is wire
        assert wire_of(path) == wire.name
        assert wire_of(f"/{wire.provider}{path}") == wire.name
        assert is_model_route(f"/{wire.provider}{path}".encode())
        assert is_model_route(f"/scenarios/happy_path{path}".encode())
    assert all(path in API_PATHS for path in wire.paths)
    assert wire.pattern is None or wire.pattern in API_PATHS


@by_name
def test_the_double_answers_the_wires_client_on_its_paths(wire: ModelWire) -> None:
    double = ModelDouble(Script.of([Text("hello")]))
    with httpx2.Client(transport=ModelTransport(double), base_url="http://stand-in") as client:
        history = [wire.client.user("hi")]
        response = client.post(
            f"/{wire.provider}{wire.client.path}",
            json=wire.client.request(history),
            headers={"anthropic-version": "2023-06-01"},
        )
    assert response.status_code == 200
    assert stream_framing(response.headers["content-type"]) is wire.stream
    assert double.requests[0].wire == wire.name
    double.verify()


# --- render → read back ----------------------------------------------------------------------

STEPS: tuple[Step, ...] = (
    Reasoning("thinking it over", signature="sig-1"),
    Text("The answer is 42."),
    ToolCall("search", {"query": "stuntset"}, id="call_1"),
    Usage(input_tokens=12, output_tokens=7),
)


def _context(codec_id_prefix: str) -> RenderContext:
    ids = SequentialIds()
    return RenderContext(
        model="model-x",
        response_id=ids.new(codec_id_prefix),
        request_id=ids.new("req"),
        created=0,
        ids=ids,
        seed=0,
        framing=Framing(),
        include_usage=True,
    )


def _kinds(steps: list[Step]) -> list[tuple[str, Any]]:
    """What must survive a round trip: the kinds, texts, calls and usage."""
    out: list[tuple[str, Any]] = []
    for step in steps:
        if isinstance(step, Text | Reasoning):
            out.append((type(step).__name__, step.text))
        elif isinstance(step, ToolCall):
            out.append(("ToolCall", (step.name, dict(step.input))))
        elif isinstance(step, Usage):
            out.append(("Usage", (step.input_tokens, step.output_tokens)))
    return out


def _read_back_stream(wire: ModelWire, streaming: bool) -> tuple[list[Step], bool]:
    path, query = _split(wire.client.path)
    codec = codec_for(path, query)
    assert codec is not None
    reply = render(codec, plan_of(STEPS), streaming, _context(codec.id_prefix))
    assert reply.status == 200
    body = b"".join(action for action in reply.actions if isinstance(action, bytes))
    reader = ResponseReader()
    if streaming:
        parser = wire.stream.parser()
        frames = [_Frame(e, d) for e, d in [*parser.feed(body), *parser.close()]]
        assert frames, "the stream has frames"
        done = wire.read_frames(frames, reader)
    else:
        done = wire.read_body(json.loads(body), reader)
    return reader.steps(), done


@by_name
@pytest.mark.parametrize("streaming", [True, False], ids=["streamed", "whole"])
def test_a_rendered_response_reads_back_as_its_steps(wire: ModelWire, streaming: bool) -> None:
    steps, done = _read_back_stream(wire, streaming)
    assert done, "a complete response reads back as complete"
    expected = _kinds(list(STEPS))
    if not streaming:  # a whole body carries no signature deltas: compare what it carries
        expected = [kind for kind in expected if kind[0] != "Reasoning"]
        steps = [step for step in steps if not isinstance(step, Reasoning)]
    assert _kinds(steps) == expected


@by_name
def test_a_status_fault_reads_back_as_its_status(wire: ModelWire) -> None:
    codec = wire.codec_for(*_split(wire.client.path))
    assert codec is not None
    reply = render(codec, plan_of((RateLimit(retry_after_ms=1500),)), False, _context("x"))
    assert reply.status == 429
    body = json.loads(b"".join(a for a in reply.actions if isinstance(a, bytes)))
    step = wire.read_error(429, body, dict(reply.headers))
    assert isinstance(step, HttpError)
    assert step.status == 429
    assert step.retry_after_ms == 1500


@by_name
def test_its_framing_is_one_the_recorder_knows(wire: ModelWire) -> None:
    assert stream_framing(wire.stream.content_type) is wire.stream
    assert wire.stream is SSE or wire.stream.kind in ("ndjson", "binary")


# --- a request as the checks read it ---------------------------------------------------------


def _conversation(wire: ModelWire) -> dict[str, Any]:
    """A request of the wire's client: a prompt, one tool call and its result."""
    seen = Seen(status=200, calls=[("search", "call_1")])
    history = [wire.client.user("first prompt"), *wire.client.tool_round(seen)]
    return wire.client.request(history)


@by_name
def test_the_prefix_view_reads_its_conversation(wire: ModelWire) -> None:
    body = _conversation(wire)
    view = wire.prefix_view(body)
    assert view.key in body
    assert view.messages, "the conversation is seen"
    assert "first prompt" in json.dumps(view.messages[0])
    grown = wire.client.request([*body[view.key], wire.client.user("next")])
    assert wire.prefix_view(grown).messages[: len(view.messages)] == view.messages


@by_name
def test_the_history_reader_finds_the_tool_call(wire: ModelWire) -> None:
    calls = wire.history_calls(_conversation(wire))
    assert [name for _, name, _ in calls] == ["search"]


@by_name
def test_the_tool_reader_reads_its_declarations(wire: ModelWire) -> None:
    body = _conversation(wire)
    assert wire.declared_tools(body) is None  # no tool list sent
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    shapes = {
        "function": {"type": "function", "function": {"name": "search", "parameters": schema}},
        "input_schema": {"name": "search", "input_schema": schema},
        "functionDeclarations": {
            "functionDeclarations": [{"name": "search", "parameters": schema}]
        },
    }
    for tool in shapes.values():
        assert wire.declared_tools({**body, "tools": [tool]}) == [("search", None, schema)]
