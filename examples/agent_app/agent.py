"""A small agent app with planted bugs, for the fuzzer to find (docs/howto/judge-your-agent.md).

``Agent.run(prompt)`` talks to an OpenAI-compatible Chat Completions API with a hand-rolled
client (streamed replies, a retry loop, a tool loop), as many real apps do. Each bug of
``BUGS`` can be planted; each shows only at one fault position:

- ``cut_as_complete``: a stream cut mid-way is taken as the complete answer (shows when a
  reply stream breaks after some events, and only on the answer, not on a tool call).
- ``retry_401``: a 401 is retried as if the key would work next time (shows only on a 401).
- ``drop_tool_result``: after a 429 on the request that carries a tool's result, the retry is
  rebuilt without the result (shows only on a rate limit between a tool call and its result).

Without bugs it waits what the server asks (``retry-after-ms`` / ``Retry-After``, else 0.5 s
doubling), retries 408/409/429/5xx at most twice unless told ``x-should-retry: false``, needs
a stream's ``finish_reason`` and ``[DONE]`` before it calls an answer complete, and reports
``error`` otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx2

__all__ = ["BUGS", "Agent", "Answer"]

BUGS = frozenset({"cut_as_complete", "retry_401", "drop_tool_result"})
URL = "http://model.test/v1/chat/completions"
RETRYABLE = frozenset({408, 409, 429, 500, 502, 503, 504, 529})


@dataclass
class Answer:
    outcome: str  # "completed" | "error"
    text: str = ""


class _Broken(Exception):
    """The reply stream broke before its end."""


@dataclass
class Agent:
    transport: Any
    sleep: Callable[[float], None]
    bugs: frozenset[str] = frozenset()
    tools: dict[str, Callable[..., str]] = field(default_factory=dict)
    max_steps: int = 4

    def run(self, prompt: str) -> Answer:
        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        timeout = httpx2.Timeout(5.0, read=30.0)
        with httpx2.Client(transport=self.transport, timeout=timeout) as http:
            for _ in range(self.max_steps):
                reply = self._ask(http, messages)
                if reply is None:
                    return Answer("error")
                text, calls, finished = reply
                if not finished:
                    return Answer("error", text)
                if not calls:
                    return Answer("completed", text)
                messages.append({"role": "assistant", "content": None, "tool_calls": calls})
                for call in calls:
                    fn = call["function"]
                    result = self.tools.get(fn["name"], lambda **_: "no such tool")(
                        **json.loads(fn["arguments"] or "{}")
                    )
                    messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
        return Answer("error")

    def _ask(
        self, http: httpx2.Client, messages: list[dict[str, Any]]
    ) -> tuple[str, list[dict[str, Any]], bool] | None:
        retry_on = RETRYABLE | ({401} if "retry_401" in self.bugs else set())
        sent = list(messages)
        for attempt in range(3):
            body = {"model": "gpt-test", "messages": sent, "stream": True}
            try:
                with http.stream("POST", URL, json=body) as response:
                    if response.status_code < 400:
                        return self._read(response)
                    response.read()
            except (httpx2.RemoteProtocolError, httpx2.ReadError, httpx2.ReadTimeout):
                if attempt == 2:
                    return None
                self.sleep(0.5 * 2**attempt)
                continue
            except _Broken:
                return None
            status = response.status_code
            if status not in retry_on or response.headers.get("x-should-retry") == "false":
                return None
            if attempt == 2:
                return None
            if status == 429 and "drop_tool_result" in self.bugs:
                sent = [m for m in sent if m.get("role") != "tool"]  # the planted bug
            self.sleep(_wait(response, attempt))
        return None

    def _read(self, response: httpx2.Response) -> tuple[str, list[dict[str, Any]], bool]:
        text: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        finished = done = False
        try:
            for line in response.iter_lines():
                if not line.startswith("data: "):
                    continue
                data = line[len("data: ") :]
                if data == "[DONE]":
                    done = True
                    break
                try:
                    chunk = json.loads(data)
                except ValueError:
                    raise _Broken from None
                for choice in chunk.get("choices", []):
                    delta = choice.get("delta") or {}
                    text.append(delta.get("content") or "")
                    for part in delta.get("tool_calls") or []:
                        call = calls.setdefault(
                            part["index"],
                            {
                                "id": "",
                                "type": "function",
                                "function": {"name": "", "arguments": ""},
                            },
                        )
                        call["id"] = part.get("id") or call["id"]
                        fn = part.get("function") or {}
                        call["function"]["name"] += fn.get("name") or ""
                        call["function"]["arguments"] += fn.get("arguments") or ""
                    finished = finished or choice.get("finish_reason") is not None
        except httpx2.RemoteProtocolError:
            if "cut_as_complete" in self.bugs and not calls:
                return "".join(text), [], True  # the planted bug: a cut taken as the end
            raise
        return "".join(text), [calls[i] for i in sorted(calls)], finished and done


def _wait(response: httpx2.Response, attempt: int) -> float:
    headers = response.headers
    if "retry-after-ms" in headers:
        return float(headers["retry-after-ms"]) / 1000
    if "retry-after" in headers:
        try:
            return float(headers["retry-after"])
        except ValueError:
            pass
    return 0.5 * 2**attempt
