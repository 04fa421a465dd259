"""The control API's OpenAPI document: well-formed (OpenAPI 3.1's outline, every schema a
valid JSON Schema 2020-12, every ``$ref`` resolving), one operation per route of
``control.ROUTES`` and no other, and every documented operation answered by the server with a
body its documented schema accepts. The checker is proven to fail on a doctored document."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema

from stuntset.doubles.model.control import ROUTES
from stuntset.doubles.model.double import CONTROL_PREFIX, ModelDouble

_METHODS = {"get", "put", "post", "delete", "patch"}
#: A request body each operation accepts, to call it for real.
_BODIES: dict[str, Any] = {
    "create_stage": {"scenario": "happy_path"},
    "put_stage": {"scenario": "multi_turn"},
    "verify_stage": {"allow_unused_turns": True},
}


def _document(double: ModelDouble) -> dict[str, Any]:
    reply = double.handle("GET", f"{CONTROL_PREFIX}/openapi.json", "", {}, b"")
    assert reply.status == 200
    data: dict[str, Any] = json.loads(b"".join(a for a in reply.actions if isinstance(a, bytes)))
    return data


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [r for value in node.values() for r in _refs(value)]
    if isinstance(node, list):
        return [r for value in node for r in _refs(value)]
    return []


def check_openapi(doc: dict[str, Any], make_double: Any) -> list[str]:
    """What is wrong with ``doc`` as the control API's document (empty: nothing)."""
    problems: list[str] = []
    if doc.get("openapi") != "3.1.0":
        problems.append(f"openapi is {doc.get('openapi')!r}, not 3.1.0")
    info = doc.get("info", {})
    if not (isinstance(info.get("title"), str) and isinstance(info.get("version"), str)):
        problems.append("info needs a title and a version")
    schemas = doc.get("components", {}).get("schemas", {})
    for name, schema in schemas.items():
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as error:
            problems.append(f"schema {name}: {error.message}")
    for ref in _refs(doc):
        if not (ref.startswith("#/components/schemas/") and ref.rsplit("/", 1)[1] in schemas):
            problems.append(f"$ref {ref} resolves to nothing")
    documented = {
        (method.upper(), path)
        for path, item in doc.get("paths", {}).items()
        for method in item
        if method in _METHODS
    }
    routed = {(op.method, CONTROL_PREFIX + op.path) for op in ROUTES}
    problems += [f"documented but not routed: {m} {p}" for m, p in sorted(documented - routed)]
    problems += [f"routed but not documented: {m} {p}" for m, p in sorted(routed - documented)]
    ids = [op["operationId"] for item in doc.get("paths", {}).values() for op in item.values()]
    if len(ids) != len(set(ids)):
        problems.append("operationIds repeat")
    if any(p.startswith(("schema ", "$ref ")) for p in problems):
        return problems  # answers cannot be checked against broken schemas
    for path, item in doc.get("paths", {}).items():
        for method, operation in item.items():
            problems += _call(doc, path, method, operation, make_double())
    return problems


def _call(
    doc: dict[str, Any], path: str, method: str, operation: dict[str, Any], double: ModelDouble
) -> list[str]:
    """Call one documented operation on a double with a stage ``s`` and check its answer."""
    double.handle(
        "PUT", f"{CONTROL_PREFIX}/stages/s", "", {}, json.dumps({"scenario": "happy_path"}).encode()
    )
    body = _BODIES.get(operation.get("operationId", ""))
    raw = json.dumps(body).encode() if body is not None else b""
    reply = double.handle(method.upper(), path.replace("{id}", "s"), "", {"host": "h"}, raw)
    status = str(reply.status)
    where = f"{method.upper()} {path}"
    answer = json.loads(b"".join(a for a in reply.actions if isinstance(a, bytes)))
    if status not in operation.get("responses", {}):
        return [f"{where}: answered {status}, not documented ({answer})"]
    content = operation["responses"][status].get("content", {}).get("application/json")
    if content is None:
        return [f"{where}: response {status} documents no JSON body"]
    schema = {**content["schema"], "components": doc.get("components", {})}
    try:
        jsonschema.validate(answer, schema, cls=jsonschema.Draft202012Validator)
    except jsonschema.ValidationError as error:
        return [f"{where}: the {status} body does not match its schema: {error.message}"]
    return []


def test_the_document_describes_every_route_and_every_answer() -> None:
    doc = _document(ModelDouble())
    assert check_openapi(doc, ModelDouble) == []
    assert len(doc["paths"]) >= 8


def test_the_checker_fails_on_a_route_that_is_not_served() -> None:
    doc = copy.deepcopy(_document(ModelDouble()))
    doc["paths"][f"{CONTROL_PREFIX}/ghost"] = {
        "get": {"operationId": "ghost", "responses": {"200": {"description": "x"}}}
    }
    problems = check_openapi(doc, ModelDouble)
    assert f"documented but not routed: GET {CONTROL_PREFIX}/ghost" in problems
    assert any("ghost: answered 404, not documented" in p for p in problems)


def test_the_checker_fails_on_a_missing_route_a_wrong_schema_or_a_bad_ref() -> None:
    doc = copy.deepcopy(_document(ModelDouble()))
    del doc["paths"][f"{CONTROL_PREFIX}/stages"]["post"]
    doc["components"]["schemas"]["Stage"]["required"].append("ghost")
    problems = check_openapi(doc, ModelDouble)
    assert f"routed but not documented: POST {CONTROL_PREFIX}/stages" in problems
    assert any("does not match its schema: 'ghost' is a required property" in p for p in problems)
    doc["components"]["schemas"]["Unused"] = {
        "type": "object",
        "properties": {"x": {"$ref": "#/x"}},
    }
    doc["components"]["schemas"]["Reset"] = {"type": 5}
    problems = check_openapi(doc, ModelDouble)
    assert "$ref #/x resolves to nothing" in problems
    assert any(p.startswith("schema Reset:") for p in problems)
