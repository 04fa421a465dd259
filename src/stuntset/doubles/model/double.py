"""The model double: one object that answers OpenAI Chat Completions, OpenAI Responses and
Anthropic Messages requests from a script, records every request, and remembers what was left
unused or unanswered. The ASGI app and the in-process transports are thin shells around it.

Routes (an optional ``/openai`` or ``/anthropic`` prefix, ``/scenarios/<name>`` before
that, and ``/stages/<id>`` before that, are accepted): ``POST /v1/chat/completions``,
``POST /v1/responses``, ``POST /v1/messages``, ``GET /v1/models``, and Gemini's
``POST /v1beta/models/{model}:generateContent`` / ``:streamGenerateContent`` (a ``/gemini``
prefix accepted), and the wires of issue 35 below their prefixes: Azure OpenAI (``/azure``:
``/openai/deployments/{deployment}/chat/completions``, ``/openai/responses``, ``/openai/v1/…``),
Ollama (``/ollama``: ``/api/chat``, ``/api/generate``), Vertex AI (``/vertex``: the
publisher-model paths) and Bedrock (``/bedrock``); ``stuntset.wires.WIRES`` lists them all.
Each ``/scenarios/<name>`` prefix plays that catalog scenario on its own, over and over
(``/scenarios/rate_limited;failures=2`` with parameters). A ``/stages/<id>`` prefix (or an
``x-stuntset-stage: <id>`` header) sends the request to a stage made through the control API
under ``/_stuntset/`` (``control``): its own script, turn positions and journal.

The journal records the API path (``/v1/chat/completions``) whatever prefix the request
came with, so one test's assertions hold in-process and over loopback alike; the scenario,
if any, is in ``entry.scenario``.
"""

from __future__ import annotations

import functools
import threading
from collections import deque
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

import msgspec

from stuntset.clock import Clock, FakeClock
from stuntset.errors import (
    ScriptExhausted,
    StuntsetError,
    UnknownScenario,
    UnusedTurns,
    UsageError,
)
from stuntset.ids import IdGenerator, RandomIds
from stuntset.script import RateLimits, Script, ScriptPlayer, Step, Turn, TurnRequest
from stuntset.seams import current_clock, current_ids
from stuntset.wires import (
    API_PATHS,
    PLAIN_FRAMING,
    PROVIDERS,
    BadRequest,
    Framing,
    Memo,
    Plan,
    RenderContext,
    Reply,
    WireCodec,
    check_script,
    codec_for,
    error_codec,
    json_reply,
    memoized,
    models_codec,
    plan_of,
    rate_limit_headers,
    render,
)

from ._prefixes import CONTROL_PREFIX, STAGE_HEADER, STAGE_PREFIX
from ._template import Template, head_lines, make_template
from .journal import Journal, JournalEntry

__all__ = [
    "CONTROL_PREFIX",
    "STAGE_HEADER",
    "STAGE_PREFIX",
    "ModelDouble",
    "Route",
    "is_model_route",
    "route",
]

_STAGE_PREFIX_BYTES = STAGE_PREFIX.encode()
#: Scenario routes (with their parameters) a double keeps before it forgets the oldest.
_SCENARIO_LIMIT = 256

_decode = msgspec.json.Decoder().decode
_UNREADABLE = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)
_UNDECODED = object()
#: Raw paths whose route the fast lane remembers per double (a client asks a few paths).
_LANE_LIMIT = 256
#: The head line uvicorn adds to a stream (no ``Content-Length``), and the blank line.
_CHUNKED = b"transfer-encoding: chunked\r\n\r\n"
#: Templates kept per double before they are dropped (a client asking for many models).
_TEMPLATE_LIMIT = 256


@dataclass(frozen=True, slots=True)
class Route:
    """Where a request path leads: an optional scenario, the provider the prefix names, and
    the API path under it; ``stage`` the stage its ``/stages/<id>`` prefix named."""

    scenario: str | None
    provider: str | None
    path: str
    stage: str | None = None


