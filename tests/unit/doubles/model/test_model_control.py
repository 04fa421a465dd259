"""The control API (``/_stuntset/``): stages made from scripts and scenarios, addressed by path
prefix or header, their journals, unused turns, reset, verify and delete; catalog routes with
parameters and a reset; bad input answered with a JSON error naming the place."""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx
import openai
import pytest

from stuntset.doubles.model import StandIn
from stuntset.doubles.model.control import MAX_STAGES
from stuntset.doubles.model.double import ModelDouble
from stuntset.script import Script, Text

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def call(
    double: ModelDouble, method: str, path: str, body: Any = None, **headers: str
) -> tuple[int, Any]:
    """One request through ``double.handle`` (in-process: no server); ``path`` may end with
    its ``?query``."""
    raw = body if isinstance(body, bytes) else b"" if body is None else json.dumps(body).encode()
    path, _, query = path.partition("?")
    reply = double.handle(method, path, query, {"host": "h:1", **headers}, raw)
    data = b"".join(a for a in reply.actions if isinstance(a, bytes))
    return reply.status or 0, json.loads(data) if data else None


def chat_text(double: ModelDouble, path: str, **headers: str) -> str:
    status, body = call(double, "POST", path, CHAT, **headers)
    assert status == 200, body
    text: str = body["choices"][0]["message"]["content"]
    return text


def test_a_stage_from_a_scenario_with_params_plays_on_its_own() -> None:
    root = ModelDouble(Script.of([Text("root")]))
    status, made = call(
        root,
        "POST",
        "/_stuntset/stages",
        {"id": "t1", "scenario": "rate_limited", "params": {"failures": 2}},
    )
    assert status == 201
    assert made["paths"]["openai"] == "/stages/t1/openai/v1"
    assert made["urls"]["anthropic"] == "http://h:1/stages/t1/anthropic"
    assert made["header"] == {"x-stuntset-stage": "t1"}
    path = "/stages/t1/openai/v1/chat/completions"
    assert [call(root, "POST", path, CHAT)[0] for _ in range(3)] == [429, 429, 200]
    _, journal = call(root, "GET", "/_stuntset/stages/t1/journal")
    assert journal["count"] == 3
    assert [e["status"] for e in journal["entries"]] == [429, 429, 200]
    assert journal["entries"][0]["path"] == "/v1/chat/completions"
    _, later = call(root, "GET", "/_stuntset/stages/t1/journal")
    assert later == journal
    assert root.requests == []  # the root's journal never saw the stage's requests
    assert chat_text(root, "/openai/v1/chat/completions") == "root"


def test_a_stage_from_json_or_toml_and_by_header() -> None:
    root = ModelDouble()
    toml = '[[turns]]\nsteps = [{ text = "from toml" }]\n'
    assert call(root, "PUT", "/_stuntset/stages/a", {"script": toml})[0] == 201
    script = {"turns": [{"steps": [{"text": "from json"}]}]}
    assert call(root, "PUT", "/_stuntset/stages/b", {"script": script})[0] == 201
    assert (
        chat_text(root, "/openai/v1/chat/completions", **{"x-stuntset-stage": "a"}) == "from toml"
    )
    assert chat_text(root, "/stages/b/openai/v1/chat/completions") == "from json"
    # PUT again replaces: a fresh script, positions and journal
    assert call(root, "PUT", "/_stuntset/stages/b", {"script": script})[0] == 200
    assert call(root, "GET", "/_stuntset/stages/b")[1]["requests"] == 0
    assert call(root, "GET", "/_stuntset/stages")[1] == {"stages": ["a", "b"]}


