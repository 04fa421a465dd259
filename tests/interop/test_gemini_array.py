"""The official ``google-genai`` SDK, unmodified, against the JSON-array form of the Gemini
stream (``streamGenerateContent`` without ``?alt=sse``), in process and over loopback.

The SDK always asks for SSE; asked through its own HTTP stack without ``alt=sse``, it meets
what the real API sends: it reads the whole array with its response types, its stream reader
cannot parse an element (``UnknownApiResponseError``, the element arriving before the rest),
and it unwraps an error that is the array's one element (docs/protocol-gemini.md#streams)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from google.genai import errors, types

from stuntset.doubles.model import StandIn
from stuntset.script import (
    AuthExpired,
    Overloaded,
    RateLimit,
    Script,
    Stall,
    StreamCut,
    Text,
    ToolCall,
    Usage,
)

from ._gemini import (
    Mode,
    array_elements,
    close_gemini_clients,
    gemini_client,
    read_array,
    stream_array,
)

# google-genai (2.34) raises on a segment it cannot parse without closing the stream it was
# reading (the same upstream leak as in test_gemini.py)
pytestmark = pytest.mark.stuntset_leaks(ignore=["streams"])

MODES = ["in-process", "loopback"]


@pytest.fixture(autouse=True)
def _close_gemini_clients(stand_in: StandIn) -> Iterator[None]:
    # set up after the stand-in, so torn down before it: a loopback server stopping with a
    # client's keep-alive connection still open waits ~1.5 s for it
    yield
    close_gemini_clients()


@pytest.mark.parametrize("mode", MODES)
def test_the_sdk_reads_the_array_into_its_own_response_type(stand_in: StandIn, mode: Mode) -> None:
    stand_in.play(Script.of([Text("abcd", chunks=2), ToolCall("lookup", {"q": "x"}), Usage(5, 3)]))
    responses = read_array(gemini_client(stand_in, mode))
    assert [r.text for r in responses[:2]] == ["ab", "cd"]
    (call,) = responses[2].function_calls or []
    assert (call.name, call.args) == ("lookup", {"q": "x"})
    last = responses[-1]
    assert last.candidates is not None
    assert last.candidates[0].finish_reason == types.FinishReason.STOP
    assert last.usage_metadata is not None
    assert (last.usage_metadata.prompt_token_count, last.usage_metadata.total_token_count) == (5, 8)
    sent = stand_in.requests[0]
    assert (sent.path, sent.query) == ("/v1beta/models/gemini-2.5-flash:streamGenerateContent", "")


@pytest.mark.parametrize("mode", MODES)
def test_the_sdks_stream_reader_fails_on_the_first_element(stand_in: StandIn, mode: Mode) -> None:
    """Its brace counter yields ``[{…}`` as one segment, which is not JSON. The failure comes
    once the first element is out, while the stream still stalls: the array is sent as it
    grows, not at the end."""
    stand_in.play(Script.of([Text("ab", chunks=2), Stall()]))
    client = gemini_client(stand_in, mode, timeout_ms=5000)
    with pytest.raises(errors.UnknownApiResponseError, match=r"Raw response: \[\{"):
        stream_array(client)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("fault", "kind", "code", "status"),
    [
        (RateLimit(), errors.ClientError, 429, "RESOURCE_EXHAUSTED"),
        (Overloaded(), errors.ServerError, 503, "UNAVAILABLE"),
        (AuthExpired(), errors.ClientError, 400, "INVALID_ARGUMENT"),
    ],
    ids=["rate_limited", "overloaded", "key_expired"],
)
def test_an_error_before_the_stream_is_unwrapped_from_its_array(
    stand_in: StandIn,
    mode: Mode,
    fault: object,
    kind: type[errors.APIError],
    code: int,
    status: str,
) -> None:
    stand_in.play(Script.of([fault]))  # type: ignore[list-item]
    with pytest.raises(kind) as raised:
        stream_array(gemini_client(stand_in, mode))
    assert (raised.value.code, raised.value.status) == (code, status)
    assert raised.value.details["error"]["code"] == code  # the element, not the list
    if code == 400:
        assert raised.value.details["error"]["details"][0]["reason"] == "API_KEY_INVALID"


@pytest.mark.parametrize("mode", MODES)
def test_an_error_mid_stream_is_the_last_element(stand_in: StandIn, mode: Mode) -> None:
    stand_in.play(Script.of([Text("partial"), Overloaded()]))
    *content, last = array_elements(gemini_client(stand_in, mode))
    assert [c["candidates"][0]["content"]["parts"] for c in content] == [[{"text": "partial"}]]
    assert last["error"]["status"] == "UNAVAILABLE"


@pytest.mark.parametrize("mode", MODES)
def test_a_cut_array_is_httpxs_protocol_error(stand_in: StandIn, mode: Mode) -> None:
    stand_in.play(Script.of([Text("abc", chunks=3), StreamCut(after_events=2)]))
    with pytest.raises(httpx.RemoteProtocolError):
        read_array(gemini_client(stand_in, mode))