@functools.lru_cache(maxsize=256)
def route(path: str) -> Route:
    """Split ``/scenarios/<name>/<provider>/v1/...`` into its parts (each part optional;
    cached, as a client asks the same few paths again and again)."""
    scenario = provider = stage = None
    rest = path.rstrip("/") or "/"
    if rest.startswith(STAGE_PREFIX):
        stage, _, tail = rest[len(STAGE_PREFIX) :].partition("/")
        rest = "/" + tail
    if rest.startswith("/scenarios/"):
        name, _, tail = rest[len("/scenarios/") :].partition("/")
        scenario, rest = name, "/" + tail
    for prefix in PROVIDERS:
        if rest == f"/{prefix}" or rest.startswith(f"/{prefix}/"):
            provider, rest = prefix, rest[len(prefix) + 1 :] or "/"
            break
    return Route(scenario, provider, rest, stage)


def _header_dict(headers: list[tuple[bytes, bytes]]) -> dict[str, str]:
    """Raw request headers by name, as the ASGI app reads them (``app._headers``)."""
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in headers}


def _lane_request(source: tuple[WireCodec, bytes, list[tuple[bytes, bytes]]]) -> TurnRequest:
    """The ``TurnRequest`` of a request answered on the fast lane (made when read)."""
    codec, body, headers = source
    return codec.parse(_decode(body), _header_dict(headers))


@functools.lru_cache(maxsize=256)
def is_model_route(path: bytes) -> bool:
    """Whether a ``POST`` to ``path`` (raw, without its query) reaches one of the wires
    (cached per path, as ``route``)."""
    try:
        text = path.decode("ascii")
    except UnicodeDecodeError:
        return False
    where = route(text)
    return codec_for(where.path) is not None


def _no_stage(stage_id: str, double: ModelDouble) -> str:
    """Why a request addressed to stage ``stage_id`` found none."""
    if not double.control:
        return f"stuntset: stage {stage_id!r}: this double has no stages (a stage's own routes)"
    return (
        f"stuntset: no stage {stage_id!r} on this server (it was never made, or was deleted); "
        f"make one with POST {CONTROL_PREFIX}/stages"
    )


#: The fast lane's memo of a turn (``ModelDouble._lane_turn``).
_LaneTurn: TypeAlias = tuple[
    Turn, list[tuple[Step, ...]], "Template | None", "RateLimits | None", bytes | None
]


@dataclass(slots=True)
class _Pending:
    """The rest of a played turn: segments that answer the requests carrying tool results."""

    index: int
    label: str
    segments: deque[tuple[Step, ...]]
    limits: RateLimits | None = None