def test_unused_verify_reset_and_delete() -> None:
    root = ModelDouble()
    _, made = call(root, "POST", "/_stuntset/stages", {"scenario": "multi_turn"})
    stage = made["id"]
    assert stage == "stage-1"
    base = f"/_stuntset/stages/{stage}"
    assert chat_text(root, f"/stages/{stage}/openai/v1/chat/completions") == "Answer number 1."
    _, unused = call(root, "GET", base + "/unused")
    assert len(unused["unused"]) == 2
    assert unused["unanswered"] == []
    _, verdict = call(root, "POST", base + "/verify")
    assert verdict["ok"] is False
    assert verdict["failure"] == "UnusedTurns"
    assert "allow_unused_turns" in verdict["message"]
    assert call(root, "POST", base + "/verify", {"allow_unused_turns": True})[1]["ok"] is True
    _, after = call(root, "POST", base + "/reset")
    assert after["requests"] == 0
    assert len(after["unused"]) == 3
    assert chat_text(root, f"/stages/{stage}/openai/v1/chat/completions") == "Answer number 1."
    _, gone = call(root, "DELETE", base)
    assert gone["deleted"] is True
    assert len(gone["unused"]) == 2
    status, error = call(root, "POST", f"/stages/{stage}/openai/v1/chat/completions", CHAT)
    assert status == 404
    assert f"no stage {stage!r}" in error["error"]["message"]
    assert call(root, "GET", base)[0] == 404


def test_a_stage_that_runs_out_reports_unanswered_requests() -> None:
    root = ModelDouble()
    call(root, "PUT", "/_stuntset/stages/s", {"scenario": "happy_path"})
    chat_text(root, "/stages/s/openai/v1/chat/completions")
    assert call(root, "POST", "/stages/s/openai/v1/chat/completions", CHAT)[0] == 500
    _, verdict = call(root, "POST", "/_stuntset/stages/s/verify")
    assert verdict["failure"] == "ScriptExhausted"
    root.verify()  # the root's own script is not affected


def test_cycle_starts_a_stage_over() -> None:
    root = ModelDouble()
    call(root, "PUT", "/_stuntset/stages/c", {"scenario": "happy_path", "cycle": True})
    for _ in range(3):
        chat_text(root, "/stages/c/openai/v1/chat/completions")


def test_scenario_routes_take_params_and_reset() -> None:
    root = ModelDouble()
    path = "/scenarios/rate_limited;failures=2/openai/v1/chat/completions"
    assert [call(root, "POST", path, CHAT)[0] for _ in range(2)] == [429, 429]
    assert call(root, "POST", "/_stuntset/scenarios/reset")[1] == {"reset": 1}
    assert call(root, "POST", path, CHAT)[0] == 429  # from the first turn again
    status, error = call(
        root, "POST", "/scenarios/rate_limited;failures=x/openai/v1/chat/completions", CHAT
    )
    assert status == 400
    assert "/scenarios/rate_limited.failures: 'x' is not an integer" in error["error"]["message"]
    assert call(root, "POST", "/scenarios/nope/openai/v1/chat/completions", CHAT)[0] == 404


def test_each_stage_has_its_own_scenario_routes() -> None:
    root = ModelDouble()
    for stage in ("a", "b"):
        call(root, "PUT", f"/_stuntset/stages/{stage}", {"scenario": "happy_path"})
    path = "/scenarios/rate_limited/openai/v1/chat/completions"
    assert call(root, "POST", "/stages/a" + path, CHAT)[0] == 429
    assert call(root, "POST", "/stages/b" + path, CHAT)[0] == 429  # b's own position
    assert call(root, "POST", "/stages/a" + path, CHAT)[0] == 200


