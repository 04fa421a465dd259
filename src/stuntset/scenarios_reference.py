"""The catalog reference, generated from the catalog itself so it cannot drift.

For each scenario: what it is, its parameters, the tools and texts its script uses (read from
the built script's steps), and what each wire and each CLI shows for it, computed by playing
the scenario's default script through the doubles with stuntset's minimal bundled clients (the
same ones ``stuntset demo`` uses) and by asking each wire's codec how it renders the script's
HTTP faults (status and error type). Nothing here is written by hand about a scenario.

``show(name)`` is what ``stuntset scenarios --show NAME`` prints; ``catalog_markdown()`` is
``docs/catalog.md`` (regenerate it with ``python -m stuntset.scenarios_reference > docs/catalog.md``).

In a checkout of the project, each section also has the Node columns: what the real npm SDKs
saw in the project's Node tier (``tests/node/expected.json``, which that tier checks against
every run, and the SDK versions locked in ``tests/node/package.json``).
"""

from __future__ import annotations

import inspect
import json
import tempfile
from pathlib import Path
from typing import Any

from stuntset import scenarios
from stuntset.script import (
    AuthExpired,
    Exit,
    HttpError,
    InputRequest,
    Overloaded,
    RateLimit,
    Reasoning,
    Script,
    SpawnFailure,
    Step,
    Text,
    ToolCall,
    ToolResult,
    Usage,
    kind_of,
)
from stuntset.wires import WIRES

__all__ = ["REGENERATE", "catalog_markdown", "drift", "show"]

#: The command that rewrites ``docs/catalog.md``.
REGENERATE = "python -m stuntset.scenarios_reference > docs/catalog.md"

#: The Node tier's outcomes and the locked SDK versions (present in a checkout only).
NODE_TIER = Path(__file__).resolve().parents[2] / "tests" / "node"
#: Each Node client: its npm package and how the tier drives it.
_NODE_CLIENTS = {
    "openai-node": ("openai", "streamed Chat Completions on a stage"),
    "anthropic-sdk-typescript": ("@anthropic-ai/sdk", "streamed Messages on a stage"),
    "claude-agent-sdk-ts": ("@anthropic-ai/claude-agent-sdk", "`query()` over the fake `claude`"),
    "codex-sdk-ts": ("@openai/codex-sdk", "`thread.run()` over the fake `codex`"),
}

#: Each model wire's title, in the registry's order.
_WIRES = {wire.name: wire.title for wire in WIRES}
_HTTP_FAULTS = (HttpError, AuthExpired, RateLimit, Overloaded)
_LONG = 60


def _quote(text: str) -> str:
    if len(text) > _LONG:
        return f'{json.dumps(text[:_LONG])[:-1]}…" ({len(text)} chars)'
    return json.dumps(text)


def _step(step: Step) -> str:
    if isinstance(step, Text | Reasoning):
        return f"{kind_of(step)} {_quote(step.text)}"
    if isinstance(step, ToolCall):
        return f"tool_call `{step.name}` {json.dumps(step.input, sort_keys=True)}"
    if isinstance(step, ToolResult):
        return f"tool_result {_quote(str(step.output))}"
    if isinstance(step, InputRequest):
        return f"input_request {_quote(step.prompt)}"
    if isinstance(step, Usage):
        return f"usage {step.input_tokens} in / {step.output_tokens} out"
    if isinstance(step, Exit):
        return f"exit {step.code}" + (f" (stderr {_quote(step.stderr)})" if step.stderr else "")
    if isinstance(step, SpawnFailure):
        return f"spawn_failure {_quote(step.message)}"
    if isinstance(step, RateLimit | Overloaded):
        return f"{kind_of(step)} (retry-after-ms {step.retry_after_ms})"
    return kind_of(step)


def _parameters(entry: scenarios.Scenario) -> list[str]:
    out = []
    for parameter in inspect.signature(entry.build).parameters.values():
        annotation = parameter.annotation
        kind = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
        out.append(f"`{parameter.name}: {kind} = {parameter.default!r}`")
    return out


def _tools(script: Script) -> list[str]:
    names = [s.name for t in script.turns for s in t.steps if isinstance(s, ToolCall)]
    return list(dict.fromkeys(names))


