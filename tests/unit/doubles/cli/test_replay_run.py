"""The replaying process's comparisons, on their own: which ids a client chose, what is
compared without them, how a recorded response is re-addressed, and where two JSON values
differ (the lines a mismatch shows). The process itself is driven in
``tests/unit/cassettes/test_cli_replay.py``."""

from __future__ import annotations

from stuntset.doubles.cli._replay_run import (
    client_request_id,
    differences,
    normalized_argv,
    rewrite_response,
    without_client_ids,
)

CONTROL = {"type": "control_request", "request_id": "req_1", "request": {"subtype": "x"}}
RPC = {"jsonrpc": "2.0", "id": 4, "method": "turn/start", "params": {}}


def test_the_ids_a_client_chose_are_found_and_left_out_of_the_comparison() -> None:
    assert client_request_id(CONTROL) == "req_1"
    assert client_request_id(RPC) == 4
    assert without_client_ids(CONTROL) == {"type": "control_request", "request": {"subtype": "x"}}
    assert without_client_ids(RPC) == {"jsonrpc": "2.0", "method": "turn/start", "params": {}}
    notification = {"jsonrpc": "2.0", "method": "initialized"}
    for other in (notification, {"type": "user"}, [1, 2], "text", None):
        assert client_request_id(other) is None
        assert without_client_ids(other) == other


def test_a_recorded_response_is_readdressed_only_when_its_id_was_mapped() -> None:
    control = {"type": "control_response", "response": {"request_id": "req_1", "ok": True}}
    assert rewrite_response(control, {'"req_1"': "req_9"})
    assert control["response"] == {"request_id": "req_9", "ok": True}
    unmapped = {"type": "control_response", "response": {"request_id": "req_2"}}
    assert not rewrite_response(unmapped, {'"req_1"': "req_9"})
    assert unmapped["response"] == {"request_id": "req_2"}

    result = {"jsonrpc": "2.0", "id": 4, "result": {}}
    assert rewrite_response(result, {"4": 11})
    assert result["id"] == 11
    error = {"jsonrpc": "2.0", "id": 5, "error": {"code": 1}}
    assert not rewrite_response(error, {"4": 11})
    assert error["id"] == 5
    # a request the process sent (it chose that id) and anything not a dict stay as recorded
    assert not rewrite_response({"jsonrpc": "2.0", "id": 4, "method": "x"}, {"4": 11})
    assert not rewrite_response(["id", 4], {"4": 11})


def test_differences_name_each_leaf_by_its_path() -> None:
    recorded = {"a": 1, "b": [1, 2], "c": {"x": 1}, "e": [1]}
    actual = {"b": [1, 3], "c": {"x": 1}, "d": "z", "e": [1, 2]}
    assert differences(recorded, actual) == [
        "a: recorded 1, got nothing",
        "b[1]: recorded 2, got 3",
        'd: not recorded, got "z"',
        "e: recorded [1], got [1,2]",  # lists of other lengths differ as a whole
    ]
    assert differences({"a": [{"k": 1}]}, {"a": [{"k": 1}]}) == []
    assert differences("x", "y") == ['line: recorded "x", got "y"']


def test_long_values_are_clipped_in_a_difference() -> None:
    (line,) = differences({"text": "a" * 400}, {"text": "b"})
    assert line.startswith('text: recorded "aaa')
    assert line.endswith('..., got "b"')
    assert len(line) < 200


def test_ignored_flags_keep_their_place_with_the_value_blanked() -> None:
    argv = ["--model", "opus", "--resume=abc", "--print", "--resume", "def"]
    assert normalized_argv(argv, ["--resume"]) == [
        "--model",
        "opus",
        "--resume=<ignored>",
        "--print",
        "--resume",
        "<ignored>",
    ]
