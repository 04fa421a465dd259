"""A minimal stream-json client of the fake ``claude`` (no SDK needed): what the demo sections
of the Claude Code double and of the cassettes drive it with. Runs in the test process."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from typing import Any

__all__ = ["ARGS", "StreamJsonClient", "allow_all"]

#: The command line claude-agent-sdk starts the CLI with (the parts this client needs).
ARGS = [
    "--output-format",
    "stream-json",
    "--verbose",
    "--input-format",
    "stream-json",
    "--permission-prompt-tool",
    "stdio",
]


class StreamJsonClient:
    """Just enough of claude-agent-sdk: initialize, prompts, answers, interrupt. ``base`` and
    ``extra`` are the command line after the path (``ARGS``, the SDK's, by default). Reads
    block: the caller bounds them (the fake ends every turn; a test has its timeout)."""

    def __init__(self, path: str, *extra: str, base: Sequence[str] = ARGS) -> None:
        self.proc = subprocess.Popen(
            [path, *base, *extra],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.messages: list[dict[str, Any]] = []
        self.bad: list[str] = []

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def read(self) -> dict[str, Any] | None:
        """The next message; ``None`` at EOF (bad lines are noted and skipped)."""
        assert self.proc.stdout is not None
        while line := self.proc.stdout.readline():
            try:
                message = json.loads(line)
            except ValueError:
                if b"\xff" in line:
                    self.bad.append("garbage bytes")
                else:
                    self.bad.append("malformed line" if line.endswith(b"\n") else "cut line")
                continue
            self.messages.append(message)
            return dict(message)
        return None

    def read_until(self, kind: str) -> list[dict[str, Any]]:
        """The messages up to and including the next one of type ``kind``; ``EOFError`` if
        stdout ends first."""
        seen: list[dict[str, Any]] = []
        while (message := self.read()) is not None:
            seen.append(message)
            if message["type"] == kind:
                return seen
        raise EOFError(f"stdout ended before a {kind!r} message (after {len(seen)} others)")

    def answer(self, request: dict[str, Any], response: dict[str, Any]) -> None:
        """Answer the ``control_request`` ``request`` with ``response`` (its ``subtype`` and
        the rest of its body)."""
        body = {"request_id": request["request_id"], **response}
        self.send({"type": "control_response", "response": body})

    def turn(self, prompt: str, *, stall: bool, last: bool) -> dict[str, Any] | None:
        """Play one prompt; the last one closes stdin at once (as ``query()`` does) unless the
        turn needs answers, so a turn that never ends its line still reaches EOF."""
        self.send({"type": "user", "message": {"role": "user", "content": prompt}})
        if last:
            self.end_input()
        while (message := self.read()) is not None:
            if message["type"] == "assistant" and stall:
                self.send(
                    {
                        "type": "control_request",
                        "request_id": "i",
                        "request": {"subtype": "interrupt"},
                    }
                )
            if message["type"] == "control_request":
                self.send(allow_all(message))
            if message["type"] == "result":
                return message
        return None

    def end_input(self) -> None:
        assert self.proc.stdin is not None
        if not self.proc.stdin.closed:
            self.proc.stdin.close()

    def close(self) -> int:
        assert self.proc.stdout is not None
        self.end_input()
        while self.read() is not None:
            pass
        self.proc.stdout.close()
        return self.proc.wait(timeout=30)


def allow_all(request: dict[str, Any]) -> dict[str, Any]:
    """The answer to a ``can_use_tool`` request: allow, answering a question with "yes"."""
    body: dict[str, Any] = {"behavior": "allow", "updatedInput": request["request"].get("input")}
    questions = (request["request"].get("input") or {}).get("questions")
    if questions:
        body["updatedInput"] = {
            "questions": questions,
            "answers": {questions[0]["question"]: "yes"},
        }
    return {
        "type": "control_response",
        "response": {"subtype": "success", "request_id": request["request_id"], "response": body},
    }
