"""Templates give the bytes a fresh render gives: every segment of every catalog scenario and
of a script with reasoning, tool calls and usage, on every wire, streamed and not, with
model names and ids that need escaping."""

from __future__ import annotations

import msgspec
import pytest

from stuntset import scenarios
from stuntset.doubles.model._template import make_template
from stuntset.ids import SequentialIds
from stuntset.script import Reasoning, Script, Text, ToolCall, ToolResult, Usage
from stuntset.wires import codec_for
from stuntset.wires._codec import RenderContext, plan_of, render
from stuntset.wires._reply import PLAIN_FRAMING, Reply
from stuntset.wires.gemini import gemini_codec

CHAT = codec_for("/v1/chat/completions")
RESPONSES = codec_for("/v1/responses")
ANTHROPIC = codec_for("/v1/messages")

RICH = Script.of(
    [
        Reasoning('Think: ö "quoted" \\ back'),
        Text("Let me look."),
        ToolCall("read_file", {"path": "a.txt"}),
        ToolCall("grep", {"q": "x"}, id="own-id"),
        ToolResult("hello"),
        Text("It says "),
        Text("hello ✓."),
        Usage(10, 5, cost=0.25),
    ]
)


def _segments() -> list[tuple[str, object]]:
    out = []
    for entry in [*scenarios.all(), None]:
        script = RICH if entry is None else scenarios.build(entry.name)
        name = "rich" if entry is None else entry.name
        for t in script.turns:
            for n, segment in enumerate(t.segments()):
                plan = plan_of(segment)
                if plan.fault is None:
                    out.append((f"{name}-{n}", plan))
    return out


SEGMENTS = _segments()


def _ctx(ids: object, model: str, include_usage: bool) -> RenderContext:
    return RenderContext(
        model=model,
        response_id="",
        request_id="",
        created=1_700_000_000,
        ids=ids,  # type: ignore[arg-type]
        seed=3,
        framing=PLAIN_FRAMING,
        include_usage=include_usage,
        cache={},
    )


def _fresh(
    codec: object, plan: object, streaming: bool, model: str, usage: bool, ids: SequentialIds
) -> Reply:
    ctx = _ctx(ids, model, usage)
    ctx.response_id = ids.new(codec.id_prefix)  # type: ignore[call-overload]
    ctx.request_id = ids.new("req")
    return render(codec, plan, streaming, ctx)  # type: ignore[arg-type]


@pytest.mark.parametrize(("name", "plan"), SEGMENTS, ids=[n for n, _ in SEGMENTS])
@pytest.mark.parametrize(
    "codec",
    [
        CHAT,
        RESPONSES,
        ANTHROPIC,
        gemini_codec("/v1beta/models/g:streamGenerateContent"),
        gemini_codec("/v1beta/models/g:streamGenerateContent", sse=False),  # the JSON array
    ],
    ids=["chat", "responses", "anthropic", "gemini", "gemini-array"],
)
def test_a_filled_template_is_the_fresh_render(name: str, plan: object, codec: object) -> None:
    for streaming in (False, True):
        for model, usage, namespace in (("gpt-x", False, ""), ('m"ö\\', True, 'n"s-')):
            template = make_template(
                codec,
                plan,
                streaming,
                _ctx(None, model, usage),
                codec.id_prefix,  # type: ignore[arg-type,call-overload]
            )
            filled_ids, fresh_ids = SequentialIds(namespace), SequentialIds(namespace)
            for _ in range(2):  # the second fill counts on, as a second render would
                filled = template.fill(filled_ids, 1_700_000_000)
                fresh = _fresh(codec, plan, streaming, model, usage, fresh_ids)
                assert filled.status == fresh.status
                assert filled.headers == fresh.headers
                assert filled.encoded == [(k.encode(), v.encode()) for k, v in fresh.header_list()]
                assert filled.actions == fresh.actions
                assert (filled.streaming, filled.content_length, filled.wait) == (
                    fresh.streaming,
                    fresh.content_length,
                    fresh.wait,
                )


