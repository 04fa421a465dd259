"""assert_prefix_stable on real SDK traffic over all three wires: a well-behaved agent loop
passes, and each way of breaking the prompt prefix fails with the divergence explained."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from _agent_apps import AGENTS, anthropic_agent, chat_agent, responses_agent
from hypothesis import given, settings
from hypothesis import strategies as st

from stuntset.cassettes import (
    Cassette,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    write_cassette,
)
from stuntset.checks import (
    ModelRequest,
    PrefixUnstable,
    assert_prefix_stable,
    find_prefix_divergence,
    first_user_message,
    model_requests,
)
from stuntset.doubles.model import StandIn
from stuntset.errors import UsageError
from stuntset.script import Script, Text, ToolCall, ToolResult

WIRES = sorted(AGENTS)
#: two tool calls, one after the other, then the answer: three requests per run
TWO_CALLS = Script.of(
    [
        ToolCall("get_weather", {"city": "Paris"}),
        ToolResult("sunny"),
        ToolCall("get_time", {"city": "Paris"}),
        ToolResult("noon"),
        Text("Sunny at noon in Paris."),
    ]
)


@pytest.fixture
def double() -> Iterator[StandIn]:
    stand_in = StandIn(TWO_CALLS)
    yield stand_in
    stand_in.close()


def on(n: int, change: Any) -> Any:
    """A tamper that applies ``change(kwargs)`` to the n-th request only."""

    def tamper(index: int, kwargs: dict[str, Any]) -> dict[str, Any]:
        return change(dict(kwargs)) if index == n else kwargs

    return tamper


def failure(source: Any, **options: Any) -> str:
    with pytest.raises(PrefixUnstable) as caught:
        assert_prefix_stable(source, **options)
    return str(caught.value)


@pytest.mark.parametrize("wire", WIRES)
def test_a_well_behaved_agent_keeps_its_prefix_on_every_wire(double: StandIn, wire: str) -> None:
    assert AGENTS[wire](double, "Weather in Paris?") == "Sunny at noon in Paris."
    report = assert_prefix_stable(double)
    assert (report.requests, report.conversations, report.divergence) == (3, 1, None)
    assert {r.wire for r in model_requests(double)} == {wire}


def test_a_timestamp_in_the_chat_system_prompt_is_caught(double: StandIn) -> None:
    def stamp(kwargs: dict[str, Any]) -> dict[str, Any]:
        system = {"role": "system", "content": kwargs["messages"][0]["content"] + " Now: 12:01"}
        return {**kwargs, "messages": [system, *kwargs["messages"][1:]]}

    chat_agent(double, "Weather?", tamper=on(1, stamp))
    message = failure(double)
    assert message.startswith(
        "the prompt prefix is not stable: request 1 (openai-chat) diverges from request 0 "
        "(openai-chat), the previous request of its conversation:\n  system:\n"
        "    messages[0].content: 'You are a terse weather agent. Answer in one sentence.' -> "
        "'You are a terse weather agent. Answer in one sentence. Now: 12:01' (first difference "
        "at character 54; lengths 54 and 65)\n"
    )
    assert "pass conversation=" in message


def test_changed_responses_instructions_are_caught_even_when_chained(double: StandIn) -> None:
    def reword(kwargs: dict[str, Any]) -> dict[str, Any]:
        return {**kwargs, "instructions": "You are a weather agent. " + "x" * 100}

    responses_agent(double, "Weather?", chained=True, tamper=on(2, reword))
    message = failure(double)
    assert "request 2 (openai-responses) diverges from request 1" in message
    assert (
        "    instructions: 'You are a terse weather agent. Answer in one sente' -> 'You are a "
        "weather agent. xxxxxxxxxxxxxxxxxxxxxxxxx' (first difference at character 10; lengths "
        "54 and 125)\n" in message
    )


def test_a_chained_responses_conversation_sends_only_new_items_and_passes(
    double: StandIn,
) -> None:
    responses_agent(double, "Weather?", chained=True)
    assert [("previous_response_id" in r.body) for r in model_requests(double)] == [
        False,
        True,
        True,
    ]
    assert assert_prefix_stable(double).requests == 3


def test_a_changed_anthropic_system_prompt_is_caught(double: StandIn) -> None:
    anthropic_agent(double, "Weather?", tamper=on(2, lambda kw: {**kw, "system": "Be verbose."}))
    message = failure(double)
    assert "request 2 (anthropic-messages) diverges from request 1" in message
    assert "system.system[0].text: 'You are a terse weather agent." not in message
    assert (
        "    system[0].text: 'You are a terse weather agent. Answer in one sentence.' -> "
        "'Be verbose.' (first difference at character 0; lengths 54 and 11)\n" in message
    )


@pytest.mark.parametrize("wire", WIRES)
def test_a_reordered_tool_list_is_caught_on_every_wire(double: StandIn, wire: str) -> None:
    AGENTS[wire](double, "Weather?", tamper=on(1, lambda kw: {**kw, "tools": kw["tools"][::-1]}))
    message = failure(double)
    assert f"request 1 ({wire}) diverges from request 0" in message
    assert (
        "  tools:\n    order changed: ['get_weather', 'get_time'] -> ['get_time', 'get_weather']"
        in message
    )


def test_an_added_tool_and_a_changed_schema_are_named(double: StandIn) -> None:
    def change(kwargs: dict[str, Any]) -> dict[str, Any]:
        first = {**kwargs["tools"][0], "description": "Weather, now."}
        extra = {"name": "search", "description": "Search.", "input_schema": {"type": "object"}}
        return {**kwargs, "tools": [first, kwargs["tools"][1], extra]}

    anthropic_agent(double, "Weather?", tamper=on(1, change))
    message = failure(double)
    assert "    added: ['search']\n" in message
    assert (
        "    'get_weather': tools[0].description: 'Current weather for a city.' -> "
        "'Weather, now.'" in message
    )


def test_reordered_schema_properties_are_caught(double: StandIn) -> None:
    def reorder(kwargs: dict[str, Any]) -> dict[str, Any]:
        tool = kwargs["tools"][0]
        schema = tool["input_schema"]
        properties = dict(reversed(list(schema["properties"].items())))
        first = {**tool, "input_schema": {**schema, "properties": properties}}
        return {**kwargs, "tools": [first, *kwargs["tools"][1:]]}

    anthropic_agent(double, "Weather?", tamper=on(2, reorder))
    message = failure(double)
    assert (
        "  tools:\n    tools[0].input_schema.properties: key order changed: ['city', 'unit'] -> "
        "['unit', 'city']\n" in message
    )


@pytest.mark.parametrize(
    ("wire", "field", "value"),
    [
        ("openai-chat", "model", "gpt-other"),
        ("openai-responses", "reasoning", {"effort": "high"}),
        ("anthropic-messages", "thinking", {"type": "enabled", "budget_tokens": 1024}),
    ],
)
def test_a_changed_cache_field_is_caught(
    double: StandIn, wire: str, field: str, value: Any
) -> None:
    AGENTS[wire](double, "Weather?", tamper=on(2, lambda kw: {**kw, field: value}))
    message = failure(double)
    assert "  cache:\n    " + field in message
    assert assert_prefix_stable(double, ignore=[field]).requests == 3


def test_a_rewritten_history_is_caught_with_the_message_named(double: StandIn) -> None:
    def rewrite(kwargs: dict[str, Any]) -> dict[str, Any]:
        messages = [dict(m) for m in kwargs["messages"]]
        messages[1]["content"] = "Weather in Lyon?"
        return {**kwargs, "messages": messages}

    chat_agent(double, "Weather?", tamper=on(2, rewrite))
    message = failure(double)
    assert (
        "  messages:\n    messages[1] is not the previous request's message 1: the history was "
        "rewritten\n    messages[1].content: 'Weather?' -> 'Weather in Lyon?'" in message
    )


def test_a_sliding_window_over_the_history_is_caught(double: StandIn) -> None:
    def window(kwargs: dict[str, Any]) -> dict[str, Any]:
        return {**kwargs, "input": kwargs["input"][-2:]}

    responses_agent(double, "Weather?", tamper=on(2, window))
    message = failure(double)
    assert (
        "    input[0] is not the previous request's message 0: the history was rewritten\n"
        "    input[0].role: removed (was 'user')\n" in message
    )


def test_a_shortened_history_is_caught() -> None:
    user = {"role": "user", "content": "hi"}
    requests = [
        ModelRequest(wire="openai-chat", body={"messages": [user, user, user]}),
        ModelRequest(wire="openai-chat", body={"messages": [user]}),
    ]
    message = failure(requests)
    assert (
        "messages: 1 message(s) after the system prompt, fewer than the previous request's 3: "
        "the history was cut or rewritten from messages[1] on" in message
    )


def test_moving_anthropic_cache_breakpoints_do_not_count(double: StandIn) -> None:
    def mark_last(kwargs: dict[str, Any]) -> dict[str, Any]:
        messages = [dict(m) for m in kwargs["messages"]]
        last = messages[-1]
        content = last["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        blocks = [*blocks[:-1], {**blocks[-1], "cache_control": {"type": "ephemeral"}}]
        messages[-1] = {**last, "content": blocks}
        system = [
            {"type": "text", "text": kwargs["system"], "cache_control": {"type": "ephemeral"}}
        ]
        return {**kwargs, "messages": messages, "system": system}

    anthropic_agent(double, "Weather?", tamper=lambda n, kw: mark_last(kw))
    requests = model_requests(double)
    assert "cache_control" in str(requests[0].body["messages"])
    assert assert_prefix_stable(double).requests == 3


def test_two_conversations_are_told_apart_by_a_key(double: StandIn) -> None:
    double.play(Script.of([Text("one")], [Text("two")]))
    chat_agent(double, "First task")
    chat_agent(double, "Second task")
    message = failure(double)
    assert "messages[1].content: 'First task' -> 'Second task'" in message
    report = assert_prefix_stable(double, conversation=first_user_message, min_requests=1)
    assert (report.requests, report.conversations) == (2, 2)


def test_a_cassette_is_read_from_its_file_whatever_the_path_prefix(tmp_path: Any) -> None:
    def interaction(n: int, messages: list[Any], path: str) -> Interaction:
        body = {"model": "m", "messages": messages}
        return Interaction(
            id=f"i-{n}",
            wire="http",  # an old recording: the wire comes from the path's endpoint
            request=RecordedRequest(method="POST", path=path, body=body),
            response=RecordedResponse(status=200, body={}),
        )

    user = {"role": "user", "content": "hi"}
    reply = {"role": "assistant", "content": "hello"}
    good = [
        interaction(1, [user], "/v1/chat/completions"),
        interaction(2, [user, reply, user], "/openai/v1/chat/completions"),
    ]
    path = write_cassette(tmp_path / "good.jsonl", Cassette(interactions=good))
    assert assert_prefix_stable(path).requests == 2
    bad = [*good, interaction(3, [reply], "/v1/chat/completions")]
    path = write_cassette(tmp_path / "bad.jsonl", Cassette(interactions=bad))
    message = failure(path)
    assert "i-3 (openai-chat) diverges from i-2 (openai-chat)" in message
    assert "messages[0] is not the previous request's message 0" in message


def test_cassette_sessions_are_separate_conversations() -> None:
    def interaction(n: int, session: str, text: str) -> Interaction:
        body = {"model": "m", "messages": [{"role": "user", "content": text}]}
        return Interaction(
            id=f"i-{n}",
            wire="openai-chat",
            request=RecordedRequest(method="POST", path="/v1/chat/completions", body=body),
            response=RecordedResponse(status=200, body={}),
            session=session,
        )

    cassette = Cassette(interactions=[interaction(1, "a", "one"), interaction(2, "b", "two")])
    report = assert_prefix_stable(cassette, min_requests=1)
    assert report.conversations == 2


def test_nothing_to_compare_is_a_failure_not_a_pass(double: StandIn) -> None:
    message = failure(double)
    assert message.startswith("only 0 model request(s) were recorded, fewer than min_requests=2")


def test_requests_built_by_hand_and_other_wires_are_skipped() -> None:
    first = ModelRequest(wire="openai-chat", body={"model": "a", "messages": []})
    second = ModelRequest(wire="openai-chat", body={"model": "b", "messages": []})
    report = find_prefix_divergence([first, second])
    assert report.divergence is not None
    assert report.divergence.aspects == ["cache"]
    assert report.divergence.after.index == 1


def test_misuse_is_a_usage_error(double: StandIn) -> None:
    with pytest.raises(UsageError, match="cannot read model requests from 42"):
        assert_prefix_stable(42)
    with pytest.raises(UsageError, match="not the string 'tools'"):
        assert_prefix_stable(double, ignore="tools")
    with pytest.raises(UsageError, match="item 0: 'x' is not a journal entry"):
        assert_prefix_stable(["x"])
    mixed = [
        ModelRequest(wire="openai-chat", body={"messages": []}),
        ModelRequest(wire="anthropic-messages", body={"messages": []}),
    ]
    with pytest.raises(UsageError, match="on different wires"):
        assert_prefix_stable(mixed, conversation=lambda r: "one")


MESSAGES = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant", "tool"]), "content": st.text(max_size=5)}
    ),
    min_size=1,
    max_size=4,
)


@pytest.mark.slow
@settings(max_examples=60)
@given(chunks=st.lists(MESSAGES, min_size=2, max_size=4), data=st.data())
def test_appending_always_passes_and_any_rewrite_is_caught_where_it_happens(
    chunks: list[list[dict[str, str]]], data: st.DataObject
) -> None:
    history: list[dict[str, str]] = []
    requests = []
    for chunk in chunks:
        history = [*history, *chunk]
        requests.append(ModelRequest(wire="openai-chat", body={"model": "m", "messages": history}))
    assert find_prefix_divergence(requests).divergence is None
    n = data.draw(st.integers(1, len(requests) - 1), label="request")
    i = data.draw(st.integers(0, len(requests[n - 1].body["messages"]) - 1), label="message")
    mutated = list(requests[n].body["messages"])
    mutated[i] = {**mutated[i], "content": mutated[i]["content"] + "!"}
    requests[n] = ModelRequest(wire="openai-chat", body={"model": "m", "messages": mutated})
    divergence = find_prefix_divergence(requests).divergence
    assert divergence is not None
    assert (divergence.before.index, divergence.after.index) == (n - 1, n)
    assert divergence.aspects == ["messages"]
    assert f"messages[{i}] is not the previous request's message {i}" in divergence.explain()
