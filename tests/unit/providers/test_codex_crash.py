"""How a Codex failure becomes ``run.crashed``: each kind, with its retryability."""

from __future__ import annotations

import pytest
from openai_codex.errors import CodexError, JsonRpcError, TransportClosedError
from pydantic import BaseModel, ValidationError

from stuntset.providers.codex import crash_of, turn_crash
from stuntset.providers.codex._crash import OutOfOrder


@pytest.mark.parametrize(
    ("status", "kind", "retryable"),
    [
        (401, "auth", False),
        (403, "auth", False),
        (429, "rate_limited", True),
        (503, "overloaded", True),
        (529, "overloaded", True),
        (500, "http", True),
        (408, "http", True),
        (409, "http", True),
        (400, "http", False),
    ],
)
def test_a_failed_turns_http_status_names_its_kind(status: int, kind: str, retryable: bool) -> None:
    error = {"message": "m", "codexErrorInfo": {"responseStreamFailed": {"httpStatusCode": status}}}
    assert turn_crash(error) == (kind, "m", retryable)


def test_an_info_without_a_status_is_read_by_its_name_and_an_unknown_one_is_internal() -> None:
    named = {"message": "m", "codexErrorInfo": {"responseStreamDisconnected": {}}}
    assert turn_crash(named) == ("protocol", "m", True)
    unknown = {"message": "m", "codexErrorInfo": {"somethingNew": {}}}
    assert turn_crash(unknown) == ("internal", "m", False)
    assert turn_crash({"codexErrorInfo": "usageLimitExceeded"})[:1] == ("rate_limited",)
    assert turn_crash({"codexErrorInfo": "other"}) == ("internal", "the turn failed", False)


class _Shape(BaseModel):
    n: int


def _validation_error() -> ValidationError:
    try:
        _Shape.model_validate({"n": "not a number"})
    except ValidationError as error:
        return error
    raise AssertionError("the payload validated")


@pytest.mark.parametrize(
    ("error", "kind", "retryable", "words"),
    [
        (FileNotFoundError("no codex"), "spawn_failed", False, "no codex"),
        (PermissionError("not executable"), "spawn_failed", False, "not executable"),
        (TransportClosedError("closed"), "exited", False, "closed"),
        (
            UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"),
            "protocol",
            False,
            "undecodable bytes from the app-server",
        ),
        (OutOfOrder("a delta for item 'x'"), "protocol", False, "a delta for item 'x'"),
        (_validation_error(), "protocol", False, "validation error"),
        (JsonRpcError(-32600, "bad request"), "internal", False, "JsonRpcError"),
        (CodexError("invalid JSON-RPC line"), "protocol", False, "invalid JSON-RPC line"),
        (TimeoutError("slow"), "timeout", True, "slow"),
        (RuntimeError(), "internal", False, "RuntimeError"),
    ],
)
def test_an_exception_out_of_the_sdk_names_its_kind(
    error: BaseException, kind: str, retryable: bool, words: str
) -> None:
    got_kind, message, got_retryable = crash_of(error)
    assert (got_kind, got_retryable) == (kind, retryable)
    assert words in message
