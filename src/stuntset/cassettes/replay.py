"""Replaying a cassette: recorded responses served again, frame by frame, to the real client.

Matching is explicit. A request matches a recorded one when the method, the API endpoint
(``/chat/completions``…: the base-URL prefix such as ``/v1`` is ignored) and the JSON body
agree after *volatile* fields are dropped: top-level ``metadata``, ``user``,
``prompt_cache_key``, ``safety_identifier`` and ``stream_options`` (they change from run to
run without changing what is asked). Headers are not compared.

Matching goes through an index: each request's canonical form (``request_key``: method,
endpoint and body without volatile fields, as canonical JSON) finds the sessions waiting for it
in constant time, however many sessions or turns the cassette holds. A request the index does
not find is compared field by field with each session's next interaction before it is a miss
(``==`` equates ``1`` and ``1.0``, which canonical JSON writes apart), and the differences are
built only to explain the miss. (Where two sessions wait for requests that are equal only that
way, the one written identically to the request now wins over an earlier one.)

Matching is session-aware: recorded interactions are grouped by session (the recorded
``session``, or one default session) and each session is replayed in its own order. A request
is offered to the next unplayed interaction of every session and binds to the first session,
in recording order, whose next interaction matches — so concurrent or nested sessions (a
sub-agent) each get their own stream, not one global cursor.

An unmatched request raises ``CassetteMismatch`` with the request, the nearest candidates and
the difference; ``verify()`` fails on recorded interactions never played.
"""

from __future__ import annotations

import heapq
import json
import sys
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Collection, Iterator
from typing import Any, Literal

from stuntset.cassettes.format import Cassette, Interaction, endpoint_of, short_json
from stuntset.cassettes.scrub import Scrubber
from stuntset.errors import CassetteMismatch, UnusedInteractions, UsageError
from stuntset.wires import SSE, stream_framing

__all__ = ["VOLATILE_FIELDS", "CassetteMismatch", "Replayer", "UnusedInteractions"]

VOLATILE_FIELDS = frozenset(
    {"metadata", "user", "prompt_cache_key", "safety_identifier", "stream_options"}
)

Pace = Literal["none", "recorded", "scaled"]


def check_mismatches(mismatches: list[str], prefix: str = "") -> None:
    """``CassetteMismatch`` with the first of ``mismatches`` (and how many more), if any."""
    __tracebackhide__ = True
    if mismatches:
        more = len(mismatches) - 1
        raise CassetteMismatch(prefix + mismatches[0] + (f"\n(and {more} more)" if more else ""))


def not_allowed(
    unused: list[Interaction], allow_unused: bool | Collection[str]
) -> list[Interaction]:
    """The unused interactions ``allow_unused`` (True, or ids) does not excuse."""
    if allow_unused is True:
        return []
    allowed = set(allow_unused or ())
    return [i for i in unused if i.id not in allowed]


def _normalized(body: Any) -> Any:
    if isinstance(body, dict):
        return {k: v for k, v in body.items() if k not in VOLATILE_FIELDS}
    return body


def request_key(method: str, path: str, body: Any) -> str | None:
    """The canonical form of a request as matching compares it — method, API endpoint, body
    without volatile fields — as canonical JSON (sorted keys): equal keys mean equal requests.
    ``None`` where there is none (a NaN, a value JSON cannot hold, nesting too deep).

    The converse does not quite hold (``==`` also equates ``1``, ``1.0`` and ``true``), so a
    request the index does not find is compared field by field before it is called a miss."""
    try:
        return _canonical.encode([method, endpoint_of(path), _normalized(body)])
    except (TypeError, ValueError, RecursionError):
        return None


_canonical = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), allow_nan=False, ensure_ascii=False
)


