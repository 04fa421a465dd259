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

Everything else takes uvicorn's own path, as before: anything that is not a ``POST`` with a
``Content-Length`` within ``max_body`` to a model route over a keep-alive HTTP/1.1 connection
(413s, chunked bodies, ``Expect: 100-continue``, ``Connection: close``, upgrades, percent-
encoded paths, the console), a request pipelined behind one still in flight, and a
connection whose writes are paused. A reply the lane cannot send whole (streams, pauses,
stalls, drops, a delayed status line, a reply without pre-encoded headers) — or an error the
double raised — goes to uvicorn's path *with the reply already made*: ``ModelApp`` plays it
(or raises the error, so uvicorn logs it and answers 500) instead of asking the double again,
so a turn is never consumed twice and the journal holds the request once.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, cast

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from .app import ANSWER_KEY, ModelApp
from .double import is_model_route

__all__ = ["lane_protocol"]

#: The characters uvicorn refuses in a header name / value (its ``send`` raises on them).
_BAD_NAME = re.compile(b'[\x00-\x1f\x7f()<>@,;:\\[\\]={} \t\\\\"]')
_BAD_VALUE = re.compile(b"[\x00-\x08\x0a-\x1f\x7f]")


class LaneProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the fast lane (``lane_protocol`` sets the app)."""

    lane_app: ClassVar[ModelApp]
    #: The request's body chunks while it is on the lane (``None``: uvicorn's path).
    _chunks: list[bytes] | None = None
    #: ``server_state.default_headers`` last seen, and its encoding.
    _defaults: tuple[object, bytes] = (None, b"")

    # --- parser callbacks ---

    def on_message_begin(self) -> None:
        # uvicorn's, but the scope dict is made only when the request takes uvicorn's path
        self.url = b""
        self.expect_100_continue = False
        self.headers = []
        self._chunks = None

    def on_headers_complete(self) -> None:
        if self._on_lane():
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

    def _on_lane(self) -> bool:
        """Whether the request whose headers just arrived can be answered on the lane."""
        app = self.lane_app
        cycle = self.cycle
        if (
            app.double is None
            or (cycle is not None and not cycle.response_complete)
            or self.pipeline
            or self.flow.write_paused
            or self.expect_100_continue
        ):
            return False
        parser = self.parser
        if (
            parser.get_method() != b"POST"
            or parser.get_http_version() != "1.1"
            or not parser.should_keep_alive()
            or parser.should_upgrade()
            or b"%" in self.url
        ):
            return False
        length = None
        for name, value in self.headers:
            if name == b"content-length":
                length = value
            elif name == b"transfer-encoding":
                return False
        if length is None or not length.isdigit():
            return False
        limit = app.max_body
        if limit is not None and int(length) > limit:
            return False
        return is_model_route(self.url.partition(b"?")[0])

    def _answer(self, body: bytes) -> None:
        double = self.lane_app.double
        assert double is not None  # checked when the headers arrived; nothing ran since
        path, _, query = self.url.partition(b"?")
        try:
            answer = double.lane(path, query, self.headers, body)
        except Exception as error:  # uvicorn's path raises it again: logged, answered 500
            self._hand_over(error)
            return
        if not isinstance(answer, tuple):
            head = answer.encoded
            if head is None or answer.wait or answer.streaming or answer.status is None:
                self._hand_over(answer)
                return
            actions = answer.actions
            if len(actions) != 1 or not isinstance(actions[0], bytes):
                self._hand_over(answer)
                return
            lines: list[bytes] = []
            for name, value in head:
                if _BAD_NAME.search(name) or _BAD_VALUE.search(value) or name == b"connection":
                    self._hand_over(answer)
                    return
                lines += (name, b": ", value, b"\r\n")
            lines.append(b"\r\n")
            status = STATUS_LINE[answer.status]
            answer = (b"".join(lines), actions[0])
        else:
            status = STATUS_LINE[200]
        transport = self.transport
        if not transport.is_closing():
            transport.write(b"".join((status, self._default_headers(), answer[0], answer[1])))
        self.on_response_complete()

    def _default_headers(self) -> bytes:
        """uvicorn's default headers (``date``, ``server``) as bytes; its server replaces
        the list once a second."""
        defaults = self.server_state.default_headers
        seen, encoded = self._defaults
        if seen is not defaults:
            encoded = b"".join(b"%s: %s\r\n" % pair for pair in defaults)
            self._defaults = (defaults, encoded)
        return encoded

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


def lane_protocol(app: ModelApp) -> type[LaneProtocol]:
    """``LaneProtocol`` answering from ``app``'s double (uvicorn's ``http=`` option, or the
    base of ``_server.guarded_protocol``)."""
    return type("ModelLaneProtocol", (LaneProtocol,), {"lane_app": app})
