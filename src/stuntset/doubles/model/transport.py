"""In-process transports: the model double plugged straight into an ``httpx2`` or ``httpx``
client, sync or async, with no socket and no framework in between.

One ``ModelTransport`` serves all four client kinds: it answers with the response class of
whichever library built the request (``httpx2`` for openai 3.x and anthropic 2.x, ``httpx``
for older SDKs, LangChain, LiteLLM…). Responses really stream: a pause, a stall or an abort
happens while the client iterates, exactly where the script puts it. Timing follows the
double's clock: under a ``FakeClock`` pauses are free and a stall fires the client's read
timeout at once; under the real clock they take real time. A pause or stall longer than the
client's read timeout raises that library's ``ReadTimeout``, as a socket would.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import AsyncIterator, Iterator
from functools import cache, lru_cache
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any, Self

from stuntset._resources import STREAMS
from stuntset.clock import FakeClock
from stuntset.errors import UsageError
from stuntset.scenarios import script_from
from stuntset.script import Script
from stuntset.wires import Abort, Action, Framing, Pause, Reply, Stall

from .double import ModelDouble
from .journal import JournalEntry, StallHold

__all__ = ["ModelTransport", "transport"]

_POLL = 0.02  # how often a real-time wait looks at the double's closing flag


class _Timeout(Exception):
    """Internal: the client's read timeout elapsed."""


class _Closed(Exception):
    """Internal: the connection is gone: a scripted abort (``reset``: by a TCP RST), or the
    double closed."""

    def __init__(self, reset: bool = False) -> None:
        super().__init__()
        self.reset = reset


async def _sleep(seconds: float) -> None:
    import anyio  # on first use: a double that never waits in real time does not load it

    await anyio.sleep(seconds)


def _library(request: Any) -> ModuleType:
    return sys.modules[type(request).__module__.partition(".")[0]]


def _read_timeout(request: Any) -> float | None:
    timeout = request.extensions.get("timeout") or {}
    value = timeout.get("read")
    return float(value) if value is not None else None


class _Timer:
    """Waits on the double's clock, bounded by the client's read timeout."""

    def __init__(self, double: ModelDouble, read_timeout: float | None, index: int = -1) -> None:
        self.double = double
        self.read_timeout = read_timeout
        self.fake = double.clock if isinstance(double.clock, FakeClock) else None
        #: The journal index of the request whose reply this times (for ``StallHold``).
        self.index = index

    def _held(self, span: float | None, started: float, problem: BaseException | None) -> None:
        """Journal how long the client held a stalled reply, and what ended it."""
        fake = False
        if isinstance(problem, _Timeout):
            fake = self.fake is not None
            seconds: float | None = span if fake else time.monotonic() - started
            ended = "read timeout"
        elif isinstance(problem, _Closed) or problem is None:
            seconds, ended = None, "double closed"
        else:  # the client cancelled its read (its own deadline) or closed the stream
            seconds, ended = time.monotonic() - started, "client hung up"
        self.double.journal.holds.append(StallHold(self.index, seconds, ended, fake))

    def stall(self) -> None:
        """Wait out a ``Stall`` (until the read timeout or the double's close), journaled."""
        started = time.monotonic()
        try:
            self.wait(None)
        except BaseException as problem:
            self._held(self._bounded(None)[0], started, problem)
            raise

    async def astall(self) -> None:
        """``stall`` for an async client."""
        started = time.monotonic()
        try:
            await self.await_(None)
        except BaseException as problem:
            self._held(self._bounded(None)[0], started, problem)
            raise

    def _bounded(self, seconds: float | None) -> tuple[float | None, bool]:
        """How long to wait, and whether the read timeout fires at the end of it."""
        if self.read_timeout is not None and (seconds is None or seconds > self.read_timeout):
            return self.read_timeout, True
        return seconds, False

    def wait(self, seconds: float | None) -> None:
        span, times_out = self._bounded(seconds)
        if self.fake is not None and span is not None:
            self.fake.advance(span)
        elif span is None:
            self.double.closing.wait()
            raise _Closed
        elif self.double.closing.wait(span):
            raise _Closed
        if times_out:
            raise _Timeout

    async def await_(self, seconds: float | None) -> None:
        span, times_out = self._bounded(seconds)
        if self.fake is not None and span is not None:
            await self.fake.sleep(span)
        else:
            deadline = None if span is None else time.monotonic() + span
            while not self.double.closing.is_set():
                left = _POLL if deadline is None else min(_POLL, deadline - time.monotonic())
                if left <= 0:
                    break
                await _sleep(left)
            if self.double.closing.is_set():
                raise _Closed
        if times_out:
            raise _Timeout


