"""The model doubles' section of ``stuntset demo``: every applicable catalog scenario played
on each wire through the in-process transport, by a minimal bundled client (``httpx2`` or
``httpx`` only, no SDK), showing what that client saw.

The client does what an SDK does, minimally: streams, parses SSE, retries 408/409/429/5xx
twice (honouring ``x-should-retry``), sends tool results back, and reports a dropped
connection, a read timeout, a bad frame or an in-band error as what it is.
"""

from __future__ import annotations

import importlib
import json
from types import ModuleType
from typing import Any

from stuntset import scenarios
from stuntset._demo_rows import DemoRow
from stuntset.errors import HarnessFailure
from stuntset.seams import deterministic
from stuntset.wires import (
    WIRE_NAMES,
    EventStreamError,
    Seen,
    WireClient,
    decode_frame,
    stream_framing,
    wire_named,
)

from .double import ModelDouble
from .transport import ModelTransport

__all__ = ["model_rows"]

_SKIP = {"spawn_missing"}  # nothing to spawn on an HTTP wire


def _http() -> ModuleType | None:
    for name in ("httpx2", "httpx"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


def _client(name: str) -> WireClient:
    wire = wire_named(name)
    assert wire is not None, f"not a model wire: {name!r}"
    return wire.client


def _read_stream(client: WireClient, response: Any, seen: Seen, ndjson: bool = False) -> None:
    """An SSE stream (or, ``ndjson``, one JSON object a line; or a binary event stream) into
    ``seen``."""
    framing = stream_framing(response.headers.get("content-type", ""))
    if framing is not None and framing.kind == "binary":
        _read_binary(client, response, seen, framing.parser())
        return
    event = ""
    for line in response.iter_lines():
        if ndjson and line.strip():
            line = "data:" + line
        if line.startswith("event:"):
            event = line[6:].strip()
            continue
        if not line.startswith("data:"):
            if line and not line.startswith(":"):
                seen.problem = f"garbage on the wire ({line[:20]!r}…)"
            continue
        data = line[5:].strip()
        seen.events += 1
        if data == "[DONE]":
            seen.terminal = True
            continue
        try:
            payload = json.loads(data)
        except ValueError:
            seen.problem = "a frame that is not JSON"
            return
        client.apply(event, payload, seen)
        if seen.problem:
            return


def _read_binary(client: WireClient, response: Any, seen: Seen, parser: Any) -> None:
    """An event stream (Bedrock's): each message checked (CRCs) and its JSON payload read."""
    for chunk in response.iter_bytes():
        for _, data in parser.feed(chunk):
            try:
                message = decode_frame(data)
                payload = json.loads(message.payload)
            except EventStreamError:
                seen.problem = "a message that fails its checks (CRC32, length)"
                return
            except ValueError:
                seen.problem = "a frame that is not JSON"
                return
            seen.events += 1
            client.apply(message.name or "", payload, seen)
            if seen.problem:
                return
    if parser.close():
        seen.problem = "the stream ended inside a message"


def _one_response(
    http: ModuleType, client: Any, wire: WireClient, history: list[dict[str, Any]]
) -> tuple[list[str], Seen]:
    attempts: list[str] = []
    for attempt in range(3):
        seen = Seen()
        headers = {"x-stainless-retry-count": str(attempt), "anthropic-version": "2023-06-01"}
        try:
            with client.stream(
                "POST", wire.path, json=wire.request(history), headers=headers
            ) as response:
                seen.status = response.status_code
                if response.status_code == 200:
                    ndjson = "ndjson" in response.headers.get("content-type", "")
                    _read_stream(wire, response, seen, ndjson)
                else:
                    response.read()
                    retry = response.headers.get("x-should-retry")
                    retryable = (
                        response.status_code in (408, 409, 429) or response.status_code >= 500
                    )
                    if retry != "false" and (retry == "true" or retryable) and attempt < 2:
                        attempts.append(f"HTTP {response.status_code}")
                        continue
        except http.TimeoutException:
            seen.problem = "read timeout"
        except http.TransportError as error:
            seen.problem = f"connection dropped ({type(error).__name__})"
        except UnicodeDecodeError:
            seen.problem = "invalid UTF-8"
        attempts.append(seen.summary())
        return attempts, seen
    raise AssertionError("unreachable")


def _conversation(
    http: ModuleType, client: Any, wire: WireClient, prompt: str
) -> tuple[list[str], int]:
    history: list[dict[str, Any]] = [wire.user(prompt)]
    outcomes: list[str] = []
    events = 0
    for _ in range(5):
        attempts, seen = _one_response(http, client, wire, history)
        outcomes += attempts
        events += seen.events
        if not seen.calls or seen.problem or seen.status != 200:
            break
        history += wire.tool_round(seen)
    return outcomes, events


def _play(http: ModuleType, entry: scenarios.Scenario, wire: str) -> DemoRow:
    """``entry`` played on the wire called ``wire`` by its demo client."""
    speaker = _client(wire)
    double = ModelDouble(entry.build())
    layer = f"model ({wire})"
    client = http.Client(
        transport=ModelTransport(double),
        base_url="http://stand-in",
        timeout=http.Timeout(5.0, read=1.0),
    )
    outcomes: list[str] = []
    events = 0
    try:
        with client:
            for turn in range(len(double.script.turns) + 3):
                if not double.unused():
                    break
                seen, count = _conversation(http, client, speaker, f"demo prompt {turn + 1}")
                outcomes += seen
                events += count
        double.verify()
    except HarnessFailure as failure:
        return DemoRow(layer, entry.name, len(double.requests), events, "", False, str(failure))
    finally:
        double.close()
    return DemoRow(layer, entry.name, len(double.requests), events, " → ".join(outcomes), True)


def model_rows() -> list[DemoRow]:
    """The catalog through the in-process model doubles, on each wire."""
    http = _http()
    if http is None:
        return [DemoRow("model", "-", 0, 0, "skipped: needs httpx2 or httpx", True)]
    rows: list[DemoRow] = []
    with deterministic():
        for wire in WIRE_NAMES:
            for entry in scenarios.all():
                if entry.name not in _SKIP:
                    rows.append(_play(http, entry, wire))
    return rows
