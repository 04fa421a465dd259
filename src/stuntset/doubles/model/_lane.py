"""The fast lane of the model double's server (``stuntset serve`` and the loopback server).

uvicorn answers every request through ASGI: a scope dict, a request/response cycle, an
``asyncio.Event``, a task running the app, a ``receive`` for the body, two ``send`` messages
whose headers are checked one by one. For a minimal app that machinery is most of the cost of
a request (≈ 160k of the ≈ 185k instructions a minimal uvicorn + raw ASGI app spends; a bare
``asyncio.Protocol`` on the same parser answers in ≈ 26k). The double's common answer — a
whole, fault-free JSON reply — needs none of it, so it is answered here, inside the HTTP
parser's callbacks: the body is collected, the double answers, and the response's head and
body leave in one write, with the bytes uvicorn would have sent (its status line and default
``date``/``server`` headers).

A fault-free stream — a streamed reply of writes only (no pause, stall, drop or delayed
status line), its head encoded — is written here too, one write per event as uvicorn's path
writes it (the framing a real provider shows): the status line, the default headers, the
reply's head lines and ``transfer-encoding: chunked`` leave with the first event's chunk;
each later event is its own write, as ``%x\r\n<event>\r\n``; the last one carries the
terminating ``0\r\n\r\n`` (uvicorn's path sends it as one write more; the bytes are the
same). When the transport pauses writing mid-stream (its buffer over the high-water mark: a
client that does not read), the rest waits for ``resume_writing`` — nothing more is
buffered meanwhile — and the connection counts as busy: a request arriving on it is
pipelined behind the stream (uvicorn's path, as for any response in flight), and a
shutdown closes it once the stream is out. As ``ModelApp`` does, the journal records when
the stream ended (``Journal.ended``: here just before its last write, so a client that has
read the terminating chunk finds it there), and a stream that waits is open for the leak
checks (``STREAMS``) until then.

Everything else takes uvicorn's own path, as before: anything that is not a ``POST`` with a
``Content-Length`` within ``max_body`` to a model route over a keep-alive HTTP/1.1 connection
(413s, chunked bodies, a stage named by the ``x-stuntset-stage`` header, ``Expect:
100-continue``, ``Connection: close``, upgrades, percent-encoded paths, the console, the
control API), a request pipelined behind one still in flight, and a
connection whose writes are paused. A reply the lane cannot send itself (pauses, stalls,
drops, a delayed status line, a reply without pre-encoded headers, framing stress) — or an
error the double raised — goes to uvicorn's path *with the reply already made*:
``ModelApp`` plays it (or raises the error, so uvicorn logs it and answers 500) instead of
asking the double again, so a turn is never consumed twice and the journal holds the
request once.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar, cast

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from stuntset._resources import STREAMS
from stuntset.wires import Reply

from ._template import BAD_HEADER_NAME, BAD_HEADER_VALUE
from .app import ANSWER_KEY, ModelApp
from .double import ModelDouble, is_model_route

__all__ = ["lane_protocol", "written_stream", "written_whole"]

#: The chunk that ends a chunked body.
_LAST_CHUNK = b"0\r\n\r\n"


class _Waiting:
    """A stream the lane is writing, waiting for the paused transport: the events left, and
    what its end must record. Also what uvicorn's protocol sees as ``self.cycle`` meanwhile
    (a response in flight: a request arriving is pipelined behind it; ``shutdown`` clears
    ``keep_alive``, so the connection closes when the stream is out)."""

    __slots__ = (
        "disconnected",
        "double",
        "events",
        "index",
        "keep_alive",
        "message_event",
        "next",
        "response_complete",
        "token",
    )

    def __init__(
        self, double: ModelDouble, events: list[bytes], at: int, index: int, what: str
    ) -> None:
        self.double = double
        self.events = events
        self.next = at
        self.index = index
        self.token = STREAMS.opened(what)
        # what uvicorn's protocol reads and sets on ``self.cycle``
        self.response_complete = False
        self.disconnected = False
        self.keep_alive = True
        self.message_event = asyncio.Event()


class LaneProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the fast lane (``lane_protocol`` sets the app)."""

    lane_app: ClassVar[ModelApp]
    #: Request targets seen, with their path and query if the lane takes them (per server),
    #: and how many are kept (a client asks a few paths).
    lane_urls: ClassVar[dict[bytes, tuple[bytes, bytes] | None]]
    lane_url_limit: ClassVar[int] = 256
    #: The path and query of the request on the lane.
    _where: tuple[bytes, bytes] = (b"", b"")
    #: The double that answers the request on the lane: the one attached when its headers
    #: arrived (as ``ModelApp`` keeps the one attached when it is called).
    _double: ModelDouble | None = None
    #: The request's body chunks while it is on the lane (``None``: uvicorn's path).
    _chunks: list[bytes] | None = None
    #: ``server_state.default_headers`` last seen, and its encoding.
    _defaults: tuple[object, bytes] = (None, b"")

    #: When the connection last became idle (its response done), ``None`` while a request is
    #: on it: the keep-alive timer's reference point.
    _idle_since: float | None = None
    #: The stream waiting for the paused transport, if one is.
    _waiting: _Waiting | None = None

    # --- keep-alive: one timer per idle period, not one per request ---
    # uvicorn arms a timer when a response is done and cancels it when data arrives: a
    # ``TimerHandle`` made, pushed on the loop's heap and cancelled for every request. Here
    # the timer stays armed across requests and, when it fires, closes the connection only
    # if it has been idle for ``timeout_keep_alive`` since its last response (else it is set
    # again for that moment): the same deadline, checked when it comes.

    def _unset_keepalive_if_required(self) -> None:
        self._idle_since = None  # data arrived: busy (the timer, if armed, will see it)

    def on_response_complete(self) -> None:
        # uvicorn's, with the keep-alive timer armed only if none is
        self.server_state.total_requests += 1
        if self._direct.is_closing():
            return
        flow = self.flow
        if flow.read_paused:
            flow.resume_reading()
        if self.pipeline:
            cycle, app = self.pipeline.pop()
            self._start_asgi_task(cycle, app)
            return
        now = self._idle_since = self.loop.time()
        if self.timeout_keep_alive_task is None:
            self.timeout_keep_alive_task = self.loop.call_at(
                now + self.timeout_keep_alive, self._keep_alive_due
            )

    def _keep_alive_due(self) -> None:
        self.timeout_keep_alive_task = None
        since = self._idle_since
        if since is None:  # busy: the end of its response arms the timer again
            return
        due = since + self.timeout_keep_alive
        if self.loop.time() >= due:
            self.timeout_keep_alive_handler()
        else:
            self.timeout_keep_alive_task = self.loop.call_at(due, self._keep_alive_due)

    def connection_lost(self, exc: Exception | None) -> None:
        task = self.timeout_keep_alive_task
        if task is not None:
            task.cancel()
            self.timeout_keep_alive_task = None
        waiting = self._waiting
        if waiting is not None:  # the client went away mid-stream: not ended
            self._waiting = None
            STREAMS.ended(waiting.token, released=not waiting.double.closing.is_set())
        super().connection_lost(exc)

    def resume_writing(self) -> None:
        super().resume_writing()
        waiting = self._waiting
        if waiting is not None:
            self._write_events(waiting.double, waiting.events, waiting.next, waiting.index)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        #: Where the lane writes: below a ``CoalescingTransport`` (``_server``), which holds
        #: nothing between requests, the socket's own transport
        self._direct: asyncio.Transport = getattr(transport, "direct", transport)

    # --- parser callbacks ---

    def on_message_begin(self) -> None:
        # uvicorn's, but the scope dict is made only when the request takes uvicorn's path
        self.url = b""
        self.expect_100_continue = False
        self.headers = []
        self._chunks = None

    def on_headers_complete(self) -> None:
        where = self._on_lane()
        if where is not None:
            self._where = where
            self._double = self.lane_app.double
            self._chunks = []
            return
        self._make_scope()
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        chunks = self._chunks
        if chunks is None:
            super().on_body(body)
        else:
            chunks.append(body)

    def on_message_complete(self) -> None:
        chunks = self._chunks
        if chunks is None:
            super().on_message_complete()
            return
        self._chunks = None
        self._answer(chunks[0] if len(chunks) == 1 else b"".join(chunks))

    # --- the lane ---

    def _on_lane(self) -> tuple[bytes, bytes] | None:
        """The path and query of the request whose headers just arrived if it can be
        answered on the lane, else ``None``."""
        app = self.lane_app
        cycle = self.cycle
        if (
            app.double is None
            or (cycle is not None and not cycle.response_complete)
            or self.pipeline
            or self.flow.write_paused
            or self.expect_100_continue
        ):
            return None
        url = self.url
        try:
            where = self.lane_urls[url]
        except KeyError:
            where = _lane_url(url)
            if len(self.lane_urls) >= self.lane_url_limit:
                self.lane_urls.clear()
            self.lane_urls[url] = where
        if where is None:
            return None
        parser = self.parser
        if (
            parser.get_method() != b"POST"
            or parser.get_http_version() != "1.1"
            or not parser.should_keep_alive()
            or parser.should_upgrade()
        ):
            return None
        length = None
        for name, value in self.headers:
            if name == b"content-length":
                length = value
            elif name == b"transfer-encoding" or name == b"x-stuntset-stage":
                return None  # a chunked body; a stage named by header (``handle`` routes it)
        if length is None or not length.isdigit():
            return None
        limit = app.max_body
        if limit is not None and int(length) > limit:
            return None
        return where

    def _answer(self, body: bytes) -> None:
        double = self._double
        assert double is not None  # ``_on_lane`` checked it
        path, query = self._where
        try:
            answer = double.lane(path, query, self.headers, body)
        except Exception as error:  # uvicorn's path raises it again: logged, answered 500
            self._hand_over(error)
            return
        if isinstance(answer, tuple):
            status = STATUS_LINE[200]
            head, rest = answer
            if isinstance(rest, list):  # a stream's head lines and events
                self._start_stream(double, status, head, rest)
                return
            body = rest
        else:
            whole = written_whole(answer)
            if whole is None:
                stream = written_stream(answer)
                if stream is None:
                    self._hand_over(answer)
                    return
                self._start_stream(double, *stream)
                return
            status, (head, body) = whole
        transport = self._direct
        if not transport.is_closing():
            transport.write(b"".join((status, self._default_lines(), head, body)))
        self.on_response_complete()

    def _default_lines(self) -> bytes:
        """uvicorn's default headers (``date``, ``server``) as head lines, encoded again when
        its server replaces them (once a second)."""
        defaults = self.server_state.default_headers
        seen, encoded = self._defaults
        if seen is not defaults:
            encoded = b"".join(b"%s: %s\r\n" % pair for pair in defaults)
            self._defaults = (defaults, encoded)
        return encoded

    def _start_stream(
        self, double: ModelDouble, status: bytes, head: bytes, events: list[bytes]
    ) -> None:
        """Write a stream (``written_stream``'s parts): the head with the first event's chunk
        in one write, then one write per event."""
        # the request the reply answers, as ``ModelApp`` finds it (journaled just now)
        index = double.journal.count - 1
        transport = self._direct
        if transport.is_closing():  # the client is gone: nothing to write, nothing ended
            self.on_response_complete()
            return
        first = b"".join((status, self._default_lines(), head))
        if len(events) > 1:
            event = events[0]
            transport.write(b"%b%x\r\n%b\r\n" % (first, len(event), event))
            self._write_events(double, events, 1, index)
            return
        # the stream's end is journaled just before its last write, so a client that has
        # read the terminating chunk finds it there
        double.journal.ended(index)
        if events:
            event = events[0]
            transport.write(b"%b%x\r\n%b\r\n0\r\n\r\n" % (first, len(event), event))
        else:
            transport.write(first + _LAST_CHUNK)
        self.on_response_complete()

    def _write_events(self, double: ModelDouble, events: list[bytes], at: int, index: int) -> None:
        """Write ``events[at:]``, one write each (the last with the terminating chunk), while
        the transport takes them; if it pauses, wait for ``resume_writing``."""
        transport = self._direct
        flow = self.flow
        last = len(events) - 1
        while at <= last:
            if transport.is_closing():  # the client went away: ``connection_lost`` follows
                return
            if flow.write_paused:
                waiting = self._waiting
                if waiting is None:
                    path = self._where[0].decode("latin-1")
                    what = f"{path} (streamed response over loopback)"
                    waiting = self._waiting = _Waiting(double, events, at, index, what)
                    self.cycle = waiting  # type: ignore[assignment]
                waiting.next = at
                return
            event = events[at]
            if at == last:
                double.journal.ended(index)  # before the last write (``_start_stream``)
                transport.write(b"%x\r\n%b\r\n0\r\n\r\n" % (len(event), event))
            else:
                transport.write(b"%x\r\n%b\r\n" % (len(event), event))
            at += 1
        waiting = self._waiting
        if waiting is not None:  # a stream that waited: its end as uvicorn's cycle ends
            self._waiting = None
            waiting.response_complete = True
            STREAMS.ended(waiting.token, released=not double.closing.is_set())
            if not waiting.keep_alive:  # the server is shutting down
                transport.close()
        self.on_response_complete()

    def _hand_over(self, answer: Any) -> None:
        """Play ``answer`` (a ``Reply``, or an exception to raise) through uvicorn's path:
        the request's cycle and task are made now, its body already read."""
        self._make_scope()
        cast(dict[str, Any], self.scope)[ANSWER_KEY] = answer
        HttpToolsProtocol.on_headers_complete(self)
        HttpToolsProtocol.on_message_complete(self)

    def _make_scope(self) -> None:
        """The scope uvicorn's ``on_message_begin`` makes (``on_headers_complete`` fills in
        method and path)."""
        self.scope = {  # type: ignore[typeddict-item]
            "type": "http",
            "asgi": {"version": self.asgi_version, "spec_version": "2.3"},
            "http_version": "1.1",
            "server": self.server,
            "client": self.client,
            "scheme": self.scheme,  # type: ignore[typeddict-item]
            "root_path": self.root_path,
            "headers": self.headers,
            "state": self.app_state.copy(),
        }