def _differences(recorded: Interaction, method: str, path: str, body: Any) -> list[str]:
    out = []
    if recorded.request.method != method:
        out.append(f"method: recorded {recorded.request.method}, got {method}")
    if endpoint_of(recorded.request.path) != endpoint_of(path):
        out.append(f"path: recorded {recorded.request.path}, got {path}")
    want, got = _normalized(recorded.request.body), _normalized(body)
    if want != got:
        if isinstance(want, dict) and isinstance(got, dict):
            for key in sorted(set(want) | set(got)):
                if want.get(key) != got.get(key):
                    out.append(
                        f"body.{key}: recorded {short_json(want.get(key))}, got {short_json(got.get(key))}"
                        + _window(
                            {key: want[key]} if key in want else {},
                            {key: got[key]} if key in got else {},
                            "body",
                        )
                    )
        else:
            out.append(f"body: recorded {short_json(want)}, got {short_json(got)}")
            out[-1] += _window(want, got, "body")
    return out


def _window(want: Any, got: Any, path: str) -> str:
    """The lines showing where two values first differ, when ``short_json`` cut either."""
    if max(len(short_json(want, 10_000)), len(short_json(got, 10_000))) <= 120:
        return ""
    from stuntset.explain.window import mismatch_window

    lines = mismatch_window(want, got, labels=("recorded", "got"), path=path, indent="    ")
    return "\n" + lines if lines else ""


def _stream_bytes(interaction: Interaction) -> Iterator[tuple[float, bytes]]:
    """The recorded frames as they were sent: a binary stream's messages as they came, text
    frames in the framing of the recorded ``content-type`` (an NDJSON line a frame), SSE when
    it names none."""
    assert interaction.response.frames is not None
    headers = {k.lower(): v for k, v in interaction.response.headers.items()}
    framing = stream_framing(headers.get("content-type", "")) or SSE
    for frame in interaction.response.frames:
        if frame.encoding == "base64":  # a binary stream's message, written back as it came
            yield frame.t, frame.raw()
            continue
        yield frame.t, framing.write(frame.event, frame.data)


