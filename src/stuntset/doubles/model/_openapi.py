"""The OpenAPI 3.1 document of the control API (``GET /_stuntset/openapi.json``), made from
``control.ROUTES`` (passed in) and the schemas below: a route added to ``ROUTES`` without its
shape here fails ``tests/unit/doubles/model/test_model_control_openapi.py``."""

from __future__ import annotations

import functools
from typing import Any

from ._prefixes import CONTROL_PREFIX, STAGE_HEADER

__all__ = ["openapi_document"]


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


_STRINGS = {"type": "array", "items": {"type": "string"}}

SCHEMAS: dict[str, Any] = {
    "Error": {
        "type": "object",
        "required": ["error"],
        "properties": {
            "error": {
                "type": "object",
                "required": ["status", "message", "where"],
                "properties": {
                    "status": {"type": "integer"},
                    "message": {"type": "string"},
                    "where": {
                        "type": "string",
                        "description": "The place: body, body.params.failures, path.id, query.after…",
                    },
                },
            }
        },
    },
    "StageRequest": {
        "type": "object",
        "additionalProperties": False,
        "description": "Exactly one of scenario (with params) or script.",
        "properties": {
            "id": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"},
            "scenario": {"type": "string", "description": "A catalog scenario name."},
            "params": {
                "type": "object",
                "description": "The scenario's parameters (GET /_stuntset/scenarios lists them).",
            },
            "script": {
                "description": "A script: the JSON script format as an object, or TOML text.",
                "oneOf": [{"type": "object"}, {"type": "string"}],
            },
            "cycle": {
                "type": "boolean",
                "default": False,
                "description": "Start the script over when its turns run out.",
            },
        },
    },
    "Stage": {
        "type": "object",
        "required": ["id", "script", "turns", "cycle", "requests", "unused", "unanswered"],
        "properties": {
            "id": {"type": "string"},
            "script": {"type": "string"},
            "turns": {"type": "integer"},
            "cycle": {"type": "boolean"},
            "requests": {"type": "integer"},
            "unused": _STRINGS,
            "unanswered": _STRINGS,
            "paths": {
                "type": "object",
                "description": "Base paths for each provider's client (openai, anthropic, gemini).",
                "additionalProperties": {"type": "string"},
            },
            "urls": {
                "type": ["object", "null"],
                "description": "The same as URLs on this server (from the Host header).",
                "additionalProperties": {"type": "string"},
            },
            "header": {
                "type": "object",
                "description": f"The header that addresses the stage instead ({STAGE_HEADER}).",
                "additionalProperties": {"type": "string"},
            },
        },
    },
    "Deleted": {
        "type": "object",
        "required": ["id", "deleted", "requests", "unused", "unanswered"],
        "properties": {
            "id": {"type": "string"},
            "deleted": {"const": True},
            "requests": {"type": "integer"},
            "unused": _STRINGS,
            "unanswered": _STRINGS,
        },
    },
    "Stages": {
        "type": "object",
        "required": ["stages"],
        "properties": {"stages": _STRINGS},
    },
    "JournalEntry": {
        "type": "object",
        "required": ["index", "method", "path", "headers"],
        "properties": {
            "index": {"type": "integer"},
            "method": {"type": "string"},
            "path": {"type": "string", "description": "The API path (/v1/chat/completions)."},
            "query": {"type": "string"},
            "headers": {"type": "object", "additionalProperties": {"type": "string"}},
            "body": {"description": "The parsed JSON body (or its text)."},
            "wire": {"type": ["string", "null"]},
            "turn": {"type": ["integer", "null"]},
            "status": {"type": ["integer", "null"]},
            "scenario": {"type": ["string", "null"]},
        },
    },
    "Journal": {
        "type": "object",
        "required": ["count", "entries"],
        "properties": {
            "count": {"type": "integer", "description": "Requests received in all."},
            "entries": {"type": "array", "items": _ref("JournalEntry")},
        },
    },
    "Unused": {
        "type": "object",
        "required": ["unused", "unanswered"],
        "properties": {"unused": _STRINGS, "unanswered": _STRINGS},
    },
    "VerifyRequest": {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "allow_unused_turns": {
                "oneOf": [{"type": "boolean"}, _STRINGS],
                "default": False,
            }
        },
    },
    "Verified": {
        "type": "object",
        "required": ["ok", "failure", "message"],
        "properties": {
            "ok": {"type": "boolean"},
            "failure": {"type": ["string", "null"], "description": "UnusedTurns, ScriptExhausted"},
            "message": {"type": ["string", "null"]},
        },
    },
    "Scenarios": {
        "type": "object",
        "required": ["scenarios"],
        "properties": {
            "scenarios": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["name", "description", "fault", "params"],
                    "properties": {
                        "name": {"type": "string"},
                        "description": {"type": "string"},
                        "fault": {"type": "boolean"},
                        "params": {
                            "type": "object",
                            "additionalProperties": {
                                "type": "object",
                                "required": ["type", "default"],
                                "properties": {"type": {"type": "string"}, "default": {}},
                            },
                        },
                    },
                },
            }
        },
    },
    "Reset": {
        "type": "object",
        "required": ["reset"],
        "properties": {"reset": {"type": "integer"}},
    },
    "OpenAPI": {"type": "object", "required": ["openapi", "paths"]},
}

