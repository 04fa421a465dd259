"""Bench cases, by name. Each maker builds its case lazily (imports happen when it runs)."""

from __future__ import annotations

from collections.abc import Callable

from bench.runner import Case

from . import cassettes, cli_claude, cli_codex, explain, log, model, scaling, serve_load, suite

CASES: list[tuple[str, Callable[[], Case]]] = [
    ("openai_inprocess", model.openai_inprocess),
    ("openai_loopback", model.openai_loopback),
    ("anthropic_create", model.anthropic_create),
    ("anthropic_stream", model.anthropic_stream),
    ("pydantic_ai", model.pydantic_ai_agent),
    ("serve_load_1", serve_load.serve_load_1),
    ("serve_load_50", serve_load.serve_load_50),
    ("serve_load_200", serve_load.serve_load_200),
    ("serve_stream_1", serve_load.serve_stream_1),
    ("serve_stream_100", serve_load.serve_stream_100),
    ("serve_stream_1000", serve_load.serve_stream_1000),
    ("plugin_overhead", suite.plugin_overhead),
    ("test_suite", suite.test_suite),
    ("claude_spawn", cli_claude.claude_spawn),
    ("claude_sdk_query", cli_claude.claude_sdk_query),
    ("codex_spawn", cli_codex.codex_spawn),
    ("log_append", log.log_append),
    ("log_replay", log.log_replay),
    ("log_subscribe_latency", log.log_subscribe_latency),
    ("log_idle_subscriptions", log.log_idle_subscriptions),
    ("replay_match", cassettes.replay_match),
    ("secret_scan", cassettes.secret_scan),
    ("cassette_write", cassettes.cassette_write),
    ("explain_overhead", explain.explain_overhead),
    ("project_scaling", scaling.project_scaling),
    ("cassette_scaling", scaling.cassette_scaling),
    ("spawn_scaling", scaling.spawn_scaling),
    ("server_teardown", scaling.server_teardown),
    ("leak_check", scaling.leak_check),
]
