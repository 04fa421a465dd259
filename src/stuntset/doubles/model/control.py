"""The control API: JSON over HTTP under ``/_stuntset/``, on ``stuntset serve`` and on the
loopback server of a ``StandIn`` (the ``stand_in`` fixture), so that a test in any language
can do what a Python test does with a ``StandIn``.

A **stage** is a model double of its own inside the server: its own script, turn positions,
journal and scenario routes. Make one from a script (JSON, or TOML text) or a catalog scenario
with its parameters; address it with the ``/stages/<id>`` path prefix
(``/stages/t1/openai/v1``) or the ``x-stuntset-stage: t1`` header; read its journal and its
unused turns; verify, reset, delete it. Stages never see each other's turns or requests.

The routes are ``ROUTES`` (``GET /_stuntset/openapi.json`` describes them, ``_openapi``).
Bad input is answered ``400``/``404``/``405``/``409`` with ``{"error": {"status",
"message", "where"}}``, ``where`` naming the place (``body.params.failures``,
``path.id``); never a 500 and never a traceback.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import parse_qs

import msgspec

from stuntset.errors import HarnessFailure, StuntsetError, UnknownScenario
from stuntset.script import Script, loads_script
from stuntset.wires import API_PROVIDERS, Reply, json_reply

from ._prefixes import CONTROL_PREFIX, STAGE_HEADER, STAGE_PREFIX
from .journal import Journal


class StageHost(Protocol):
    """What the control API reads of a double and asks of it (``StageHost`` is one). A
    protocol, so that this module imports no double: the double loads it when a client first
    asks for the control API, and no import circle closes."""

    cycle: bool
    script: Script
    journal: Journal
    #: the stages made through the control API, by id (each a ``StageHost`` too)
    stages: dict[str, Any]

    @property
    def unanswered(self) -> list[str]: ...

    def unused(self) -> list[str]: ...

    def reset(self) -> None: ...

    def reset_scenarios(self) -> int: ...

    def verify(self, *, allow_unused_turns: bool | Collection[str] = False) -> None: ...

    def new_stage(self, script: Script, *, cycle: bool = False) -> StageHost: ...


__all__ = ["MAX_STAGES", "ROUTES", "ControlError", "Op", "StageHost", "answer_control"]

#: Live stages a server holds at most (a client that never deletes its stages must not grow
#: the server's memory without bound).
MAX_STAGES = 1000
#: What a stage id may be: it is a path segment and a header value.
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_STAGE_FIELDS = ("id", "scenario", "params", "script", "cycle")
_decode = msgspec.json.Decoder().decode


class ControlError(Exception):
    """A request the control API refuses: the status, the message and the place."""

    def __init__(self, status: int, message: str, where: str) -> None:
        super().__init__(message)
        self.status, self.message, self.where = status, message, where


@dataclass(frozen=True)
class Op:
    """One route of the control API (``_openapi`` documents each)."""

    method: str
    path: str
    name: str
    summary: str
    status: int = 200


ROUTES: tuple[Op, ...] = (
    Op("GET", "/openapi.json", "openapi", "This OpenAPI document."),
    Op("GET", "/scenarios", "list_scenarios", "The catalog: each scenario and its parameters."),
    Op(
        "POST",
        "/scenarios/reset",
        "reset_scenarios",
        "Start every /scenarios/<name> route of the server over (each is made afresh).",
    ),
    Op("GET", "/stages", "list_stages", "The ids of the live stages."),
    Op("POST", "/stages", "create_stage", "Make a stage (an id is chosen if none is given).", 201),
    Op("GET", "/stages/{id}", "get_stage", "A stage: its script, URLs, counts."),
    Op("PUT", "/stages/{id}", "put_stage", "Make the stage, or replace its script and state."),
    Op(
        "DELETE",
        "/stages/{id}",
        "delete_stage",
        "Delete a stage (what it left unused is returned).",
    ),
    Op("GET", "/stages/{id}/journal", "get_journal", "The requests the stage received."),
    Op("GET", "/stages/{id}/unused", "get_unused", "Turns never requested; requests unanswered."),
    Op("POST", "/stages/{id}/reset", "reset_stage", "Start over: first turn, empty journal."),
    Op("POST", "/stages/{id}/verify", "verify_stage", "What a Python test's teardown checks."),
    Op(
        "GET",
        "/stages/{id}/verdicts",
        "get_verdicts",
        "The resilience verdicts of the stage (501 until verdicts exist).",
    ),
)


def _error(
    status: int, message: str, where: str, headers: list[tuple[str, str]] | None = None
) -> Reply:
    return json_reply(
        status, {"error": {"status": status, "message": message, "where": where}}, headers
    )


def answer_control(
    double: StageHost,
    method: str,
    path: str,
    query: str,
    headers: Mapping[str, str],
    body: bytes,
) -> Reply:
    """The reply to a request under ``/_stuntset`` (never an exception: a bad request is a
    JSON error naming the place)."""
    rest = path[len(CONTROL_PREFIX) :]
    if rest and not rest.startswith("/"):  # ``/_stuntsetx``: not ours
        return _error(404, f"no control route {path!r}", "path")
    found = _match(rest.rstrip("/") or "/")
    if found is None:
        routes = ", ".join(f"{op.method} {CONTROL_PREFIX}{op.path}" for op in ROUTES)
        return _error(404, f"no control route {path!r}; the routes: {routes}", "path")
    ops, params = found
    op = next((o for o in ops if o.method == method), None)
    if op is None:
        allowed = ", ".join(o.method for o in ops)
        return _error(
            405,
            f"{method} {path}: this route takes {allowed}",
            "method",
            [("allow", allowed)],
        )
    request = _Request(double, params, query, headers, body)
    try:
        status, payload = _HANDLERS[op.name](request)
    except ControlError as error:
        return _error(error.status, error.message, error.where)
    return json_reply(status, payload)


def _match(path: str) -> tuple[list[Op], dict[str, str]] | None:
    """The routes whose pattern matches ``path`` (one per method) and the path parameters."""
    parts = path.strip("/").split("/")
    hits: list[Op] = []
    params: dict[str, str] = {}
    for op in ROUTES:
        pattern = op.path.strip("/").split("/")
        if len(pattern) != len(parts):
            continue
        got: dict[str, str] = {}
        for want, part in zip(pattern, parts, strict=True):
            if want.startswith("{"):
                got[want[1:-1]] = part
            elif want != part:
                break
        else:  # no two patterns overlap: every hit has the same parameters
            hits.append(op)
            params = got
    return (hits, params) if hits else None


@dataclass
class _Request:
    double: StageHost
    params: dict[str, str]
    query: str
    headers: Mapping[str, str]
    body: bytes

    def json(self, *, optional: bool = False) -> dict[str, Any]:
        """The body as a JSON object (``{}`` for an empty body when ``optional``)."""
        if not self.body.strip():
            if optional:
                return {}
            raise ControlError(400, "the body is empty: send a JSON object", "body")
        try:
            data = _decode(self.body)
        except (msgspec.DecodeError, RecursionError) as error:
            raise ControlError(400, f"the body is not valid JSON ({error})", "body") from None
        if not isinstance(data, dict):
            raise ControlError(
                400, f"the body must be a JSON object, got {type(data).__name__}", "body"
            )
        return data

    def stage(self) -> tuple[str, StageHost]:
        stage_id = self.params["id"]
        stage = self.double.stages.get(stage_id)
        if stage is None:
            raise ControlError(
                404,
                f"no stage {stage_id!r} (it was never made, or was deleted); the live stages: "
                f"{', '.join(self.double.stages) or 'none'}",
                "path.id",
            )
        return stage_id, stage

    def base(self) -> str | None:
        host = self.headers.get("host")
        return f"http://{host}" if host and "/" not in host and " " not in host else None

    def query_value(self, name: str) -> str | None:
        try:
            values = parse_qs(self.query, strict_parsing=bool(self.query))
        except ValueError:
            raise ControlError(
                400, f"the query {self.query!r} is not name=value pairs", "query"
            ) from None
        found = values.get(name)
        return found[-1] if found else None


# --- making stages ---------------------------------------------------------------------------

_lock = threading.Lock()


def _script_from(data: Mapping[str, Any]) -> Script:
    """The script a stage's JSON asks for (``scenario`` + ``params``, or ``script``)."""
    scenario = data.get("scenario")
    script = data.get("script")
    params = data.get("params")
    if (scenario is None) == (script is None):
        raise ControlError(
            400,
            "give exactly one of 'scenario' (a catalog name, with 'params') or 'script' (a "
            "script as a JSON object, or TOML text)",
            "body",
        )
    if params is not None and scenario is None:
        raise ControlError(400, "'params' go with a 'scenario'", "body.params")
    if scenario is not None:
        from stuntset import scenarios  # the catalog loads when first named

        if not isinstance(scenario, str):
            raise ControlError(400, f"expected a scenario name, got {scenario!r}", "body.scenario")
        if params is not None and not isinstance(params, dict):
            raise ControlError(400, f"expected a JSON object, got {params!r}", "body.params")
        try:
            scenarios.get(scenario)
        except UnknownScenario as error:
            raise ControlError(404, str(error), "body.scenario") from None
        try:
            keywords = scenarios.coerce_params(scenario, params or {}, where="body.params")
            return scenarios.build(scenario, **keywords)
        except StuntsetError as error:
            where = str(error).split(":", 1)[0] if str(error).startswith("body.") else "body.params"
            raise ControlError(400, str(error), where) from None
    try:
        if isinstance(script, str):
            return loads_script(script, format="toml", source="body.script")
        if isinstance(script, dict):
            return loads_script(msgspec.json.encode(script), format="json", source="body.script")
    except StuntsetError as error:
        raise ControlError(400, str(error), "body.script") from None
    raise ControlError(
        400, f"expected a JSON object or TOML text, got {type(script).__name__}", "body.script"
    )