class Replayer:
    """Serves a cassette. ``transport()`` plugs into ``httpx2``/``httpx`` clients (sync and
    async) with no socket; ``pace`` keeps the recorded timing (``recorded``), scales it
    (``scaled`` with ``scale``) or drops it (``none``, the default)."""

    def __init__(
        self,
        cassette: Cassette,
        *,
        pace: Pace = "none",
        scale: float = 1.0,
        scrubber: Scrubber | None = None,
    ) -> None:
        #: what a request that matches nothing as sent is scrubbed with before it is matched
        #: again (default: a ``Scrubber()``, made when first needed)
        self.scrubber = scrubber
        if pace not in ("none", "recorded", "scaled"):
            raise UsageError(f"pace={pace!r}: use 'none', 'recorded' or 'scaled'")
        self.cassette = cassette
        self.pace = pace
        self.scale = scale if pace == "scaled" else 1.0
        sessions: dict[str | None, list[Interaction]] = {}
        for interaction in cassette.interactions:
            sessions.setdefault(interaction.session, []).append(interaction)
        self._sessions = list(sessions.values())
        self._cursor = [0] * len(self._sessions)
        self._lock = threading.Lock()
        # the index, by canonical request: the one interaction (session, position) that is
        # that request, or — for a request recorded more than once — a heap of the sessions
        # (by number: recording order) whose next interaction it is; an entry whose session
        # has moved on is stale and dropped when met
        self._keys = [
            [request_key(i.request.method, i.request.path, i.request.body) for i in session]
            for session in self._sessions
        ]
        counts = Counter(key for keys in self._keys for key in keys)
        #: key recorded once → (session, position, the interaction, the session's next key if
        #: that one is recorded more than once): all a hit needs, in one place
        self._only: dict[str, tuple[int, int, Interaction, str | None]] = {}
        self._waiting: dict[str | None, list[tuple[int, int]]] = {}
        for index, (session, keys) in enumerate(zip(self._sessions, self._keys, strict=True)):
            for position, key in enumerate(keys):
                if key is not None and counts[key] == 1:
                    following = keys[position + 1] if position + 1 < len(keys) else None
                    shared = following if following is not None and counts[following] > 1 else None
                    self._only[key] = (index, position, session[position], shared)
            if keys and counts[keys[0]] != 1:
                self._waiting.setdefault(keys[0], []).append((index, 0))
        self.played: list[Interaction] = []
        #: What requests met that the cassette does not have (``verify()`` raises the first).
        self.mismatches: list[str] = []

    def match(self, method: str, path: str, body: Any) -> Interaction:
        """The recorded interaction for this request (it is then consumed). A request that
        matches nothing as sent is matched as it would have been recorded — scrubbed by the
        same ``Scrubber`` (a prompt holding a secret-shaped string was written scrubbed) —
        and a mismatch names it scrubbed too."""
        __tracebackhide__ = True
        with self._lock:
            found = self._take(method, path, body)
            if found is not None:
                return found
            scrubber = self._scrubber()
            path, body = scrubber.path(path), scrubber.value(body)
            found = self._take(method, path, body)
            if found is not None:
                return found
            message = self._mismatch(method, path, body)
            self.mismatches.append(message)
            raise CassetteMismatch(message)

    def _scrubber(self) -> Scrubber:
        if self.scrubber is None:
            self.scrubber = Scrubber()
        return self.scrubber

    def _take(self, method: str, path: str, body: Any) -> Interaction | None:
        """The interaction this request is, consumed; ``None`` if there is none."""
        key = request_key(method, path, body)
        only = self._only.get(key) if key is not None else None
        if only is not None and self._cursor[only[0]] == only[1]:
            session, at, recorded, shared = only  # the common case: one lookup
            self._cursor[session] = at + 1
            if shared is not None:
                heapq.heappush(self._waiting.setdefault(shared, []), (session, at + 1))
            self.played.append(recorded)
            return recorded
        index = self._first_waiting(key) if key is not None and only is None else None
        if index is None:  # 1 and 1.0 are equal, but written apart: field by field
            index = self._first_equal(method, path, body)
        if index is None:
            return None
        position = self._cursor[index]
        self._cursor[index] = position + 1
        keys = self._keys[index]
        following = keys[position + 1] if position + 1 < len(keys) else None
        if following is not None and following not in self._only:
            heapq.heappush(self._waiting.setdefault(following, []), (index, position + 1))
        interaction = self._sessions[index][position]
        self.played.append(interaction)
        return interaction

    def _first_waiting(self, key: str) -> int | None:
        """The first session (recording order) waiting for ``key``, recorded more than once."""
        heap = self._waiting.get(key)
        while heap:
            index, position = heap[0]
            if self._cursor[index] == position:
                return index
            heapq.heappop(heap)
        return None

    def _first_equal(self, method: str, path: str, body: Any) -> int | None:
        """The same, field by field (for a request with no canonical form)."""
        for index, session in enumerate(self._sessions):
            position = self._cursor[index]
            if position < len(session) and not _differences(session[position], method, path, body):
                return index
        return None

    def _mismatch(self, method: str, path: str, body: Any) -> str:
        candidates = [
            (session[self._cursor[i]], _differences(session[self._cursor[i]], method, path, body))
            for i, session in enumerate(self._sessions)
            if self._cursor[i] < len(session)
        ]
        candidates.sort(key=lambda pair: len(pair[1]))
        lines = [
            f"no recorded interaction in {self.cassette.source} matches {method} {path} "
            f"(model {body.get('model') if isinstance(body, dict) else None!r})."
        ]
        if not candidates:
            lines.append(
                f"All {len(self.cassette.interactions)} recorded interactions were played."
            )
        for interaction, diff in candidates[:3]:
            lines.append(f"  nearest: {interaction.id} (session {interaction.session!r}):")
            lines += [f"    {line}" for line in diff]
        lines.append("Re-record the cassette if the request changed on purpose.")
        return "\n".join(lines)

    def unused(self) -> list[Interaction]:
        with self._lock:
            return [i for index, s in enumerate(self._sessions) for i in s[self._cursor[index] :]]

    def verify(self, *, allow_unused: bool | Collection[str] = False) -> None:
        """``CassetteMismatch`` if a request matched nothing (even if the client swallowed the
        error); ``UnusedInteractions`` if recorded interactions were never played
        (``allow_unused``: True, or the ids that may stay unplayed)."""
        __tracebackhide__ = True
        check_mismatches(self.mismatches)
        left = not_allowed(self.unused(), allow_unused)
        if left:
            listed = ", ".join(f"{i.id} ({i.request.method} {i.request.path})" for i in left)
            raise UnusedInteractions(
                f"{self.cassette.source}: {len(left)} recorded interaction(s) were never requested: "
                f"{listed}. Re-record, or allow them by id (allow_unused=[...])."
            )

    # --- transport ----------------------------------------------------------------------------

    def respond(
        self, method: str, path: str, body: bytes
    ) -> tuple[Interaction, list[tuple[float, bytes]] | bytes]:
        """The recorded interaction for a request and what to send: the stream's frames with
        their offsets (SSE events, or a binary stream's messages), or the whole body."""
        try:
            parsed = json.loads(body) if body else None
        except json.JSONDecodeError:
            parsed = body.decode("utf-8", errors="replace")
        interaction = self.match(method, path, parsed)
        if interaction.response.frames is not None:
            return interaction, list(_stream_bytes(interaction))
        payload = interaction.response.body
        raw = (
            payload.encode()
            if isinstance(payload, str)
            else json.dumps(payload).encode()
            if payload is not None
            else b""
        )
        return interaction, raw

    def headers(self, interaction: Interaction, streamed: bool) -> dict[str, str]:
        """The recorded response headers (with a content type)."""
        headers = dict(interaction.response.headers)
        headers.setdefault("content-type", "text/event-stream" if streamed else "application/json")
        return headers

    def delays(self, frames: list[tuple[float, bytes]]) -> Iterator[tuple[float, bytes]]:
        """Each frame with the pause before it (none unless the pace keeps time)."""
        last = 0.0
        for offset, data in frames:
            yield (max(0.0, offset - last) * self.scale if self.pace != "none" else 0.0), data
            last = offset

    def transport(self) -> ReplayTransport:
        return ReplayTransport(self)