#: Per route: (request body schema or None, response schema, the error statuses it answers).
_SHAPES: dict[str, tuple[str | None, str, tuple[int, ...]]] = {
    "openapi": (None, "OpenAPI", ()),
    "list_scenarios": (None, "Scenarios", ()),
    "reset_scenarios": (None, "Reset", ()),
    "list_stages": (None, "Stages", ()),
    "create_stage": ("StageRequest", "Stage", (400, 404, 409)),
    "get_stage": (None, "Stage", (404,)),
    "put_stage": ("StageRequest", "Stage", (400, 404, 409)),
    "delete_stage": (None, "Deleted", (404,)),
    "get_journal": (None, "Journal", (400, 404)),
    "get_unused": (None, "Unused", (404,)),
    "reset_stage": (None, "Stage", (404,)),
    "verify_stage": ("VerifyRequest", "Verified", (400, 404)),
    "get_verdicts": (None, "Error", (404, 501)),
}

_REASONS = {
    400: "Bad input, the place named in error.where",
    404: "No such stage, scenario or route",
    409: "The stage exists already, or the server holds too many",
    501: "Not implemented in this version",
}


def _operation(op: Any) -> dict[str, Any]:
    body, answer, errors = _SHAPES[op.name]
    success = 501 if op.name == "get_verdicts" else op.status
    responses: dict[str, Any] = {}
    if op.name != "get_verdicts":
        responses[str(success)] = {
            "description": op.summary,
            "content": {"application/json": {"schema": _ref(answer)}},
        }
        if op.name == "put_stage":
            responses["201"] = {
                "description": "The stage was made",
                "content": {"application/json": {"schema": _ref(answer)}},
            }
    for status in errors:
        responses[str(status)] = {
            "description": _REASONS[status],
            "content": {"application/json": {"schema": _ref("Error")}},
        }
    operation: dict[str, Any] = {
        "operationId": op.name,
        "summary": op.summary,
        "responses": responses,
    }
    if "{id}" in op.path:
        operation["parameters"] = [
            {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
        ]
    if op.name == "get_journal":
        operation["parameters"].append(
            {
                "name": "after",
                "in": "query",
                "required": False,
                "description": "Only the entries whose index is above this one.",
                "schema": {"type": "integer"},
            }
        )
    if body is not None:
        operation["requestBody"] = {
            "required": op.name != "verify_stage",
            "content": {"application/json": {"schema": _ref(body)}},
        }
    return operation


#: The control API's own version (its routes and shapes), not the package's.
API_VERSION = "1.0"


@functools.cache
def openapi_document(routes: tuple[Any, ...], max_stages: int) -> dict[str, Any]:
    """The document of ``routes`` (``control.ROUTES``; made once)."""
    paths: dict[str, dict[str, Any]] = {}
    for op in routes:
        paths.setdefault(CONTROL_PREFIX + op.path, {})[op.method.lower()] = _operation(op)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "stuntset control API",
            "version": API_VERSION,
            "description": (
                "Stages on a stuntset model double: each has its own script, turn positions "
                "and journal. Send a stage's model requests under /stages/{id}/ (e.g. "
                f"/stages/t1/openai/v1/chat/completions) or with the {STAGE_HEADER} header. "
                f"A server holds at most {max_stages} stages."
            ),
        },
        "paths": paths,
        "components": {"schemas": SCHEMAS},
    }