def test_a_template_is_filled_with_the_second_of_each_request() -> None:
    """One template serves every second: ``created`` is a slot, like the ids."""
    plan = SEGMENTS[0][1]
    template = make_template(CHAT, plan, False, _ctx(None, "gpt-x", False), "chatcmpl")  # type: ignore[arg-type]
    for second in (1_700_000_000, 1_700_000_001, 99):
        body = template.fill(SequentialIds(), second).actions[0]
        assert isinstance(body, bytes)
        assert msgspec.json.decode(body)["created"] == second


@pytest.mark.parametrize(("name", "plan"), SEGMENTS, ids=[n for n, _ in SEGMENTS])
@pytest.mark.parametrize(
    "codec",
    [CHAT, RESPONSES, ANTHROPIC, gemini_codec("/v1beta/models/g:generateContent")],
    ids=["chat", "responses", "anthropic", "gemini"],
)
def test_the_fast_lanes_fill_is_the_templates_fill(name: str, plan: object, codec: object) -> None:
    """The server's fast lane writes a whole reply as its head lines and body: the bytes of
    ``Template.fill`` (``quick``, for ids that need no escaping, the same again)."""
    for model, namespace in (("gpt-x", ""), ('m"ö\\', 'n"s-'), ("m", "bad\x01")):
        template = make_template(
            codec,
            plan,
            False,
            _ctx(None, model, False),
            codec.id_prefix,  # type: ignore[arg-type,call-overload]
        )
        lane = template.lane
        if plan.delay():  # type: ignore[attr-defined]  # its status line waits: not on the lane
            assert lane is None
            return
        assert lane is not None  # any other fault-free, non-streamed reply is
        lane_ids, plain_ids, quick_ids = (SequentialIds(namespace) for _ in range(3))
        for _ in range(2):
            written = lane.fill(lane_ids, 1_700_000_000)
            filled = template.fill(plain_ids, 1_700_000_000)
            if not namespace.isprintable():  # an id uvicorn would refuse in a header
                assert isinstance(written, Reply)
                assert written.actions == filled.actions
                continue
            assert isinstance(written, tuple)
            assert filled.encoded is not None
            head = b"".join(b"%s: %s\r\n" % pair for pair in filled.encoded) + b"\r\n"
            assert written == (head, filled.actions[0])
            quick = lane.quick(quick_ids.new, 1_700_000_000)
            assert (quick == written) is (namespace == "")  # ``quick`` does not escape


def test_a_template_the_lane_cannot_write_has_no_lane() -> None:
    plan = SEGMENTS[0][1]
    streamed = make_template(CHAT, plan, True, _ctx(None, "gpt-x", False), "chatcmpl")  # type: ignore[arg-type]
    assert streamed.lane is None


def test_headers_uvicorn_would_refuse_keep_a_reply_off_the_lane() -> None:
    from dataclasses import replace

    from stuntset.doubles.model._template import Template, head_lines, lane_template

    assert head_lines([("X-Codex-Used", "42.5"), ("x-b", "1")]) == (
        b"x-codex-used: 42.5\r\nx-b: 1\r\n"
    )
    assert head_lines([("x-a", "1\r\nx-b: 2")]) is None
    assert head_lines([("x a", "1")]) is None
    plan = SEGMENTS[0][1]
    template = make_template(CHAT, plan, False, _ctx(None, "gpt-x", False), "chatcmpl")  # type: ignore[arg-type]
    assert template.lane is not None
    for headers in (
        [*template.reply.headers, ("connection", "close")],
        [*template.reply.headers, ("x-bad", "a\x7fb")],
        [*template.reply.headers, ("x a", "b")],
        [("content-type", "application/json")],  # no request id in the head
        [*template.reply.headers, *template.reply.headers],  # two ids in the head
    ):
        changed = Template(plan, replace(template.reply, headers=headers), list(template.prefixes))  # type: ignore[arg-type]
        assert lane_template(changed) is None