class ReplayTransport:
    """An ``httpx2``/``httpx`` transport (sync and async) serving the cassette."""

    def __init__(self, replayer: Replayer) -> None:
        self.replayer = replayer

    def handle_request(self, request: Any) -> Any:
        library = sys.modules[type(request).__module__.partition(".")[0]]
        interaction, content = self.replayer.respond(
            request.method, request.url.path, request.read()
        )
        if isinstance(content, bytes):
            return library.Response(
                interaction.response.status,
                headers=self.replayer.headers(interaction, False),
                content=content,
            )

        def stream() -> Iterator[bytes]:
            for delay, data in self.replayer.delays(content):
                if delay:
                    time.sleep(delay)
                yield data

        return library.Response(
            interaction.response.status,
            headers=self.replayer.headers(interaction, True),
            content=stream(),
        )

    async def handle_async_request(self, request: Any) -> Any:
        import anyio

        library = sys.modules[type(request).__module__.partition(".")[0]]
        interaction, content = self.replayer.respond(
            request.method, request.url.path, await request.aread()
        )
        if isinstance(content, bytes):
            return library.Response(
                interaction.response.status,
                headers=self.replayer.headers(interaction, False),
                content=content,
            )

        async def stream() -> AsyncIterator[bytes]:
            for delay, data in self.replayer.delays(content):
                if delay:
                    await anyio.sleep(delay)
                yield data

        return library.Response(
            interaction.response.status,
            headers=self.replayer.headers(interaction, True),
            content=stream(),
        )

    def __enter__(self) -> ReplayTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> ReplayTransport:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def close(self) -> None:
        """Nothing to release: there is no socket."""

    async def aclose(self) -> None:
        """Nothing to release: there is no socket."""
