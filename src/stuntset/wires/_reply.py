"""What the model double sends for one request, independent of how it is sent.

A ``Reply`` is a status line and headers (or none at all: a connection that is dropped or
never answered) followed by a list of actions: byte writes, pauses, a stall that lasts until
the client gives up, or an abort that drops the connection mid-body. The ASGI app and the
in-process transports both play the same ``Reply``, so a scripted fault looks the same to a
client whichever way it is connected.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal, TypeAlias

import msgspec

__all__ = [
    "ABORT",
    "RESET",
    "STALL",
    "Abort",
    "Action",
    "Framing",
    "Pause",
    "Reply",
    "Stall",
    "json_reply",
]


@dataclass(frozen=True, slots=True)
class Pause:
    """Wait ``seconds`` on the double's clock before the next action."""

    seconds: float


class Stall:
    """Send nothing more, ever: the client's read timeout (or its cancel) ends the wait."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "STALL"


class Abort:
    """Drop the connection here, without finishing the response (``reset``: with a TCP RST)."""

    __slots__ = ("reset",)

    def __init__(self, reset: bool = False) -> None:
        self.reset = reset

    def __repr__(self) -> str:
        return "RESET" if self.reset else "ABORT"


STALL: Final = Stall()
ABORT: Final = Abort()
RESET: Final = Abort(reset=True)

#: One thing to do while sending a response body.
Action: TypeAlias = bytes | Pause | Stall | Abort


@dataclass(slots=True)
class Reply:
    """One response. ``status`` ``None`` means no status line at all: the actions then decide
    whether the connection hangs (``STALL``) or is dropped (``ABORT``) before a response.

    ``streaming`` replies are sent chunk by chunk without ``Content-Length``; other replies
    declare the length of their body, or ``content_length`` if set (a length the body does not
    reach: a truncated response). ``wait`` delays the status line.
    """

    status: int | None
    headers: list[tuple[str, str]] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    streaming: bool = False
    content_length: int | None = None
    #: Seconds to wait (on the double's clock) before the status line: time to first byte.
    wait: float = 0.0
    #: ``header_list()`` already encoded as ASGI header bytes (``content-length`` included),
    #: when the reply was filled from a template; ``None`` otherwise.
    encoded: list[tuple[bytes, bytes]] | None = None

    def body_length(self) -> int:
        """The number of body bytes the actions write."""
        return sum(len(a) for a in self.actions if isinstance(a, bytes))

    def header_list(self) -> list[tuple[str, str]]:
        """The headers to send, with ``content-length`` added for non-streaming replies."""
        # (``encoded``, when set, holds the same pairs as bytes)
        if self.streaming or self.status is None:
            return self.headers
        length = self.content_length if self.content_length is not None else self.body_length()
        return [*self.headers, ("content-length", str(length))]


LineEnding: TypeAlias = Literal["\n", "\r\n", "\r"]


class Framing(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How streamed events are cut into bytes: framing stress that a correct SSE client must
    survive, applied to every stream the double sends. Import it as ``from stuntset import
    Framing``; pass it as ``@pytest.mark.stand_in(..., framing=Framing(...))``,
    ``serve(script, framing=...)`` or ``ModelDouble(script, framing=...)``.

    What each switch does, and what it does to a typical client:

    - ``line_ending``: LF (default), CRLF or CR between lines. The official SDKs' SSE decoders
      accept all three; a hand-written ``line.split("\\n")`` parser breaks on CR.
    - ``write_size``: split every write into pieces of at most this many bytes (1 = one byte
      per write). A client that assumes one read is one event (or one whole UTF-8 character)
      breaks; the SDKs reassemble.
    - ``keepalive``: send an SSE comment line (``: keep-alive``) before every event. A parser
      that treats every non-empty line as ``data:`` fails on it.
    - ``unknown_events``: right after a stream's first event, send one event of a type the
      protocol does not define (OpenAI Chat: a chunk object with no ``choices``; Responses:
      ``response.stuntset_unknown``; Anthropic: ``event: stuntset_unknown``). The SDKs' stream
      helpers skip it, but a raw loop over Chat chunks doing ``chunk.choices[0]`` crashes on
      it with ``TypeError: 'NoneType' object is not subscriptable`` (guard with ``if not
      chunk.choices: continue``).
    - ``repeat_first_event``: send a stream's first event twice (a duplicate
      ``message_start`` / ``response.created`` / first chunk). Anthropic's stream helper
      starts the message over; a client counting messages by their start event counts two.
    - ``multiline_data``: spread each event's JSON over several ``data:`` lines (the SSE rules
      join them with newlines, which JSON allows between tokens). A parser that decodes each
      ``data:`` line on its own fails.
    - ``bad_gzip``: label successful responses ``content-encoding: gzip`` without compressing
      them (a misconfigured proxy). The SDKs raise ``APIConnectionError`` from a
      ``DecodingError``.
    """

    line_ending: LineEnding = "\n"
    write_size: int | None = None
    keepalive: bool = False
    unknown_events: bool = False
    multiline_data: bool = False
    bad_gzip: bool = False
    repeat_first_event: bool = False

    def __post_init__(self) -> None:
        if self.line_ending not in ("\n", "\r\n", "\r"):
            raise ValueError(f"line_ending must be LF, CRLF or CR, got {self.line_ending!r}")
        if self.write_size is not None and self.write_size < 1:
            raise ValueError(f"write_size must be at least 1, got {self.write_size!r}")

    @property
    def plain(self) -> bool:
        return (
            self.line_ending == "\n"
            and self.write_size is None
            and not self.keepalive
            and not self.multiline_data
        )

    def frame(self, data: bytes, event: str | None = None) -> bytes:
        """One SSE event: an optional ``event:`` line, ``data:`` line(s), a blank line."""
        if self.multiline_data:
            return self._multiline(data, event)
        if self.line_ending == "\n" and not self.keepalive:
            if event is None:
                return b"data: " + data + b"\n\n"
            return b"".join((b"event: ", event.encode(), b"\ndata: ", data, b"\n\n"))
        end = self.line_ending.encode()
        head = b": keep-alive" + end + end if self.keepalive else b""
        if event is None:
            return head + b"data: " + data + end + end
        return head + b"event: " + event.encode() + end + b"data: " + data + end + end

    def _multiline(self, data: bytes, event: str | None) -> bytes:
        import json  # only this rare framing needs it

        try:
            lines = json.dumps(json.loads(data), indent=1).encode().split(b"\n")
        except ValueError:  # not JSON ([DONE], a malformed frame): one line, as it is
            lines = [data]
        end = self.line_ending.encode()
        head = b": keep-alive" + end + end if self.keepalive else b""
        if event is not None:
            head += b"event: " + event.encode() + end
        return head + b"".join(b"data: " + line + end for line in lines) + end

    def coalesce(self, actions: list[Action]) -> list[Action]:
        """``actions`` with consecutive writes joined (nothing can happen between them), unless
        ``write_size`` asks for small writes. Pauses, stalls and aborts stay where they are."""
        if self.write_size is not None or not actions:
            return actions
        try:
            return [b"".join(actions)]  # type: ignore[arg-type]  # writes only: one write
        except TypeError:  # a pause, stall or abort among them
            pass
        out: list[Action] = []
        run: list[bytes] = []
        for action in actions:
            if isinstance(action, bytes):
                run.append(action)
                continue
            if run:
                out.append(b"".join(run))
                run = []
            out.append(action)
        if run:
            out.append(b"".join(run))
        return out

    def split(self, actions: list[Action]) -> list[Action]:
        """``actions`` with every write cut into ``write_size`` pieces."""
        size = self.write_size
        if size is None:
            return actions
        out: list[Action] = []
        for action in actions:
            if isinstance(action, bytes):
                out.extend(action[i : i + size] for i in range(0, len(action), size))
            else:
                out.append(action)
        return out


PLAIN_FRAMING: Final = Framing()

_encode = msgspec.json.Encoder().encode


def json_reply(status: int, body: object, headers: list[tuple[str, str]] | None = None) -> Reply:
    """A complete JSON response."""
    return Reply(
        status,
        [("content-type", "application/json"), *(headers or [])],
        [_encode(body)],
    )
