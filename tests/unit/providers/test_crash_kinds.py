"""The one status → ``run.crashed`` table every adapter shares: each row, and the override."""

from __future__ import annotations

import pytest

from stuntset.providers._crash_kinds import google_reason, status_crash


@pytest.mark.parametrize(
    ("status", "kind", "retryable"),
    [
        (401, "auth", False),
        (403, "auth", False),
        (429, "rate_limited", True),
        (503, "overloaded", True),
        (529, "overloaded", True),
        (408, "http", True),
        (409, "http", True),
        (500, "http", True),
        (502, "http", True),
        (400, "http", False),
        (404, "http", False),
    ],
)
def test_each_status_names_its_kind_and_retryability(
    status: int, kind: str, retryable: bool
) -> None:
    assert status_crash(status, "m") == (kind, "m", retryable)


def test_an_unknown_status_is_a_generic_http_crash() -> None:
    assert status_crash(418, "teapot") == ("http", "teapot", False)
    assert status_crash(599, "odd") == ("http", "odd", True)  # any 5xx may be retried


def test_the_message_is_passed_through_as_given() -> None:
    assert status_crash(429, "HTTP 429: slow down")[1] == "HTTP 429: slow down"


@pytest.mark.parametrize("status", [400, 429, 503])
def test_an_x_should_retry_header_wins_over_the_status(status: int) -> None:
    kind = status_crash(status, "m")[0]
    assert status_crash(status, "m", should_retry=True) == (kind, "m", True)
    assert status_crash(status, "m", should_retry=False) == (kind, "m", False)


#: What the Gemini Developer API sends for an expired key (docs/protocol-gemini.md#errors).
KEY_EXPIRED = {
    "error": {
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
            {"@type": "type.googleapis.com/google.rpc.LocalizedMessage", "locale": "en-US"},
        ],
    }
}


def test_googles_key_invalid_reason_makes_a_400_an_auth_crash() -> None:
    assert google_reason(KEY_EXPIRED) == "API_KEY_INVALID"
    assert google_reason(KEY_EXPIRED["error"]) == "API_KEY_INVALID"  # the error object alone
    assert status_crash(400, "m", reason=google_reason(KEY_EXPIRED)) == ("auth", "m", False)


@pytest.mark.parametrize(
    "body",
    [
        {"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": "bad request"}},
        {"error": {"details": [{"@type": "type.googleapis.com/google.rpc.BadRequest"}]}},
        {"error": {"details": "not a list"}},
        "a text body",
        None,
    ],
)
def test_a_400_without_that_reason_stays_an_http_crash(body: object) -> None:
    assert status_crash(400, "m", reason=google_reason(body)) == ("http", "m", False)
