"""Agent frameworks on top of the SDKs, unmodified, pointed at the model double: a
pydantic-ai Agent (OpenAI chat, OpenAI responses and Anthropic models) and an openai-agents
Runner (chat-completions and responses models), each running a tool-calling loop over two
requests."""

from __future__ import annotations

import builtins
import json
from typing import Any

import httpx2
import openai
import pydantic
import pytest

from stuntset import scenarios
from stuntset.doubles.model import StandIn
from stuntset.script import Script, Text, ToolCall, ToolResult, Usage

WEATHER = Script.of(
    [
        Text("Checking."),
        ToolCall("get_weather", {"city": "Paris"}),
        ToolResult("sunny"),
        Text("It is sunny in Paris."),
        Usage(input_tokens=30, output_tokens=12),
    ]
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # both frameworks run on asyncio


@pytest.mark.parametrize("model_kind", ["openai-chat", "openai-responses", "anthropic"])
@pytest.mark.anyio
async def test_pydantic_ai_agent_runs_a_tool_loop(stand_in: StandIn, model_kind: str) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
    from pydantic_ai.providers.anthropic import AnthropicProvider
    from pydantic_ai.providers.openai import OpenAIProvider

    stand_in.play(WEATHER)
    http = httpx2.AsyncClient(transport=stand_in.transport())
    if model_kind == "anthropic":
        model: object = AnthropicModel(
            "claude-test", provider=AnthropicProvider(api_key="k", http_client=http)
        )
    else:
        provider = OpenAIProvider(api_key="k", http_client=http)
        kind = OpenAIChatModel if model_kind == "openai-chat" else OpenAIResponsesModel
        model = kind("gpt-test", provider=provider)
    agent = Agent(model)  # type: ignore[call-overload]
    calls: list[str] = []

    @agent.tool_plain
    def get_weather(city: str) -> str:
        calls.append(city)
        return "sunny"

    result = await agent.run("What is the weather in Paris?")
    assert result.output == "It is sunny in Paris."
    assert calls == ["Paris"]
    assert len(stand_in.requests) == 2
    assert stand_in.requests[1].turn == 0  # the tool result was answered by the same turn
    assert (result.usage.input_tokens, result.usage.output_tokens) == (30, 12)


@pytest.mark.parametrize("api", ["chat_completions", "responses"])
@pytest.mark.anyio
async def test_openai_agents_runner_with_a_function_tool(stand_in: StandIn, api: str) -> None:
    import openai
    from agents import (
        Agent,
        OpenAIChatCompletionsModel,
        OpenAIResponsesModel,
        RunConfig,
        Runner,
        function_tool,
    )

    stand_in.play(WEATHER)
    client = openai.AsyncOpenAI(
        api_key="k", http_client=httpx2.AsyncClient(transport=stand_in.transport())
    )
    calls: list[str] = []

    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        calls.append(city)
        return "sunny"

    model = (
        OpenAIChatCompletionsModel("gpt-test", openai_client=client)
        if api == "chat_completions"
        else OpenAIResponsesModel("gpt-test", openai_client=client)
    )
    agent = Agent(name="weather", instructions="Answer.", tools=[get_weather], model=model)
    result = await Runner.run(
        agent, "What is the weather in Paris?", run_config=RunConfig(tracing_disabled=True)
    )
    assert result.final_output == "It is sunny in Paris."
    assert calls == ["Paris"]
    assert len(stand_in.requests) == 2


PYDANTIC_AI_SEES = {
    # scenario: (exception class name from pydantic_ai.exceptions, or the builtin) per wire
    "auth_expired_mid_run": ("ModelAuthenticationError",) * 3,
    "stream_cut": ("ModelAPIError",) * 3,
    "crash_mid_turn": ("ModelAPIError",) * 3,
    "stuck": ("ModelAPIError",) * 3,
    "malformed_json": ("ModelAPIError",) * 3,
    "garbage_bytes": ("UnexpectedModelBehavior", "ModelAPIError", "ModelAPIError"),
    "out_of_order": ("UnexpectedModelBehavior", "TypeError", "TypeError"),
}
KINDS = ("openai-chat", "openai-responses", "anthropic")


def _pydantic_ai_agent(stand_in: StandIn, kind: str, retries: int) -> object:
    import anthropic
    import openai
    from pydantic_ai import Agent
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
    from pydantic_ai.providers.anthropic import AnthropicProvider
    from pydantic_ai.providers.openai import OpenAIProvider

    http = httpx2.AsyncClient(transport=stand_in.transport(), timeout=httpx2.Timeout(5, read=1))
    if kind == "anthropic":
        client = anthropic.AsyncAnthropic(api_key="k", http_client=http, max_retries=retries)
        model: object = AnthropicModel(
            "claude-test", provider=AnthropicProvider(anthropic_client=client)
        )
    else:
        oclient = openai.AsyncOpenAI(api_key="k", http_client=http, max_retries=retries)
        kind_class = OpenAIChatModel if kind == "openai-chat" else OpenAIResponsesModel
        model = kind_class("gpt-test", provider=OpenAIProvider(openai_client=oclient))
    agent = Agent(model)  # type: ignore[call-overload]
    for tool in ("read_file", "bash", "list_files"):

        def run_tool(path: str = "", command: str = "") -> str:
            return "ok"

        agent.tool_plain(name=tool)(run_tool)
    return agent


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "name",
    [s.name for s in scenarios.all() if s.name != "spawn_missing"],
)
@pytest.mark.anyio
async def test_pydantic_ai_meets_the_catalog(stand_in: StandIn, name: str, kind: str) -> None:
    """Each applicable scenario through a pydantic-ai Agent (non-streamed runs)."""
    from pydantic_ai import exceptions

    stand_in.play(scenarios.build(name))
    # the SDK retries 429/5xx as configured; other faults get one attempt (one turn) each
    retries = 2 if name in ("rate_limited", "overloaded") else 0
    agent: Any = _pydantic_ai_agent(stand_in, kind, retries)
    if name not in PYDANTIC_AI_SEES:
        outputs = []
        while stand_in.double.unused():
            outputs.append((await agent.run("hi")).output)
        assert outputs
        assert all(isinstance(o, str) and o for o in outputs)
        return
    expected = PYDANTIC_AI_SEES[name][KINDS.index(kind)]
    error = getattr(exceptions, expected, None) or getattr(builtins, expected)

    async def run_all() -> None:
        while stand_in.double.unused():
            await agent.run("hi")

    with pytest.raises(error):
        await run_all()