def _http_errors(script: Script) -> dict[str, str]:
    """Per wire, how the script's HTTP faults are rendered: ``HTTP 429 rate_limit_error``."""
    faults = [s for t in script.turns for s in t.steps if isinstance(s, _HTTP_FAULTS)]
    out: dict[str, str] = {}
    for wire in WIRES:
        path, _, query = wire.client.path.partition("?")
        codec = wire.codec_for(path, query)
        assert codec is not None, f"{wire.name}: its demo path {path} routes to no codec"
        seen = []
        for step in faults:
            fault = codec.status_fault(step)
            body: Any = codec.error_body(fault.status, fault.message, fault.error_type)
            error = body.get("error", {}) if isinstance(body, dict) else {}
            if isinstance(error, str):  # Ollama's error is its text
                seen.append(f"HTTP {fault.status} {_quote(error)}")
                continue
            named = isinstance(error.get("code"), str)  # Gemini's code is the HTTP status
            code = f" (code `{error['code']}`)" if named and error["code"] else ""
            # Gemini says ``status``; Bedrock names it in a header, not the body
            kind = error.get("type") or error.get("status") or fault.error_type
            named_kind = f" `{kind}`" if kind else ""  # Azure's gateway sends a code only
            seen.append(f"HTTP {fault.status}{named_kind}{code}")
        out[wire.name] = ", ".join(dict.fromkeys(seen))
    return out


def _model_outcomes(entry: scenarios.Scenario) -> dict[str, str]:
    from stuntset.doubles.model import _demo
    from stuntset.seams import deterministic

    http = _demo._http()
    if http is None:
        return dict.fromkeys(_WIRES, "(needs httpx2 or httpx to compute)")
    if entry.name in _demo._SKIP:
        return dict.fromkeys(_WIRES, "not applicable: nothing to spawn on an HTTP wire")
    with deterministic():
        return {wire: _demo._play(http, entry, wire).outcome for wire in _WIRES}


def _cli_outcomes(entry: scenarios.Scenario) -> dict[str, str]:
    from stuntset.doubles.cli.claude import _demo as claude_demo
    from stuntset.doubles.cli.codex import _demo as codex_demo

    claude_where = "fake `claude` (stream-json, as claude-agent-sdk drives it)"
    codex_where = "fake `codex` (`exec --json`, as the codex SDK reads it)"
    with tempfile.TemporaryDirectory(prefix="stuntset-reference-") as directory:
        out = {
            claude_where: claude_demo._play(entry.name, entry.build(), directory).outcome,
            codex_where: codex_demo._play(entry.name, entry.build(), directory).outcome,
        }
        if "cli" in inspect.signature(entry.build).parameters:  # the CLI itself breaks
            broken = entry.build(cli=True)
            out[f"{claude_where}, `cli=True`: the CLI itself breaks"] = claude_demo._play(
                entry.name, broken, directory
            ).outcome
            out[f"{codex_where}, `cli=True`: the CLI itself breaks"] = codex_demo._play(
                entry.name, broken, directory
            ).outcome
    return out


def _node_outcomes(entry: scenarios.Scenario, tier: Path | None) -> dict[str, str]:
    """What each npm SDK saw in the Node tier (none outside a checkout)."""
    if tier is None or not (tier / "expected.json").is_file():
        return {}
    outcomes = json.loads((tier / "expected.json").read_text(encoding="utf-8"))
    locked = json.loads((tier / "package.json").read_text(encoding="utf-8"))["devDependencies"]
    out = {}
    for client, (package, how) in _NODE_CLIENTS.items():
        seen = outcomes.get(client, {}).get(entry.name)
        if seen is None:
            continue
        outcome, detail = seen
        where = f"{client} {locked.get(package, '?')} (Node tier: {how})"
        out[where] = f"{outcome}: {detail}".replace("|", "\\|")
    return out