def test_the_catalog_lists_parameters() -> None:
    _, listed = call(ModelDouble(), "GET", "/_stuntset/scenarios")
    rate = next(s for s in listed["scenarios"] if s["name"] == "rate_limited")
    assert rate["params"]["failures"] == {"type": "integer", "default": 1}
    assert rate["fault"] is True


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "where", "says"),
    [
        ("POST", "/_stuntset/stages", b"{", 400, "body", "not valid JSON"),
        ("POST", "/_stuntset/stages", b"", 400, "body", "the body is empty"),
        ("POST", "/_stuntset/stages", [1], 400, "body", "must be a JSON object"),
        ("POST", "/_stuntset/stages", b"[" * 100_000, 400, "body", "not valid JSON"),
        ("POST", "/_stuntset/stages", {}, 400, "body", "exactly one of"),
        ("POST", "/_stuntset/stages", {"scenario": "x", "script": "y"}, 400, "body", "exactly one"),
        ("POST", "/_stuntset/stages", {"scenario": "nope"}, 404, "body.scenario", "no scenario"),
        ("POST", "/_stuntset/stages", {"scenario": 3}, 400, "body.scenario", "scenario name"),
        (
            "POST",
            "/_stuntset/stages",
            {"scenario": "rate_limited", "params": {"failures": "2"}},
            400,
            "body.params.failures",
            "expected an integer",
        ),
        (
            "POST",
            "/_stuntset/stages",
            {"scenario": "rate_limited", "params": {"failures": 0}},
            400,
            "body.params",
            "times must be at least 1",
        ),
        (
            "POST",
            "/_stuntset/stages",
            {"scenario": "long_stream", "params": {"deltas": 10**12}},
            400,
            "body.params.deltas",
            "out of range",
        ),
        (
            "POST",
            "/_stuntset/stages",
            {"scenario": "rate_limited", "params": {"nope": 1}},
            400,
            "body.params.nope",
            "has no parameter 'nope'",
        ),
        (
            "POST",
            "/_stuntset/stages",
            {"scenario": "stuck", "params": [1]},
            400,
            "body.params",
            "object",
        ),
        ("POST", "/_stuntset/stages", {"script": "x = ["}, 400, "body.script", "not valid TOML"),
        ("POST", "/_stuntset/stages", {"script": 7}, 400, "body.script", "TOML text"),
        (
            "POST",
            "/_stuntset/stages",
            {"script": {"turns": [{"steps": [{"kind": "bogus"}]}]}},
            400,
            "body.script",
            "unknown step kind 'bogus'",
        ),
        ("POST", "/_stuntset/stages", {"params": {}, "script": "x"}, 400, "body.params", "go with"),
        (
            "POST",
            "/_stuntset/stages",
            {"id": "../x", "scenario": "stuck"},
            400,
            "body.id",
            "stage id",
        ),
        ("POST", "/_stuntset/stages", {"id": 5, "scenario": "stuck"}, 400, "body.id", "stage id"),
        (
            "POST",
            "/_stuntset/stages",
            {"scenario": "stuck", "cycle": 1},
            400,
            "body.cycle",
            "true or",
        ),
        (
            "POST",
            "/_stuntset/stages",
            {"scenario": "stuck", "x": 1},
            400,
            "body.x",
            "unknown field",
        ),
        ("PUT", "/_stuntset/stages/a", {"id": "b", "scenario": "stuck"}, 400, "body.id", "path's"),
        ("PUT", "/_stuntset/stages/-a", {"scenario": "stuck"}, 400, "path.id", "stage id"),
        ("GET", "/_stuntset/stages/none", None, 404, "path.id", "no stage 'none'"),
        ("GET", "/_stuntset/stages/none/journal", None, 404, "path.id", "no stage"),
        ("DELETE", "/_stuntset/stages", None, 405, "method", "takes GET, POST"),
        ("GET", "/_stuntset/nothing", None, 404, "path", "no control route"),
        ("GET", "/_stuntset/stages/a/b/c/d", None, 404, "path", "no control route"),
    ],
)
def test_bad_input_is_a_json_error_naming_the_place(
    method: str, path: str, body: Any, status: int, where: str, says: str
) -> None:
    got, error = call(ModelDouble(), method, path, body)
    assert got == status, error
    assert error["error"]["where"] == where
    assert error["error"]["status"] == status
    assert says in error["error"]["message"]


def test_a_scenario_no_model_wire_plays_is_refused_naming_it() -> None:
    status, error = call(ModelDouble(), "POST", "/_stuntset/stages", {"scenario": "spawn_missing"})
    assert status == 400
    assert error["error"]["where"] == "body.scenario"


def test_chosen_ids_skip_taken_ones_and_other_prefixes_are_not_routes() -> None:
    root = ModelDouble()
    call(root, "PUT", "/_stuntset/stages/stage-2", {"scenario": "happy_path"})
    made = [
        call(root, "POST", "/_stuntset/stages", {"scenario": "happy_path"})[1]["id"] for _ in "ab"
    ]
    assert made == ["stage-3", "stage-4"]  # two live stages already when the second is made
    assert call(root, "GET", "/_stuntsetx")[0] == 404
    assert call(root, "GET", "/_stuntset/stages/")[1] == {
        "stages": ["stage-2", "stage-3", "stage-4"]
    }


