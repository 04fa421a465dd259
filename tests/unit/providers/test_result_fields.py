"""What a run's final result said beyond the events (``result_fields``), as drift compares it."""

from __future__ import annotations

from typing import Any

from stuntset.providers.codex._items import Translator, error_info


def _translator() -> Translator:
    return Translator(lambda cls, **fields: None, lambda: None)


def test_a_completed_app_server_turn_names_its_status_and_usage() -> None:
    turn = _translator()
    assert turn.result_fields == {}
    last = {"last": {"inputTokens": 3, "outputTokens": 2}}
    turn.handle("thread/tokenUsage/updated", {"tokenUsage": last})
    assert turn.handle("turn/completed", {"turn": {"status": "completed"}})
    assert turn.result_fields == {"status": "completed", "error": None, "usage": True}


def test_a_failed_app_server_turn_names_its_error_info() -> None:
    turn = _translator()
    error: dict[str, Any] = {
        "message": "unexpected status 401",
        "codexErrorInfo": {"responseStreamDisconnected": {"httpStatusCode": 401}},
    }
    turn.handle("turn/completed", {"turn": {"status": "failed", "error": error}})
    assert turn.result_fields == {
        "status": "failed",
        "error": "responseStreamDisconnected 401",
        "usage": False,
    }


def test_error_info_in_a_few_words() -> None:
    assert error_info({"codexErrorInfo": "usageLimitExceeded"}) == "usageLimitExceeded"
    assert error_info({"codexErrorInfo": {"httpConnectionFailed": {}}}) == "httpConnectionFailed"
    assert error_info({"message": "x"}) is None
    assert error_info(None) is None