def _new_stage(request: _Request, data: dict[str, Any], stage_id: str | None) -> StageHost:
    unknown = [key for key in data if key not in _STAGE_FIELDS]
    if unknown:
        raise ControlError(
            400,
            f"unknown field {unknown[0]!r} (a stage takes {', '.join(_STAGE_FIELDS)})",
            f"body.{unknown[0]}",
        )
    cycle = data.get("cycle", False)
    if not isinstance(cycle, bool):
        raise ControlError(400, f"expected true or false, got {cycle!r}", "body.cycle")
    script = _script_from(data)
    try:
        return request.double.new_stage(script, cycle=cycle)
    except StuntsetError as error:  # a step no model wire renders (spawn_missing)
        where = "body.script" if "script" in data else "body.scenario"
        raise ControlError(400, str(error), where) from None


def _check_id(stage_id: object, where: str) -> str:
    if not isinstance(stage_id, str) or _ID.fullmatch(stage_id) is None:
        raise ControlError(
            400,
            f"stage id {stage_id!r}: use 1 to 64 letters, digits, '.', '_' or '-' (not "
            f"starting with '.', '_' or '-')",
            where,
        )
    return stage_id


def _describe(request: _Request, stage_id: str, stage: StageHost) -> dict[str, Any]:
    base = request.base()
    paths = {api.name: f"{STAGE_PREFIX}{stage_id}{api.client_path}" for api in API_PROVIDERS}
    return {
        "id": stage_id,
        "script": stage.script.label(),
        "turns": len(stage.script.turns),
        "cycle": stage.cycle,
        "requests": stage.journal.count,
        "unused": stage.unused(),
        "unanswered": stage.unanswered,
        "paths": paths,
        "urls": {name: base + path for name, path in paths.items()} if base else None,
        "header": {STAGE_HEADER: stage_id},
    }