def test_bad_queries_and_verify_bodies() -> None:
    root = ModelDouble()
    call(root, "PUT", "/_stuntset/stages/a", {"scenario": "happy_path"})
    reply = root.handle("GET", "/_stuntset/stages/a/journal", "after=x", {}, b"")
    assert reply.status == 400
    assert root.handle("GET", "/_stuntset/stages/a/journal", "&&=", {}, b"").status == 400
    assert root.handle("GET", "/_stuntset/stages/a/journal", "after=0", {}, b"").status == 200
    for bad, where in (
        ({"allow_unused_turns": 3}, "body.allow_unused_turns"),
        ({"x": 1}, "body.x"),
    ):
        status, error = call(root, "POST", "/_stuntset/stages/a/verify", bad)
        assert (status, error["error"]["where"]) == (400, where)


def test_verdicts_are_not_implemented_yet() -> None:
    root = ModelDouble()
    call(root, "PUT", "/_stuntset/stages/a", {"scenario": "happy_path"})
    assert call(root, "GET", "/_stuntset/stages/a/verdicts")[0] == 501


def test_a_server_holds_a_bounded_number_of_stages() -> None:
    root = ModelDouble()
    for n in range(MAX_STAGES):
        root.stages[f"s{n}"] = root
    status, error = call(root, "POST", "/_stuntset/stages", {"scenario": "happy_path"})
    assert status == 409
    assert "delete the ones you are done with" in error["error"]["message"]


def test_a_stage_has_no_control_api_of_its_own() -> None:
    root = ModelDouble()
    call(root, "PUT", "/_stuntset/stages/a", {"scenario": "happy_path"})
    stage = root.stages["a"]
    assert not stage.control
    status, error = call(stage, "POST", "/stages/a/openai/v1/chat/completions", CHAT)
    assert status == 404
    assert "no stages" in error["error"]["message"]


# --- over loopback: the stand_in fixture's server, the fast lane, many threads ---------------


@pytest.mark.slow  # the real SDK's client and a loopback server: ≈ 0.5 s
def test_stages_over_loopback_by_prefix_and_header_with_the_real_sdk(stand_in: StandIn) -> None:
    stand_in.play(Script.of([Text("root")]))
    with httpx.Client(base_url=stand_in.base_url) as control:
        made = control.post("/_stuntset/stages", json={"id": "p", "scenario": "happy_path"}).json()
        control.put(
            "/_stuntset/stages/h", json={"scenario": "happy_path", "params": {"text": "hdr"}}
        )
    with openai.OpenAI(base_url=made["urls"]["openai"], api_key="k") as client:
        answer = client.chat.completions.create(**CHAT)  # the fast lane
        assert answer.choices[0].message.content == "Hello! How can I help you today?"
    with openai.OpenAI(
        base_url=stand_in.url("openai"), api_key="k", default_headers={"x-stuntset-stage": "h"}
    ) as client:
        assert client.chat.completions.create(**CHAT).choices[0].message.content == "hdr"
        with pytest.raises(openai.InternalServerError):  # h's one turn is used: a 500
            client.chat.completions.create(**CHAT, stream=True)
    with openai.OpenAI(base_url=stand_in.url("openai"), api_key="k") as client:
        assert client.chat.completions.create(**CHAT).choices[0].message.content == "root"
    assert [e.path for e in stand_in.requests] == ["/v1/chat/completions"]