class ModelDouble:
    """Answers model API requests from ``script``.

    ``clock`` and ``ids`` default to the seams in force when the double is made (so responses
    are deterministic under the pytest plugin, even when served from another thread).
    ``framing`` applies framing stress to every stream. ``cycle`` restarts the script when it
    runs out instead of failing (what ``stuntset serve`` does for scenario routes).
    ``keep`` bounds what the double remembers to the last ``keep`` requests (journal, played
    turns, unanswered requests): a long-running server's memory stays flat. By default (a
    double for one test) it keeps everything. ``control`` serves the control API under
    ``/_stuntset/`` and routes ``/stages/<id>`` requests to its stages (a stage has neither).
    """

    def __init__(
        self,
        script: Script | None = None,
        *,
        framing: Framing = PLAIN_FRAMING,
        clock: Clock | None = None,
        ids: IdGenerator | None = None,
        cycle: bool = False,
        scenario_routes: bool = True,
        keep: int | None = None,
        control: bool = True,
    ) -> None:
        if keep is not None and keep < 0:
            raise UsageError(f"keep must be 0 or more (the requests to remember), got {keep!r}")
        self.clock = clock or current_clock()
        self.ids = ids or current_ids()
        self.framing = framing
        self.cycle = cycle
        self.scenario_routes = scenario_routes
        self.keep = keep
        # a clock that is not the real one stamps the journal too (the resilience check reads
        # a client's waits on it); the real clock's stamps would repeat the monotonic ones
        self.journal = Journal(
            keep=keep, clock=self.clock if isinstance(self.clock, FakeClock) else None
        )
        #: Fault-free replies come from templates (same bytes; off only to compare in tests);
        #: plain framing only (other framings re-encode JSON).
        self._templates_on = framing == PLAIN_FRAMING
        #: Set when the double shuts down: stalled responses end.
        self.closing = threading.Event()
        self._lock = threading.Lock()
        self._scenarios: dict[str, ModelDouble] = {}
        self.control = control
        #: The stages made through the control API, by id (``control.Stages``).
        self.stages: dict[str, ModelDouble] = {}
        self._unanswered: deque[str] = deque(maxlen=keep)
        self._unanswered_count = 0
        self.play(script or Script(name="<empty>"))

    # --- configuration ---

    def play(self, script: Script) -> None:
        """Answer from ``script`` from now on (unused turns of the previous one are dropped)."""
        if not isinstance(script, Script):
            raise UsageError(
                f"expected a stuntset.script.Script, got {script!r}; build one with Script.of(...) "
                f"or stuntset.scenarios.build(name)"
            )
        check_script(script)
        with self._lock:
            self.script = script
            self.player = ScriptPlayer(script, keep=self.keep, cycle=self.cycle)
            self._memo: Memo = {}
            self._templates: dict[tuple[object, ...], Template] = {}
            self._pending: deque[_Pending] = deque()
            #: The fast lane's routes by raw path, and its memo of turns (``lane``).
            self._lanes: dict[bytes, tuple[WireCodec, Route, ModelDouble] | None] = {}
            self._lane_turns: dict[tuple[int, WireCodec, bool, str, bool], _LaneTurn] = {}

    def new_stage(self, script: Script, *, cycle: bool = False) -> ModelDouble:
        """A stage of this double (the control API's): a double of its own with this one's
        clock, ids, framing, bounds and closing flag (its stalled responses end when the
        server stops)."""
        stage = type(self)(
            script,
            framing=self.framing,
            clock=self.clock,
            ids=self.ids,
            cycle=cycle,
            keep=self.keep,
            control=False,
        )
        stage.closing = self.closing
        return stage

    @property
    def requests(self) -> list[JournalEntry]:
        """Every request received so far, in arrival order."""
        return self.journal.entries()

    # --- answering ---

    def handle(
        self, method: str, path: str, query: str, headers: Mapping[str, str], body: bytes
    ) -> Reply:
        """The reply to one HTTP request (``headers`` with lower-case names)."""
        if self.control and path.startswith(CONTROL_PREFIX):
            from .control import answer_control  # loads when a client first asks for it

            return answer_control(self, method, path, query, headers, body)
        parsed: object = None
        if body:
            try:
                parsed = _decode(body)
            except _UNREADABLE:
                # not JSON, or JSON msgspec will not hold: nested too deep, an integer beyond
                # 64 bits (answered with the provider's 400 below)
                parsed = body.decode("utf-8", "replace")
        return self._handle(method, path, query, headers, body, parsed)

    def _handle(
        self,
        method: str,
        path: str,
        query: str,
        headers: Mapping[str, str],
        body: bytes,
        parsed: object,
    ) -> Reply:
        """``handle`` with the body decoded (``parsed``: its JSON, or its text)."""
        where = route(path)
        if self.control:
            stage_id = where.stage if where.stage is not None else headers.get(STAGE_HEADER)
            if stage_id is not None:
                stage = self.stages.get(stage_id)
                if stage is not None:
                    return stage._handle_at(
                        Route(where.scenario, where.provider, where.path),
                        method, query, headers, body, parsed,
                    )  # fmt: skip
                where = Route(where.scenario, where.provider, where.path, stage_id)
        return self._handle_at(where, method, query, headers, body, parsed)

    def _handle_at(
        self,
        where: Route,
        method: str,
        query: str,
        headers: Mapping[str, str],
        body: bytes,
        parsed: object,
    ) -> Reply:
        """``_handle`` once the route is known (a stage's, after its prefix)."""
        codec = codec_for(where.path, query)
        reply: Reply | None = None
        turn: int | None = None
        try:
            reply, turn = self._answer(method, where, codec, headers, body, parsed, query)
            if self.framing.bad_gzip and reply.status is not None and reply.status < 400:
                reply.headers = [*reply.headers, ("content-encoding", "gzip")]
                reply.encoded = None
        finally:
            self.journal.add(
                method,
                where.path,
                query,
                headers,
                parsed,
                codec.wire.name if codec else None,
                turn,
                None if reply is None else reply.status,
                where.scenario,
                reply,
            )
        return reply

    def lane(
        self, path: bytes, query: bytes, headers: list[tuple[bytes, bytes]], body: bytes
    ) -> tuple[bytes, bytes] | tuple[bytes, list[bytes]] | Reply:
        """``handle`` for a ``POST`` on the server's fast lane (``_lane``), with the request as
        it came off the wire: the raw path (no query), the query, the headers (lower-case
        names) and the body. A whole, fault-free reply comes back ready to write: its head
        lines (after the status line ``200 OK``) and its body; a fault-free stream too: its
        head lines (``transfer-encoding: chunked`` and the blank line included) and its
        events, one write each; anything else as the ``Reply`` ``handle`` would give. The same turn, ids and journal entry either way; no
        ``TurnRequest`` is made for a request answered here (``player.played`` makes it
        when read) and the journal keeps the request's bytes."""
        if path.startswith(_STAGE_PREFIX_BYTES) and self.control:
            stage_id, _, rest = path[len(_STAGE_PREFIX_BYTES) :].partition(b"/")
            stage = self.stages.get(stage_id.decode("latin-1"))
            if stage is None:  # the provider's 404, from the general path
                return self._handle_raw(path, query, headers, body)
            return stage.lane(b"/" + rest, query, headers, body)
        try:
            found = self._lanes[path]
        except KeyError:
            if len(self._lanes) >= _LANE_LIMIT:
                self._lanes.clear()
            found = self._lanes[path] = self._lane_route(path)
        if found is None:
            return self._handle_raw(path, query, headers, body)
        codec, where, target = found
        if codec.checks_query and codec.refuses_query(where.path, query.decode("latin-1")):
            return self._handle_raw(path, query, headers, body)  # refused there, journaled
        try:
            parsed = _decode(body)
        except _UNREADABLE:  # a 400: the general path says which
            return self._handle_raw(path, query, headers, body)
        try:
            model, tool_results = codec.read(parsed)
        except BadRequest:
            return self._handle_raw(path, query, headers, body, parsed)
        data: dict[str, Any] = parsed
        if tool_results and target._pending:
            return self._handle_raw(path, query, headers, body, parsed)
        streaming = codec.streams(data)
        if streaming:
            # a stream's form may hang on the query (Gemini's ``alt=sse``, or none: a JSON
            # array): the codec ``handle`` finds with it
            asked = codec_for(where.path, query.decode("latin-1"))
            if asked is not codec:
                if asked is None or not asked.streams(data):
                    return self._handle_raw(path, query, headers, body, parsed)
                codec = asked
        options = data.get("stream_options")
        include_usage = isinstance(options, dict) and options.get("include_usage") is True
        model = model or "stuntset"
        picked = target.player.next_open(_lane_request, (codec, body, headers))
        if picked is None:  # a script with matches or a function, or no turn left
            return self._handle_raw(path, query, headers, body, parsed)
        index, turn = picked
        reply: Reply | None = None
        kept = False
        try:
            # the turn's segments, plan and template, found in one lookup
            key = (id(turn), codec, include_usage, model, streaming)
            hit = target._lane_turns.get(key)
            if hit is None or hit[0] is not turn:
                hit = target._lane_turn(key, turn, codec, include_usage, model, streaming)
            _, segments, template, limits, extra = hit
            if len(segments) > 1:  # the rest wait for the tool results
                target._first_segment(index, turn, limits)
            if template is None:  # a fault: rendered as ``handle`` renders it
                full = codec.parse(parsed, _header_dict(headers))
                reply = target._reply(codec, full, segments[0], limits)
            else:
                created = int(target.clock.now())
                fast = template.lane
                stream = template.stream
                if stream is not None and extra is not None:  # a stream, written by the lane
                    events = stream.fill(target.ids, created)
                    if isinstance(events, tuple):
                        # the turn's rate limits after the reply's own lines, as ``handle``
                        streamed = (events[0] + extra + _CHUNKED, events[1])
                        self.journal.add_raw(
                            where.path, query, headers, body, codec.wire.name, index,
                            where.scenario, streamed,
                        )  # fmt: skip
                        kept = True
                        return streamed
                    reply = events
                elif fast is None or extra is None:
                    reply = template.fill(target.ids, created)
                else:
                    ids = target.ids
                    if type(ids) is RandomIds:  # ids that need no escaping: ``quick``
                        written: tuple[bytes, bytes] | Reply = fast.quick(ids.new, created)
                    else:
                        written = fast.fill(ids, created)
                    if isinstance(written, tuple):
                        if extra:  # the turn's rate limits, after content-length as ``handle``
                            written = (written[0][:-2] + extra + b"\r\n", written[1])
                        self.journal.add_raw(
                            where.path, query, headers, body, codec.wire.name, index,
                            where.scenario, written,
                        )  # fmt: skip
                        kept = True
                        return written
                    reply = written
                if limits is not None and codec.sends_rate_limits:
                    target._add_rate_limits(reply, limits)
        finally:  # what ``handle`` journals (also when rendering raised)
            if not kept:
                self.journal.add(
                    "POST",
                    where.path,
                    query.decode("latin-1"),
                    _header_dict(headers),
                    parsed,
                    codec.wire.name,
                    index,
                    None if reply is None else reply.status,
                    where.scenario,
                    reply,
                )
        return reply

    def _lane_turn(
        self,
        key: tuple[int, WireCodec, bool, str, bool],
        turn: Turn,
        codec: WireCodec,
        include_usage: bool,
        model: str,
        streaming: bool = False,
    ) -> _LaneTurn:
        """The fast lane's memo of a turn: its segments, its first segment's template
        (``None`` for a fault, or a stream this wire does not template), its rate limits
        and the head lines they add on this wire (``b""`` for none; ``None`` for lines
        uvicorn would refuse: ``handle``'s path)."""
        segments = self._segments(turn)
        plan = self._plan(segments[0])
        template = None
        if plan.fault is None and codec.templated and (codec.templated_streams or not streaming):
            template = self._template(codec, plan, streaming, include_usage, model, 0)
        limits = self._limits(turn)
        extra: bytes | None = b""
        if limits is not None and codec.sends_rate_limits:
            extra = head_lines(self._rate_limit_headers(limits))
        if len(self._lane_turns) >= _TEMPLATE_LIMIT:
            self._lane_turns.clear()
        made = self._lane_turns[key] = (turn, segments, template, limits, extra)
        return made

    def _lane_route(self, path: bytes) -> tuple[WireCodec, Route, ModelDouble] | None:
        """Where a ``POST`` to ``path`` goes on the fast lane: its codec, route and the double
        that answers it; ``None`` where ``handle`` must answer (no wire, a scenario route
        that is off or unknown, framing stress)."""
        if not self._templates_on:
            return None
        try:
            where = route(path.decode("ascii"))
        except UnicodeDecodeError:
            return None
        codec = codec_for(where.path)
        if codec is None:
            return None
        target = self
        if where.scenario is not None:
            if not self.scenario_routes:
                return None
            try:
                target = self._scenario(where.scenario)
            except StuntsetError:
                return None
        return codec, where, target

    def _handle_raw(
        self,
        path: bytes,
        query: bytes,
        headers: list[tuple[bytes, bytes]],
        body: bytes,
        parsed: object = _UNDECODED,
    ) -> Reply:
        """``handle`` for a request the lane leaves to it (``parsed``: its body decoded)."""
        where, text = path.decode("latin-1"), query.decode("latin-1")
        if parsed is _UNDECODED:
            return self.handle("POST", where, text, _header_dict(headers), body)
        return self._handle("POST", where, text, _header_dict(headers), body, parsed)

    def _first_segment(self, index: int, turn: Turn, limits: RateLimits | None) -> tuple[Step, ...]:
        """The first response of ``turn`` (played as turn ``index``); the rest wait for the
        requests that carry its tool results (``_segment_for``, after the player)."""
        hit = self._memo.get(("segments", id(turn)))  # ``_segments``, inlined: per request
        segments = hit[1] if hit is not None and hit[0] is turn else self._segments(turn)
        if len(segments) > 1:
            with self._lock:
                label = turn.describe()
                self._pending.append(_Pending(index, label, deque(segments[1:]), limits))
        return segments[0]

    def too_large(
        self, method: str, path: str, query: str, headers: Mapping[str, str], limit: int
    ) -> Reply:
        """The provider's 413 for a request body over ``limit`` bytes (the body is not read;
        the connection closes after the reply). Journaled without a body."""
        where = route(path)
        codec = codec_for(where.path, query)
        routed = codec is not None
        if codec is None:
            codec = error_codec(where.provider, headers)
        reply = codec.error_reply(
            413,
            f"Request body too large: this stuntset server takes at most {limit} bytes "
            f"(stuntset serve --max-body)",
            codec.too_large_type,
            headers=[("connection", "close")],
        )
        self.journal.record(
            method=method,
            path=where.path,
            scenario=where.scenario,
            query=query,
            headers=headers,
            wire=codec.wire.name if routed else None,
            status=413,
        )
        return reply

    def _answer(
        self,
        method: str,
        where: Route,
        codec: WireCodec | None,
        headers: Mapping[str, str],
        body: bytes,
        parsed: object,
        query: str = "",
    ) -> tuple[Reply, int | None]:
        fallback = error_codec(where.provider, headers)
        if where.path == "/v1/models" and method == "GET":
            return self._models(fallback), None
        listing = models_codec(where.provider, where.path)
        if listing is not None and method == "GET":
            return self._models(listing), None
        if codec is None or method != "POST":
            allowed = "POST" if codec else "one of " + ", ".join(API_PATHS)
            return (
                fallback.error_reply(
                    404 if codec is None else 405,
                    f"stuntset model double: no route for {method} {where.path} (expected {allowed})",
                ),
                None,
            )
        if where.stage is not None:
            return codec.error_reply(404, _no_stage(where.stage, self)), None
        refused = codec.refuses_query(where.path, query) if codec.checks_query else None
        if refused is not None:  # before the body is read: no turn is played
            return codec.error_reply(*refused, request_id=self.ids.new("req")), None
        target = self
        if where.scenario is not None:
            if not self.scenario_routes:
                return codec.error_reply(404, "scenario routes are turned off on this double"), None
            try:
                target = self._scenario(where.scenario)
            except UnknownScenario as error:
                return codec.error_reply(404, str(error)), None
            except StuntsetError as error:
                return codec.error_reply(400, str(error)), None
        if isinstance(parsed, str) or (not body):
            return codec.error_reply(
                400, "We could not parse the JSON body of your request. (stuntset model double)"
            ), None
        try:
            request = codec.parse(parsed, headers)
        except BadRequest as error:
            return codec.error_reply(400, error.message), None
        return target._respond(codec, request)

    def _respond(self, codec: WireCodec, request: TurnRequest) -> tuple[Reply, int | None]:
        try:
            # with ``cycle`` the player starts the turns over when none is left; a request no
            # turn matches even then is unanswered
            index, segment, limits = self._segment_for(request)
        except ScriptExhausted as error:
            with self._lock:
                self._unanswered.append(str(error))
                self._unanswered_count += 1
            return (
                codec.error_reply(
                    500,
                    f"stuntset: no scripted turn answers this request. {error}",
                    headers=[("x-should-retry", "false")],
                ),
                None,
            )
        return self._reply(codec, request, segment, limits), index

    def _reply(
        self,
        codec: WireCodec,
        request: TurnRequest,
        segment: tuple[Step, ...],
        limits: RateLimits | None,
    ) -> Reply:
        """The reply to ``request`` from ``segment`` of the turn chosen for it (and that
        turn's rate limits)."""
        body = request.body if isinstance(request.body, dict) else {}
        options = body.get("stream_options")
        include_usage = isinstance(options, dict) and options.get("include_usage") is True
        streaming = codec.streams(body)
        model = request.model or "stuntset"
        created = int(self.clock.now())
        hit = self._memo.get(("plan", id(segment)))  # ``_plan``, inlined: per request
        plan = hit[1] if hit is not None and hit[0] is segment else self._plan(segment)
        if (
            plan.fault is None
            and self._templates_on
            and codec.templated
            and (codec.templated_streams or not streaming)
        ):
            # fault-free: the reply made once per model and options, ids and second filled in
            reply = self._template(codec, plan, streaming, include_usage, model, created).fill(
                self.ids, created
            )
        else:
            ctx = self._context(
                model,
                self.ids.new(codec.id_prefix),
                self.ids.new("req"),
                created,
                include_usage,
            )
            reply = render(codec, plan, streaming, ctx)
        if limits is not None and codec.sends_rate_limits:
            self._add_rate_limits(reply, limits)
        return reply

    def _add_rate_limits(self, reply: Reply, limits: RateLimits) -> None:
        """The turn's rate limits as the headers Codex reads (every reply with a status)."""
        if reply.status is None:
            return
        headers = self._rate_limit_headers(limits)
        reply.headers = [*reply.headers, *headers]
        if reply.encoded is not None:
            reply.encoded = [*reply.encoded, *((k.encode(), v.encode()) for k, v in headers)]

    def _rate_limit_headers(self, limits: RateLimits) -> list[tuple[str, str]]:
        headers: list[tuple[str, str]] = memoized(
            self._memo, "rate_limit_headers", limits, functools.partial(rate_limit_headers, limits)
        )
        return headers

    def _template(
        self,
        codec: WireCodec,
        plan: Plan,
        streaming: bool,
        include_usage: bool,
        model: str,
        created: int,
    ) -> Template:
        """The template of ``plan``'s fault-free reply for this model and these options."""
        key = (codec, id(plan), streaming, include_usage, model)
        templates = self._templates
        template = templates.get(key)
        if template is None or template.plan is not plan:
            if len(templates) >= _TEMPLATE_LIMIT:
                templates.clear()
            ctx = self._context(model, "", "", created, include_usage)
            template = make_template(codec, plan, streaming, ctx, codec.id_prefix)
            templates[key] = template
        return template

    def _context(
        self, model: str, response_id: str, request_id: str, created: int, include_usage: bool
    ) -> RenderContext:
        return RenderContext(
            model=model,
            response_id=response_id,
            request_id=request_id,
            created=created,
            ids=self.ids,
            seed=self.script.seed,
            framing=self.framing,
            include_usage=include_usage,
            cache=self._memo,
        )

    def _plan(self, segment: tuple[Step, ...]) -> Plan:
        """The plan of ``segment``, made once per script."""
        plan: Plan = memoized(self._memo, "plan", segment, functools.partial(plan_of, segment))
        return plan

    def _segments(self, turn: Turn) -> list[tuple[Step, ...]]:
        """The model responses of ``turn``, split once per script (so a turn's segments are
        the same objects on every request, and their plans are found by identity)."""
        segments: list[tuple[Step, ...]] = memoized(self._memo, "segments", turn, turn.segments)
        return segments

    def _segment_for(self, request: TurnRequest) -> tuple[int, tuple[Step, ...], RateLimits | None]:
        """The turn index, the segment answering ``request`` and the turn's rate limits."""
        with self._lock:
            if request.tool_results and self._pending:
                pending = self._pending[0]
                segment = pending.segments.popleft()
                if not pending.segments:
                    self._pending.popleft()
                return pending.index, segment, pending.limits
        played = self.player.next_turn(request)
        limits = self._limits(played.turn)
        return played.index, self._first_segment(played.index, played.turn, limits), limits

    def _limits(self, turn: Turn) -> RateLimits | None:
        """The rate limits ``turn``'s replies report: its own, else the script's."""
        limits = turn.rate_limits
        return self.script.rate_limits if limits is None else limits

    def _scenario(self, name: str) -> ModelDouble:
        """The double of the scenario route ``name`` (``rate_limited;failures=2``: with its
        parameters), made on first use and kept (the oldest forgotten beyond a limit)."""
        with self._lock:
            double = self._scenarios.get(name)
            if double is None:
                from stuntset import scenarios  # the catalog loads when a route names it

                built = scenarios.build_from_route(name)
                if len(self._scenarios) >= _SCENARIO_LIMIT:
                    del self._scenarios[next(iter(self._scenarios))]
                double = ModelDouble(
                    built,
                    framing=self.framing,
                    clock=self.clock,
                    ids=self.ids,
                    cycle=True,
                    scenario_routes=False,
                    keep=self.keep,
                    control=False,
                )
                double.closing = self.closing
                self._scenarios[name] = double
            return double

    def reset_scenarios(self) -> int:
        """Start every scenario route over (they are made afresh on their next request);
        how many there were."""
        with self._lock:
            count = len(self._scenarios)
            self._scenarios.clear()
        return count

    def reset(self) -> None:
        """Start over: the script from its first turn, an empty journal, no unanswered
        requests, the scenario routes afresh (a stage's ``reset`` in the control API)."""
        self.play(self.script)
        with self._lock:
            self.journal = Journal(keep=self.keep)
            self._unanswered.clear()
            self._unanswered_count = 0
            self._scenarios.clear()

    def _models(self, codec: WireCodec) -> Reply:
        """``GET /v1/models`` in ``codec``'s shape: the models the script matches on."""
        names = sorted({t.match.model for t in self.script.turns if t.match and t.match.model})
        created = int(self.clock.now())
        return json_reply(200, codec.models_body(names or [codec.default_model], created))

    # --- verification ---

    def _unused(self) -> list[tuple[int, str]]:
        with self._lock:
            pending = [
                (
                    p.index,
                    f"  turn {p.index}: {len(p.segments)} response(s) of {p.label} never "
                    f"requested (the client did not send the tool result back)",
                )
                for p in self._pending
            ]
        player = self.player
        turns = [(i, f"  {player.describe_unused(i, t)}") for i, t in player.unused()]
        return turns + pending

    def unused(self) -> list[str]:
        """Descriptions of scripted turns (or remaining parts of turns) never requested."""
        return [line for _, line in self._unused()]

    @property
    def unanswered(self) -> list[str]:
        """Why each request that no turn could answer went unanswered."""
        with self._lock:
            return list(self._unanswered)

    def verify(self, *, allow_unused_turns: bool | Collection[str] = False) -> None:
        """Fail if a request arrived that no turn could answer (``ScriptExhausted``), or if
        scripted turns were never requested (``UnusedTurns``; allow all with
        ``allow_unused_turns=True``, or some by turn name)."""
        __tracebackhide__ = True
        if self._unanswered_count:
            shown = self.unanswered
            more = self._unanswered_count - len(shown)
            raise ScriptExhausted(
                f"{self._unanswered_count} request(s) reached the model double with no turn to "
                f"answer them:\n"
                + "\n".join(shown)
                + (
                    f"\n(and {more} earlier ones, beyond the last {len(shown)} kept)"
                    if more
                    else ""
                )
            )
        if allow_unused_turns is True:
            return
        allowed = set() if allow_unused_turns is False else set(allow_unused_turns)
        names = {i: t.name for i, t in enumerate(self.script.turns)}
        unused = [line for i, line in self._unused() if names.get(i) not in allowed]
        if unused:
            partly = (
                " (or not as often as scripted)" if any("partly used" in u for u in unused) else ""
            )
            raise UnusedTurns(
                f"script {self.script.label()!r}: {len(unused)} scripted turn(s) were never "
                f"requested{partly} by the code under test:\n" + "\n".join(unused) + "\nIf that "
                "is expected, pass allow_unused_turns=True (or a list of turn names)."
            )

    def close(self) -> None:
        """End stalled responses; the double answers nothing useful afterwards."""
        self.closing.set()