def _error(
    lib: ModuleType, request: Any, problem: Exception, received: int, reply: Reply
) -> Exception:
    if isinstance(problem, _Timeout):
        return lib.ReadTimeout("timed out", request=request)  # type: ignore[no-any-return]
    if isinstance(problem, _Closed) and problem.reset:
        return lib.ReadError("[Errno 104] Connection reset by peer", request=request)  # type: ignore[no-any-return]
    if reply.status is None:
        message = "Server disconnected without sending a response."
    elif reply.streaming:
        message = (
            "peer closed connection without sending complete message body (incomplete chunked read)"
        )
    else:
        expected = reply.content_length if reply.content_length is not None else received
        message = (
            "peer closed connection without sending complete message body "
            f"(received {received} bytes, expected {expected})"
        )
    return lib.RemoteProtocolError(message, request=request)  # type: ignore[no-any-return]


@cache
def _stream_classes(lib: ModuleType) -> tuple[type[Any], type[Any]]:
    """A sync and an async byte stream class for ``lib`` (its Response checks the base)."""

    class SyncStream(lib.SyncByteStream):  # type: ignore[misc,name-defined]
        def __init__(
            self, actions: list[Action], timer: _Timer, request: Any, reply: Reply
        ) -> None:
            self.actions, self.timer, self.request, self.reply = actions, timer, request, reply
            self.token = STREAMS.opened(_what(request, actions))

        def __iter__(self) -> Iterator[bytes]:
            sent = 0
            try:
                for action in self.actions:
                    if isinstance(action, bytes):
                        sent += len(action)
                        yield action
                    elif isinstance(action, Pause):
                        self.timer.wait(action.seconds)
                    elif isinstance(action, Stall):
                        self.timer.stall()
                    else:
                        raise _Closed(action.reset)
            except (_Timeout, _Closed) as problem:
                STREAMS.ended(self.token)
                raise _error(lib, self.request, problem, sent, self.reply) from None
            except Exception:
                STREAMS.ended(self.token)
                raise
            STREAMS.ended(self.token)  # read to the end (not on GeneratorExit: dropped)

        def close(self) -> None:
            STREAMS.ended(self.token)

    class AsyncStream(lib.AsyncByteStream):  # type: ignore[misc,name-defined]
        def __init__(
            self, actions: list[Action], timer: _Timer, request: Any, reply: Reply
        ) -> None:
            self.actions, self.timer, self.request, self.reply = actions, timer, request, reply
            self.token = STREAMS.opened(_what(request, actions))

        async def __aiter__(self) -> AsyncIterator[bytes]:
            sent = 0
            try:
                for action in self.actions:
                    if isinstance(action, bytes):
                        sent += len(action)
                        yield action
                    elif isinstance(action, Pause):
                        await self.timer.await_(action.seconds)
                    elif isinstance(action, Stall):
                        await self.timer.astall()
                    else:
                        raise _Closed(action.reset)
            except (_Timeout, _Closed) as problem:
                STREAMS.ended(self.token)
                raise _error(lib, self.request, problem, sent, self.reply) from None
            except BaseException as error:
                if not isinstance(error, GeneratorExit):  # a cancelled read ends it too
                    STREAMS.ended(self.token)
                raise
            STREAMS.ended(self.token)  # read to the end (not on GeneratorExit: dropped)

        async def aclose(self) -> None:
            STREAMS.ended(self.token)

    return SyncStream, AsyncStream


def _what(request: Any, actions: list[Action]) -> str:
    """How a stream names itself in the leak check's report."""
    chunks = sum(1 for action in actions if isinstance(action, bytes))
    return f"{request.method} {request.url.path} (in-process response of {chunks} chunk(s))"


@lru_cache(maxsize=64)
def _names(joined: bytes) -> tuple[str, ...]:
    """Header names sent one per line, lower-cased. A client sends the same names on every
    request: the same strings come back (their hashes already known) for the same names."""
    return tuple(joined.decode("ascii").lower().split("\n"))


def _headers(request: Any) -> dict[str, str]:
    """The request's headers by lower-case name, as ``headers.items()`` gives them (repeated
    names joined with ``, ``); plain ASCII headers, one line each, are decoded in one go."""
    headers = request.headers
    raw = headers.raw
    try:
        names = _names(b"\n".join([name for name, _ in raw]))
        values = b"\n".join([value for _, value in raw]).decode("ascii").split("\n")
    except UnicodeDecodeError:
        names, values = (), []
    out = dict(zip(names, values, strict=False))
    if len(out) == len(names) == len(values) == len(raw):
        return out
    return {name.lower(): value for name, value in headers.items()}


