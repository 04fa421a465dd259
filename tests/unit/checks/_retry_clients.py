"""Hand-rolled model clients for the resilience rules: each knob breaks one rule (or not).
They wait on the test's ``FakeClock`` (``advance``), never for real, so every verdict's times
are exact. Not a mock: a real HTTP client (httpx2) over the model double's transport."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

import httpx2

from stuntset.clock import FakeClock

__all__ = ["RetryClient", "honest_wait"]

CHAT = "http://model.test/v1/chat/completions"
BODY: dict[str, Any] = {"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]}


def honest_wait(response: httpx2.Response, attempt: int) -> float:
    """What the SDKs do: the server's retry-after-ms / Retry-After, else 0.5 s doubling."""
    headers = response.headers
    if "retry-after-ms" in headers:
        return float(headers["retry-after-ms"]) / 1000
    if "retry-after" in headers:
        return float(headers["retry-after"])
    return 0.5 * 2**attempt


@dataclass
class RetryClient:
    """POSTs one chat request, retrying as told. ``wait(response, attempt)`` is the delay
    before the next attempt (on ``clock``); ``retry_on`` the statuses it retries;
    ``change_body`` changes the body on each retry; ``stream`` reads a streamed reply (a cut
    stream counts as done when ``trust_cut``, else as a failure to retry)."""

    transport: Any
    clock: FakeClock
    attempts: int = 3
    wait: Callable[[httpx2.Response, int], float] = honest_wait
    retry_on: Collection[int] = (408, 409, 429, 500, 502, 503, 504, 529)
    change_body: bool = False
    stream: bool = False
    trust_cut: bool = False
    read_timeout: float | None = 60.0
    outcome: str | None = field(default=None, init=False)

    def call(self) -> str:
        timeout = httpx2.Timeout(5.0, read=self.read_timeout)
        body = dict(BODY, stream=True) if self.stream else dict(BODY)
        with httpx2.Client(transport=self.transport, timeout=timeout) as http:
            for attempt in range(self.attempts):
                if self.change_body and attempt:
                    body = dict(body, max_tokens=100 - attempt)
                try:
                    if self.stream:
                        with http.stream("POST", CHAT, json=body) as response:
                            if response.status_code < 400:
                                text = "".join(response.iter_text())
                                self.outcome = "completed"
                                return text
                            response.read()
                    else:
                        response = http.post(CHAT, json=body)
                        if response.status_code < 400:
                            self.outcome = "completed"
                            return response.text
                except (httpx2.RemoteProtocolError, httpx2.ReadError):
                    if self.trust_cut:
                        self.outcome = "completed"
                        return ""
                    continue
                except httpx2.ReadTimeout:
                    self.clock.advance(0.5 * 2**attempt)
                    continue
                if response.status_code not in self.retry_on:
                    break
                if attempt + 1 < self.attempts:
                    self.clock.advance(self.wait(response, attempt))
        self.outcome = "error"
        return ""