def written_whole(reply: Reply) -> tuple[bytes, tuple[bytes, bytes]] | None:
    """The status line, head lines and body the lane writes for ``reply`` — the bytes
    uvicorn's path sends — if it is a whole reply with its head encoded (a template's
    ``handle`` filled); ``None`` for anything uvicorn's path must play (no head yet, a wait,
    a stream, a dropped connection, several writes, a header uvicorn refuses or one about the
    connection)."""
    head = reply.encoded
    actions = reply.actions
    if (
        head is None
        or reply.wait
        or reply.streaming
        or reply.status is None
        or len(actions) != 1
        or not isinstance(actions[0], bytes)
    ):
        return None
    lines: list[bytes] = []
    for name, value in head:
        if (
            BAD_HEADER_NAME.search(name)
            or BAD_HEADER_VALUE.search(value)
            or name.lower() == b"connection"
        ):
            return None
        lines += (name.lower(), b": ", value, b"\r\n")
    lines.append(b"\r\n")
    return STATUS_LINE[reply.status], (b"".join(lines), actions[0])


def written_stream(reply: Reply) -> tuple[bytes, bytes, list[bytes]] | None:
    """The status line, the head lines (``transfer-encoding: chunked`` and the blank line
    included) and the events the lane writes for ``reply`` — what uvicorn's path sends — if
    it is a fault-free stream with its head encoded: a streamed reply whose every action is
    a write; ``None`` for anything uvicorn's path must play (no head yet, a wait, a pause, a
    stall, a drop, a status uvicorn sends no body with, a header uvicorn refuses or one that
    changes the framing or the connection). Empty writes are left out (uvicorn's path
    writes nothing for them)."""
    head = reply.encoded
    status = STATUS_LINE.get(reply.status) if reply.status not in (None, 204, 304) else None
    if head is None or reply.wait or not reply.streaming or status is None:
        return None
    events: list[bytes] = []
    for action in reply.actions:
        if not isinstance(action, bytes):
            return None
        if action:
            events.append(action)
    lines: list[bytes] = []
    for name, value in head:
        lowered = name.lower()
        if (
            BAD_HEADER_NAME.search(name)
            or BAD_HEADER_VALUE.search(value)
            or lowered in _FRAMING_HEADERS
        ):
            return None
        lines += (lowered, b": ", value, b"\r\n")
    lines.append(b"transfer-encoding: chunked\r\n\r\n")
    return status, b"".join(lines), events


#: Head lines after which uvicorn frames a body otherwise, or closes the connection.
_FRAMING_HEADERS = frozenset((b"connection", b"content-length", b"transfer-encoding"))


def _lane_url(url: bytes) -> tuple[bytes, bytes] | None:
    """The path and query of a request target the lane takes: an origin-form path to a
    model route, with nothing uvicorn would decode (``%``) or drop (a fragment)."""
    if not url.startswith(b"/") or b"%" in url or b"#" in url:
        return None
    path, _, query = url.partition(b"?")
    return (path, query) if is_model_route(path) else None


def lane_protocol(app: ModelApp) -> type[LaneProtocol]:
    """``LaneProtocol`` answering from ``app``'s double (uvicorn's ``http=`` option, or the
    base of ``_server.guarded_protocol``)."""
    return type("ModelLaneProtocol", (LaneProtocol,), {"lane_app": app, "lane_urls": {}})
