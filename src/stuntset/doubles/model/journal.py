"""The request journal: every request a model double received, in arrival order, with its
secrets redacted, for tests to inspect (``stand_in.requests``). A test's double keeps every
request; ``stuntset serve`` keeps the last N (``--journal N``).
"""

from __future__ import annotations

import functools
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping
from typing import Any

import msgspec

from stuntset.clock import Clock

__all__ = ["REDACTED", "Journal", "JournalEntry", "StallHold", "redact_headers"]

REDACTED = "<redacted>"
_SECRET_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "set-cookie"}
)
_SECRET_WORDS = ("key", "token", "secret", "password", "auth")


@functools.lru_cache(maxsize=512)
def _is_secret(name: str) -> bool:
    """Whether a (lower-cased) header name holds a credential; clients send the same few
    names on every request, so the answer is cached per name."""
    return name in _SECRET_HEADERS or any(word in name for word in _SECRET_WORDS)


@functools.lru_cache(maxsize=256)
def _names_seen(names: tuple[str, ...]) -> tuple[bool, tuple[str, ...]]:
    """Whether ``names`` are all lower-case already, and which of them (lower-cased) hold
    credentials; a client sends the same names on every request, so this is cached."""
    lowered = [name.lower() for name in names]
    secret = dict.fromkeys(name for name in lowered if _is_secret(name))
    return lowered == list(names), tuple(secret)


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """``headers`` (lower-cased names) with credential values replaced by ``<redacted>``.

    ``Authorization: Bearer sk-…`` keeps its scheme (``Bearer <redacted>``) so a test can
    still see which auth form a client used.
    """
    lowered, secret = _names_seen(tuple(headers))
    out = dict(headers) if lowered else {name.lower(): value for name, value in headers.items()}
    for name in secret:
        value = out[name]
        if name.endswith("authorization") and " " in value:
            out[name] = f"{value.split(' ', 1)[0]} {REDACTED}"
        else:
            out[name] = REDACTED
    return out


class JournalEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One request as received. ``path`` is the API path (``/v1/chat/completions``), the same
    whether the request came in-process or over loopback with a ``/openai`` or ``/anthropic``
    prefix; ``scenario`` the catalog scenario its ``/scenarios/<name>`` prefix named.
    ``body`` is the parsed JSON (or the raw text when it did not parse); ``wire`` the wire
    that answered it (``None`` for routes outside the three wires); ``turn`` the index of
    the script turn that answered it, if any."""

    index: int
    method: str
    path: str
    query: str = ""
    headers: dict[str, str]
    body: Any = None
    wire: str | None = None
    turn: int | None = None
    status: int | None = None
    scenario: str | None = None

    @property
    def json(self) -> Any:
        """The parsed body (an alias that reads well in assertions)."""
        return self.body


_decode = msgspec.json.Decoder().decode


def _entry(item: tuple[Any, ...]) -> JournalEntry:
    index, method, path, query, headers, body, wire, turn, status, scenario, _ = item
    if isinstance(headers, list):  # recorded raw (``add_raw``): decoded now
        query = query.decode("latin-1")
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in headers}
        body = _decode(body)
    return JournalEntry(
        index=index,
        method=method,
        path=path,
        query=query,
        headers=redact_headers(headers),
        body=body,
        wire=wire,
        turn=turn,
        status=status,
        scenario=scenario,
    )


def _reply(kept: Any) -> Any:
    """The ``Reply`` a journal entry keeps (made now from the head and body ``add_raw`` kept)."""
    if not isinstance(kept, tuple):
        return kept
    from stuntset.wires import Reply

    head, body = kept
    headers = []
    for line in head.decode("latin-1").split("\r\n"):
        name, _, value = line.partition(": ")
        if name and name not in ("content-length", "transfer-encoding"):
            headers.append((name, value))
    if isinstance(body, list):  # a stream: its events
        return Reply(200, headers, list(body), streaming=True)
    return Reply(200, headers, [body])


class StallHold(msgspec.Struct, frozen=True):
    """How long a client held a stalled reply open: the request's journal ``index``, the
    ``seconds`` it waited (on the double's clock when that is a ``FakeClock`` and the client
    set a read timeout; real seconds otherwise; ``None`` while still held, or when only the
    double's close ended it) and how it ``ended``: ``read timeout`` (the client's own, in
    process), ``client hung up`` (over loopback, or a cancelled read), ``double closed``
    (nothing on the client's side ended it), ``held`` (not ended yet)."""

    index: int
    seconds: float | None
    ended: str
    #: ``seconds`` are the double's ``FakeClock``'s (it moved the clock to the read timeout)
    fake: bool = False


class Journal:
    """Thread-safe list of ``JournalEntry`` in arrival order (the loopback server records
    from its own thread). ``keep`` bounds it to the last ``keep`` entries (``stuntset
    serve``); indexes keep counting from the first request.

    A request is kept as recorded and becomes a ``JournalEntry`` (its secrets redacted) when
    the journal is read: recording stays cheap, and what a reader sees is the same.
    """

    def __init__(self, *, keep: int | None = None, clock: Clock | None = None) -> None:
        #: (index, method, path, query, headers, body, wire, turn, status, scenario, reply)
        self._entries: deque[tuple[Any, ...]] = deque(maxlen=keep)
        #: ``time.monotonic_ns()`` when each kept entry was recorded (``stamped``).
        self._stamps: deque[int] = deque(maxlen=keep)
        #: ``clock.monotonic()`` per kept entry, when the double's clock is not the real one
        #: (a ``FakeClock``): a client that waits on that clock shows its waits here.
        self._clock = clock
        self._clock_stamps: deque[float] = deque(maxlen=keep)
        #: Stalled replies and how long their clients held them (``StallHold``).
        self.holds: deque[StallHold] = deque(maxlen=keep)
        #: ``time.monotonic_ns()`` when a streamed reply's stream ended, by request index
        #: (``ended``; at most ``keep`` of them, the oldest forgotten first).
        self._ends: dict[int, int] = {}
        self._keep = keep
        self._count = 0
        self._lock = threading.Lock()

    def record(
        self,
        *,
        method: str,
        path: str,
        headers: Mapping[str, str],
        query: str = "",
        body: Any = None,
        wire: str | None = None,
        turn: int | None = None,
        status: int | None = None,
        scenario: str | None = None,
        reply: Any = None,
    ) -> None:
        """Keep one request (``headers`` as received: redacted when read) and the ``reply``
        it got, if any (read by ``exchanges()``: the console shows its frames)."""
        self.add(method, path, query, headers, body, wire, turn, status, scenario, reply)

    def add(
        self,
        method: str,
        path: str,
        query: str,
        headers: Mapping[str, str],
        body: Any,
        wire: str | None,
        turn: int | None,
        status: int | None,
        scenario: str | None,
        reply: Any = None,
    ) -> None:
        """``record`` with positional arguments (the double's per-request call): one tuple
        kept per request."""
        with self._lock:
            self._entries.append(
                (
                    self._count,
                    method,
                    path,
                    query,
                    headers,
                    body,
                    wire,
                    turn,
                    status,
                    scenario,
                    reply,
                )
            )
            self._stamps.append(time.monotonic_ns())
            if self._clock is not None:
                self._clock_stamps.append(self._clock.monotonic())
            self._count += 1

    def add_raw(
        self,
        path: str,
        query: bytes,
        headers: list[tuple[bytes, bytes]],
        body: bytes,
        wire: str,
        turn: int,
        scenario: str | None,
        reply: tuple[bytes, bytes] | tuple[bytes, list[bytes]],
    ) -> None:
        """``add`` for a ``POST`` answered ``200`` on the server's fast lane, kept as it came
        off the wire: the query, headers (lower-case names) and body as bytes (a body that
        parses as JSON), and the reply as its head lines and body (a stream: its events).
        Decoded when read."""
        with self._lock:
            self._entries.append(
                (self._count, "POST", path, query, headers, body, wire, turn, 200, scenario, reply)
            )
            self._stamps.append(time.monotonic_ns())
            if self._clock is not None:
                self._clock_stamps.append(self._clock.monotonic())
            self._count += 1

    def ended(self, index: int) -> None:
        """The reply to request ``index`` finished streaming now (its last write was sent, or
        the double dropped the connection as scripted): its end time (``stream_ends``)."""
        ns = time.monotonic_ns()
        with self._lock:
            self._ends[index] = ns
            if self._keep is not None and len(self._ends) > self._keep:
                del self._ends[next(iter(self._ends))]

    def stream_ends(self) -> dict[int, int]:
        """``time.monotonic_ns()`` when each streamed reply's stream ended, by request index
        (the requests whose stream never ended, or was not streamed over loopback, are not
        in it): with ``stamped()``'s arrival times, how long each reply took to its end."""
        with self._lock:
            return dict(self._ends)

    @property
    def count(self) -> int:
        """How many requests were recorded in all (also those no longer kept)."""
        return self._count

    def entries(self) -> list[JournalEntry]:
        with self._lock:
            kept = list(self._entries)
        return [_entry(item) for item in kept]

    def exchanges(self, after: int = -1) -> list[tuple[JournalEntry, Any]]:
        """``(entry, reply)`` for each request kept whose index is above ``after``: the reply
        as the double played it (a ``Reply``), or ``None`` if it had none."""
        with self._lock:
            kept = [item for item in self._entries if item[0] > after]
        return [(_entry(item), _reply(item[10])) for item in kept]

    def stamped(self) -> list[tuple[int, JournalEntry, Any]]:
        """``(monotonic_ns, entry, reply)`` for each request kept: when it was recorded (as it
        arrived), what it was and the ``Reply`` played (the failure timeline reads this)."""
        with self._lock:
            kept = list(zip(self._stamps, self._entries, strict=True))
        return [(ns, _entry(item), _reply(item[10])) for ns, item in kept]

    def clock_stamps(self) -> list[float] | None:
        """``clock.monotonic()`` for each request kept, in the order of ``stamped()``, when the
        journal was given a clock (a double under a ``FakeClock``); ``None`` otherwise."""
        if self._clock is None:
            return None
        with self._lock:
            return list(self._clock_stamps)

    def reset(self) -> None:
        """Forget every request and start counting from 0 again (a fresh journal)."""
        with self._lock:
            self._count = 0
        self.clear()

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._stamps.clear()
            self._clock_stamps.clear()
            self.holds.clear()
            self._ends.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[JournalEntry]:
        return iter(self.entries())