def _section(entry: scenarios.Scenario, node_tier: Path | None = NODE_TIER) -> list[str]:
    script = entry.build()
    kind = "failure" if entry.fault else "feature"
    lines = [f"## `{entry.name}` ({kind})", "", entry.description, "", entry.guidance, ""]
    params = _parameters(entry)
    lines += [f"**Parameters:** {', '.join(params) if params else 'none'}", ""]
    tools = _tools(script)
    lines.append(
        "**Tools it calls:** "
        + (", ".join(f"`{t}`" for t in tools) if tools else "none")
        + (
            " (an agent must declare them, or its SDK fails before the scenario plays; the "
            "fake CLIs play them as their own tools: claude `Read`/`Bash`, codex "
            "`exec_command`, gemini `read_file`/`run_shell_command`/`list_directory`)"
            if tools
            else ""
        )
    )
    from stuntset.checks.resilience import rules_exercised_by

    rules = [f"`{rule}`" for rule in rules_exercised_by(script) if rule != "left_running"]
    lines += [
        "",
        f"**Resilience rules it exercises** (`check_resilience`): "
        f"{', '.join(rules) if rules else 'none of its own'}; on the fake CLIs also "
        f"`left_running`",
    ]
    lines += ["", "**Script** (with the default parameters):", ""]
    for index, turn in enumerate(script.turns, 1):
        times = f" ×{turn.times}" if turn.times != 1 else ""
        label = f" `{turn.name}`" if turn.name else ""
        steps = " · ".join(_step(step) for step in turn.steps)
        lines.append(f"{index}. turn{label}{times}: {steps}")
    errors = _http_errors(script)
    lines += [
        "",
        "**What each wire and CLI shows** (played with the defaults by a minimal client that "
        "retries 408/409/429/5xx twice, as the official SDKs do; `→` separates responses):",
        "",
        "| where | what the client sees | error responses |",
        "|---|---|---|",
    ]
    for wire, outcome in _model_outcomes(entry).items():
        lines.append(f"| {_WIRES[wire]} | {outcome} | {errors[wire] or '-'} |")
    for where, outcome in _cli_outcomes(entry).items():
        lines.append(f"| {where} | {outcome} | - |")
    for where, outcome in _node_outcomes(entry, node_tier).items():
        lines.append(f"| {where} | {outcome} | - |")
    return lines


def show(name: str) -> str:
    """The reference section of scenario ``name`` (``UnknownScenario`` with a did-you-mean)."""
    return "\n".join(_section(scenarios.get(name))) + "\n"


def catalog_markdown() -> str:
    """``docs/catalog.md``: every scenario's reference section, in catalog order."""
    lines = [
        "# The scenario catalog",
        "",
        f"<!-- generated by `{REGENERATE}`; do not edit by hand -->",
        "",
        "Every scenario is a named, parameterised script, played the same on every double. "
        'Use one by name: `@pytest.mark.stand_in("rate_limited", failures=3)`, '
        '`@pytest.mark.fake_claude("stuck")`, `stuntset scenarios --show NAME`.',
        "",
        "A fault is the model API's unless it says otherwise: a fake CLI shows what the real "
        "CLI does when its model API does that (it retries a broken stream or a 401, as the "
        "real `claude` and `codex` do over the model double). **The CLI itself breaks** "
        "(its own stdout cut mid-line, a corrupt JSON line, garbage bytes, its own events out "
        "of order) with `cli=True` on `stream_cut`, `malformed_json`, `garbage_bytes` and "
        "`out_of_order` (and on their steps), on the fake CLIs only; after the bad output the "
        "fake exits 1, so a client that skips a bad line still sees the turn end. "
        "`crash_mid_turn` is the CLI process dying.",
        "",
    ]
    if (NODE_TIER / "expected.json").is_file():
        lines += [
            "The Node rows are what the real npm SDKs saw in the project's Node tier (`make "
            "node`, `tests/node/`): each scenario on a stage of its own (the control API of "
            "`stuntset serve`) or over a fake CLI made by `stuntset cli install`, the client "
            "bounding its own wait (2.5 s for `stuck`). `cut` is a stream that ended without "
            "its finish reason and without an error: the SDK did not say it was broken.",
            "",
        ]
    for entry in scenarios.all():
        lines += [*_section(entry), ""]
    return "\n".join(lines).rstrip() + "\n"


def drift(path: str | Path, *, fresh: str | None = None) -> str | None:
    """Why the committed catalog at ``path`` differs from what the generator makes now
    (the first differing line and the command to regenerate), or ``None`` if it does not.
    ``fresh`` is the generator's text when the caller has it already (rendering the whole
    catalog plays every scenario on every double: seconds)."""
    try:
        committed = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        return f"{path}: cannot read it ({error.strerror}); regenerate it with `{REGENERATE}`"
    if fresh is None:
        fresh = catalog_markdown()
    if committed == fresh:
        return None
    old, new = committed.splitlines(), fresh.splitlines()
    line = next((i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), None)
    line = min(len(old), len(new)) if line is None else line
    got = old[line] if line < len(old) else "(end of file)"
    want = new[line] if line < len(new) else "(end of file)"
    return (
        f"{path}:{line + 1}: the catalog reference is out of date (has {got!r}, the catalog "
        f"now gives {want!r}); regenerate it with `{REGENERATE}`"
    )


if __name__ == "__main__":
    print(catalog_markdown(), end="")