def _create_stage(request: _Request) -> tuple[int, Any]:
    data = request.json()
    given = data.get("id")
    stage_id = None if given is None else _check_id(given, "body.id")
    stage = _new_stage(request, data, stage_id)
    stages = request.double.stages
    with _lock:
        if stage_id is None:
            number = len(stages) + 1
            while f"stage-{number}" in stages:
                number += 1
            stage_id = f"stage-{number}"
        elif stage_id in stages:
            raise ControlError(
                409,
                f"stage {stage_id!r} exists already: PUT {CONTROL_PREFIX}/stages/{stage_id} "
                f"replaces it, DELETE deletes it",
                "body.id",
            )
        _check_room(stages)
        stages[stage_id] = stage
    return 201, _describe(request, stage_id, stage)


def _check_room(stages: dict[str, StageHost]) -> None:
    if len(stages) >= MAX_STAGES:
        raise ControlError(
            409,
            f"this server holds {MAX_STAGES} stages already: delete the ones you are done "
            f"with (DELETE {CONTROL_PREFIX}/stages/<id>)",
            "path",
        )


def _put_stage(request: _Request) -> tuple[int, Any]:
    stage_id = _check_id(request.params["id"], "path.id")
    data = request.json()
    if "id" in data and data["id"] != stage_id:
        raise ControlError(
            400, f"the body's id {data['id']!r} is not the path's {stage_id!r}", "body.id"
        )
    data.pop("id", None)
    stage = _new_stage(request, data, stage_id)
    stages = request.double.stages
    with _lock:
        made = stage_id not in stages
        if made:
            _check_room(stages)
        stages[stage_id] = stage
    return (201 if made else 200), _describe(request, stage_id, stage)