OPENAI_AGENTS_SEES: dict[str, tuple[type[BaseException], ...] | None] = {
    "auth_expired_mid_run": (openai.AuthenticationError,),
    "stream_cut": (openai.APIConnectionError,),
    "crash_mid_turn": (openai.APIConnectionError,),
    "stuck": (openai.APITimeoutError,),
    "malformed_json": (json.JSONDecodeError,),
    "garbage_bytes": (AttributeError,),  # a 200 text/html body comes back as a str
    "out_of_order": None,  # per api: see below
}


@pytest.mark.parametrize("api", ["chat_completions", "responses"])
@pytest.mark.parametrize("name", [s.name for s in scenarios.all() if s.name != "spawn_missing"])
@pytest.mark.anyio
async def test_openai_agents_meets_the_catalog(stand_in: StandIn, name: str, api: str) -> None:
    """Each applicable scenario through an openai-agents Runner (non-streamed runs)."""
    from agents import Agent, OpenAIChatCompletionsModel, OpenAIResponsesModel, RunConfig, Runner
    from agents import function_tool as tool

    stand_in.play(scenarios.build(name))
    retries = 2 if name in ("rate_limited", "overloaded") else 0
    http = httpx2.AsyncClient(transport=stand_in.transport(), timeout=httpx2.Timeout(5, read=1))
    client = openai.AsyncOpenAI(api_key="k", http_client=http, max_retries=retries)
    model = (
        OpenAIChatCompletionsModel("gpt-test", openai_client=client)
        if api == "chat_completions"
        else OpenAIResponsesModel("gpt-test", openai_client=client)
    )

    def read_file(path: str = "") -> str:
        """Read a file."""
        return "ok"

    def bash(command: str = "") -> str:
        """Run a command."""
        return "ok"

    def list_files(path: str = "") -> str:
        """List files."""
        return "ok"

    agent = Agent(name="a", model=model, tools=[tool(f) for f in (read_file, bash, list_files)])
    config = RunConfig(tracing_disabled=True)

    async def run_all() -> list[str]:
        outputs = []
        while stand_in.double.unused():
            outputs.append(str((await Runner.run(agent, "hi", run_config=config)).final_output))
        return outputs

    if name == "out_of_order":
        if api == "chat_completions":  # a chunk where a completion belongs: no content at all
            assert await run_all() == [""]
        else:
            with pytest.raises(pydantic.ValidationError):
                await run_all()
    elif name in OPENAI_AGENTS_SEES:
        with pytest.raises(OPENAI_AGENTS_SEES[name] or ()):
            await run_all()
    else:
        outputs = await run_all()
        assert outputs
        assert all(outputs)
