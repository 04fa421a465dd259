"""One ``ClaudeSDKClient`` session for a whole scenario: the ``claude-session`` column.

``ClaudeCodeProvider`` (the ``claude`` column) opens a client per run: connect, one query, its
response, disconnect. Here one client carries the scenario: ``connect()``, then for each
prompt ``query()`` and ``receive_response()`` in the same session (stdin stays open between
them), and ``interrupt()`` on a query that stalls, after which the next query still runs. Each
query is played by the adapter's own ``ClaudeCodeRun._play`` (the same message → event
mapping as the ``claude`` column), so a query is one normalized run and the session is their
runs one after another.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Sequence
from typing import Any

import anyio
from claude_agent_sdk import ClaudeSDKClient, ToolPermissionContext
from claude_agent_sdk.types import PermissionResultAllow, PermissionResultDeny

from stuntset.checks._conformance_play import play, stall_expectation
from stuntset.events import Event
from stuntset.providers.base import AgentProvider
from stuntset.providers.claude_code import ClaudeCodeProvider, ClaudeCodeRun
from stuntset.script import Script, Stall

__all__ = ["play_session"]


class _Query(ClaudeCodeRun):
    """One query of a session: the adapter's run, on a client it does not own (it neither
    connects nor disconnects it). ``failed`` is why ``connect()`` failed, if it did."""

    def __init__(
        self,
        provider: ClaudeCodeProvider,
        client: ClaudeSDKClient,
        prompt: str,
        failed: BaseException | None,
    ) -> None:
        super().__init__(
            provider, str(provider.ids.new("run")), prompt, provider.session_id, new=False
        )
        self._shared = client
        self._failed = failed

    async def _session(self) -> None:
        # the session's client outlives the query: nothing to disconnect here
        await self._play(self._shared, connect=self._connect)

    async def _connect(self) -> None:
        """The client is already connected; if that failed, this query reports it."""
        if self._failed is not None:
            raise self._failed


async def play_session(
    provider: AgentProvider,
    script: Script,
    prompts: Sequence[str],
    *,
    timeout: float,
    quiet: float,
) -> tuple[list[Event], str | None]:
    """Send ``prompts`` one after another in one session of ``provider``'s CLI and play each
    query as the conformance suite plays a run (approvals allowed, questions answered, a
    stalled query interrupted); query ``i`` answers the script's turn ``i``. The session's
    events, and why it could not be played (``None`` when it could)."""
    assert isinstance(provider, ClaudeCodeProvider)
    current: list[_Query] = []

    async def can_use_tool(
        tool: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResultAllow | PermissionResultDeny:
        return await current[-1]._can_use_tool(tool, tool_input, context)

    options = dataclasses.replace(
        provider.options,
        include_partial_messages=True,
        can_use_tool=can_use_tool,
        session_id=provider.session_id,
    )
    client = ClaudeSDKClient(options)
    events: list[Event] = []
    failed: BaseException | None = None
    try:
        try:
            await client.connect()
        except Exception as error:  # the first query reports it (a missing binary: spawn_failed)
            failed = error
        for index, prompt in enumerate(prompts):
            query = _Query(provider, client, prompt, failed)
            current.append(query)
            turn = Script.of(script.turns[index]) if index < len(script.turns) else Script.of()
            try:
                played = await play(
                    query,
                    timeout=timeout,
                    stall_after=quiet,
                    approve=lambda event: "allow",
                    answer=lambda event: "yes",
                    interrupt_when_quiet=any(isinstance(s, Stall) for s in turn.turns[0].steps)
                    if turn.turns
                    else False,
                    stalled=stall_expectation(turn, provider.capabilities),
                )
            finally:
                await query.aclose()
            events += played.events
            if played.error is not None:
                return events, f"query {index + 1}: iterating the run raised {played.error!r}"
            if played.timed_out:
                return events, f"query {index + 1}: no terminal event within {timeout:g} s"
            if failed is not None:
                break
    finally:
        with (
            anyio.CancelScope(shield=True),
            anyio.move_on_after(provider.close_timeout),
            contextlib.suppress(Exception),  # the session's outcome is already reported
        ):
            await client.disconnect()
    return events, None