# --- reading and changing stages -------------------------------------------------------------


def _openapi(request: _Request) -> tuple[int, Any]:
    from ._openapi import openapi_document

    return 200, openapi_document(ROUTES, MAX_STAGES)


def _list_scenarios(request: _Request) -> tuple[int, Any]:
    from stuntset import scenarios

    return 200, {
        "scenarios": [
            {
                "name": s.name,
                "description": s.description,
                "fault": s.fault,
                "params": {
                    key: {"type": kind, "default": default}
                    for key, (kind, default) in scenarios.parameter_kinds(s.name).items()
                },
            }
            for s in scenarios.all()
        ]
    }


def _reset_scenarios(request: _Request) -> tuple[int, Any]:
    return 200, {"reset": request.double.reset_scenarios()}


def _list_stages(request: _Request) -> tuple[int, Any]:
    return 200, {"stages": list(request.double.stages)}


def _get_stage(request: _Request) -> tuple[int, Any]:
    stage_id, stage = request.stage()
    return 200, _describe(request, stage_id, stage)


def _delete_stage(request: _Request) -> tuple[int, Any]:
    stage_id, stage = request.stage()
    with _lock:
        request.double.stages.pop(stage_id, None)
    return 200, {
        "id": stage_id,
        "deleted": True,
        "requests": stage.journal.count,
        "unused": stage.unused(),
        "unanswered": stage.unanswered,
    }


def _get_journal(request: _Request) -> tuple[int, Any]:
    _, stage = request.stage()
    after = request.query_value("after")
    bound = -1
    if after is not None:
        try:
            bound = int(after)
        except ValueError:
            raise ControlError(
                400, f"after={after!r}: expected an entry index (an integer)", "query.after"
            ) from None
    entries = [msgspec.to_builtins(e) for e in stage.journal.entries() if e.index > bound]
    return 200, {"count": stage.journal.count, "entries": entries}


def _get_unused(request: _Request) -> tuple[int, Any]:
    _, stage = request.stage()
    return 200, {"unused": stage.unused(), "unanswered": stage.unanswered}


def _reset_stage(request: _Request) -> tuple[int, Any]:
    stage_id, stage = request.stage()
    stage.reset()
    return 200, _describe(request, stage_id, stage)


def _verify_stage(request: _Request) -> tuple[int, Any]:
    _, stage = request.stage()
    data = request.json(optional=True)
    unknown = [key for key in data if key != "allow_unused_turns"]
    if unknown:
        raise ControlError(
            400,
            f"unknown field {unknown[0]!r} (verify takes allow_unused_turns)",
            f"body.{unknown[0]}",
        )
    allow = data.get("allow_unused_turns", False)
    if not isinstance(allow, bool) and not (
        isinstance(allow, list) and all(isinstance(name, str) for name in allow)
    ):
        raise ControlError(
            400,
            f"expected true, false or a list of turn names, got {allow!r}",
            "body.allow_unused_turns",
        )
    try:
        stage.verify(allow_unused_turns=allow)
    except HarnessFailure as failure:
        return 200, {"ok": False, "failure": type(failure).__name__, "message": str(failure)}
    return 200, {"ok": True, "failure": None, "message": None}


def _get_verdicts(request: _Request) -> tuple[int, Any]:
    request.stage()
    raise ControlError(501, "resilience verdicts do not exist yet in this version", "path")


_HANDLERS: dict[str, Callable[[_Request], tuple[int, Any]]] = {
    "openapi": _openapi,
    "list_scenarios": _list_scenarios,
    "reset_scenarios": _reset_scenarios,
    "list_stages": _list_stages,
    "create_stage": _create_stage,
    "get_stage": _get_stage,
    "put_stage": _put_stage,
    "delete_stage": _delete_stage,
    "get_journal": _get_journal,
    "get_unused": _get_unused,
    "reset_stage": _reset_stage,
    "verify_stage": _verify_stage,
    "get_verdicts": _get_verdicts,
}