@pytest.mark.slow  # 16 threads of 5 requests over loopback: ≈ 1.5 s
def test_concurrent_stages_never_see_each_other(stand_in: StandIn) -> None:
    threads, rounds = 16, 5
    errors: list[BaseException] = []
    with httpx.Client(base_url=stand_in.base_url) as control:
        for n in range(threads):
            script = {
                "turns": [{"steps": [{"text": f"stage {n} turn {i}"}]} for i in range(rounds)]
            }
            assert (
                control.put(f"/_stuntset/stages/t{n}", json={"script": script}).status_code == 201
            )

    def run(n: int) -> None:
        try:
            with httpx.Client(base_url=f"{stand_in.base_url}/stages/t{n}/openai/v1") as client:
                for i in range(rounds):
                    body = client.post("/chat/completions", json=CHAT).json()
                    assert body["choices"][0]["message"]["content"] == f"stage {n} turn {i}"
        except BaseException as error:  # reported below, in the test's thread
            errors.append(error)

    workers = [threading.Thread(target=run, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
    assert errors == []
    with httpx.Client(base_url=stand_in.base_url) as control:
        for n in range(threads):
            journal = control.get(f"/_stuntset/stages/t{n}/journal").json()
            assert [e["turn"] for e in journal["entries"]] == list(range(rounds))
            assert control.post(f"/_stuntset/stages/t{n}/verify").json()["ok"] is True
    assert stand_in.requests == []


def test_the_fast_lane_hands_a_stage_its_own_requests() -> None:
    root = ModelDouble(Script.of([Text("root")]))
    call(root, "PUT", "/_stuntset/stages/a", {"scenario": "happy_path", "cycle": True})
    headers = [(b"host", b"h"), (b"content-type", b"application/json")]
    body = json.dumps(CHAT).encode()
    answer = root.lane(b"/stages/a/openai/v1/chat/completions", b"", headers, body)
    assert isinstance(answer, tuple)  # written whole, on the lane
    assert b"Hello! How can I help you today?" in answer[1]
    assert [e.turn for e in root.stages["a"].requests] == [0]
    assert root.requests == []
    missing = root.lane(b"/stages/zz/openai/v1/chat/completions", b"", headers, body)
    assert not isinstance(missing, tuple)
    assert missing.status == 404
    assert [e.status for e in root.requests] == [404]  # the root got it, and answered it


def test_a_header_naming_no_stage_is_the_providers_404() -> None:
    root = ModelDouble(Script.of([Text("root")]))
    status, error = call(root, "POST", "/anthropic/v1/messages", {"model": "c", "max_tokens": 5,
        "messages": [{"role": "user", "content": "x"}]}, **{"x-stuntset-stage": "gone"})  # fmt: skip
    assert status == 404
    assert error["type"] == "error"  # Anthropic's shape
    assert "no stage 'gone'" in error["error"]["message"]
    assert chat_text(root, "/openai/v1/chat/completions") == "root"


def test_every_advertised_base_path_reaches_the_stage() -> None:
    root = ModelDouble()
    _, made = call(root, "PUT", "/_stuntset/stages/w", {"scenario": "happy_path", "cycle": True})
    requests = {
        "openai": ("/chat/completions", CHAT),
        "anthropic": (
            "/v1/messages",
            {"model": "c", "max_tokens": 5, "messages": CHAT["messages"]},
        ),
        "gemini": (
            "v1beta/models/gemini-2.5-flash:generateContent",
            {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
        ),
        "bedrock": (
            "/model/anthropic.claude-x/converse",
            {"messages": [{"role": "user", "content": [{"text": "hi"}]}]},
        ),
        "azure": ("/openai/deployments/d/chat/completions?api-version=2024-10-21", CHAT),
        "ollama": ("/api/chat", {"model": "m", "messages": CHAT["messages"], "stream": False}),
        "vertex": (
            "/v1/projects/p/locations/l/publishers/anthropic/models/claude-x:rawPredict",
            {
                "anthropic_version": "vertex-2023-10-16",
                "max_tokens": 5,
                "messages": CHAT["messages"],
            },
        ),
    }
    assert set(made["paths"]) == set(requests)
    for provider, (tail, body) in requests.items():
        status, answer = call(root, "POST", made["paths"][provider] + tail, body)
        assert status == 200, (provider, answer)
    assert [e.wire for e in root.stages["w"].requests] == [
        "openai-chat",
        "anthropic-messages",
        "gemini",
        "bedrock-converse",
        "azure-openai-chat",
        "ollama-api",
        "vertex-anthropic",
    ]