class ModelTransport:
    """An ``httpx2``/``httpx`` transport (sync and async) answering from a ``ModelDouble``.

    ``requests``, ``verify()`` and ``play()`` reach the double behind it.
    """

    def __init__(self, double: ModelDouble) -> None:
        self.double = double

    @property
    def requests(self) -> list[JournalEntry]:
        return self.double.requests

    def play(self, script: Script) -> None:
        self.double.play(script)

    def verify(self, *, allow_unused_turns: bool | list[str] = False) -> None:
        __tracebackhide__ = True
        self.double.verify(allow_unused_turns=allow_unused_turns)

    def _reply(self, request: Any, body: bytes) -> Reply:
        url = request.url
        query = url.query.decode() if isinstance(url.query, bytes) else str(url.query)
        reply = self.double.handle(request.method, url.path, query, _headers(request), body)
        # in-process, writes with nothing between them arrive together, as a socket would
        # deliver them to a reader that is behind; pauses, stalls and aborts stay in place
        reply.actions = self.double.framing.coalesce(reply.actions)
        return reply

    def handle_request(self, request: Any) -> Any:
        """The sync entry point (``httpx2.BaseTransport`` / ``httpx.BaseTransport``)."""
        lib = _library(request)
        reply = self._reply(request, request.read())
        timer = _Timer(self.double, _read_timeout(request), self.double.journal.count - 1)
        head: list[Action] = [Pause(reply.wait)] if reply.wait else []
        if reply.status is None:
            head += reply.actions
        try:
            for action in head:
                if isinstance(action, Pause):
                    timer.wait(action.seconds)
                elif isinstance(action, Stall):
                    timer.stall()
                elif isinstance(action, Abort):
                    raise _Closed(action.reset)
        except (_Timeout, _Closed) as problem:
            raise _error(lib, request, problem, 0, reply) from None
        sync_stream, _ = _stream_classes(lib)
        stream = sync_stream(reply.actions, timer, request, reply)
        return lib.Response(reply.status, headers=reply.header_list(), stream=stream)

    async def handle_async_request(self, request: Any) -> Any:
        """The async entry point (``httpx2.AsyncBaseTransport`` / ``httpx.AsyncBaseTransport``)."""
        lib = _library(request)
        reply = self._reply(request, await request.aread())
        timer = _Timer(self.double, _read_timeout(request), self.double.journal.count - 1)
        head: list[Action] = [Pause(reply.wait)] if reply.wait else []
        if reply.status is None:
            head += reply.actions
        try:
            for action in head:
                if isinstance(action, Pause):
                    await timer.await_(action.seconds)
                elif isinstance(action, Stall):
                    await timer.astall()
                elif isinstance(action, Abort):
                    raise _Closed(action.reset)
        except (_Timeout, _Closed) as problem:
            raise _error(lib, request, problem, 0, reply) from None
        _, async_stream = _stream_classes(lib)
        stream = async_stream(reply.actions, timer, request, reply)
        return lib.Response(reply.status, headers=reply.header_list(), stream=stream)

    def close(self) -> None:
        """Nothing to release (the double outlives its clients)."""

    async def aclose(self) -> None:
        """Nothing to release (the double outlives its clients)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc_value: BaseException | None = None,
        traceback: TracebackType | None = None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc_value: BaseException | None = None,
        traceback: TracebackType | None = None,
    ) -> None:
        await self.aclose()


def transport(
    script: Script | str | os.PathLike[str] | None = None,
    *,
    framing: Framing | None = None,
    double: ModelDouble | None = None,
    **scenario_params: Any,
) -> ModelTransport:
    """An in-process transport playing ``script`` (or sharing an existing ``double``).

    Works as ``httpx2.Client(transport=...)``, ``httpx2.AsyncClient(transport=...)`` and the
    same with ``httpx``::

        client = OpenAI(http_client=httpx2.Client(transport=stuntset.transport(script)),
                        api_key="test")

    ``script`` is what the ``stand_in`` marker takes: a ``Script``, a scenario name (its
    parameters as keywords) or a ``.toml`` / ``.json`` script path.
    """
    script = script_of(script, scenario_params, "transport()")
    if double is None:
        double = ModelDouble(script, framing=framing) if framing else ModelDouble(script)
    elif script is not None:
        double.play(script)
    return ModelTransport(double)


def script_of(spec: object, params: dict[str, Any], where: str) -> Script | None:
    """The script ``serve()`` and ``transport()`` play: ``spec`` as the ``stand_in`` marker
    reads it (None: an empty double, to ``play`` later)."""
    if spec is None:
        if params:
            raise UsageError(
                f"{where}: scenario parameters {sorted(params)} given without a scenario"
            )
        return None
    return script_from(Path(spec) if isinstance(spec, os.PathLike) else spec, params, where)
