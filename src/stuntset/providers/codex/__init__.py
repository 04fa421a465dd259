"""``CodexProvider``: Codex (through the ``openai-codex`` Python SDK, ``codex app-server``)
behind the normalized provider interface. Install with ``stuntset[codex]``.

Each run is one ``CodexClient`` (one ``codex app-server`` process) driven by a thread of its
own: the SDK is synchronous (its reader thread answers server requests through the approval
handler), so the run's driver thread starts the process, starts or resumes the thread, starts
the turn and reads the turn's notifications, and every normalized event is handed to the
event loop through ``call_soon_threadsafe``. The run may be iterated, interrupted, answered and
closed from any task of that loop. What the SDK yields becomes normalized events:

=============================================  ==============================================
openai-codex (app-server v2)                   normalized
=============================================  ==============================================
``item/agentMessage/delta``, ``agentMessage``  ``message.delta`` / ``message.completed``
``item/reasoning/summaryTextDelta`` (and       ``reasoning.delta`` / ``reasoning.completed``
``textDelta``), ``reasoning`` item
``commandExecution`` / ``fileChange`` /        ``tool.started`` (``item/started``; an
``mcpToolCall`` / ``webSearch`` items          ``mcpToolCall`` names its ``server``) and
                                               ``tool.completed`` (``item/completed``; an error
                                               when failed, declined or a non-zero exit)
``item/commandExecution/requestApproval``,     ``approval.requested`` → ``respond()`` →
``item/fileChange/requestApproval``            ``approval.resolved`` (allow → ``accept``,
                                               deny → ``decline``)
``item/tool/requestUserInput`` (Plan mode)     ``input.requested`` → ``respond(text)`` →
                                               ``input.resolved``
``thread/tokenUsage/updated``                  ``usage``: the turn's own tokens, the sum of
                                               each model response's ``last`` (``total`` is
                                               the thread's); none reported: no usage event
``turn/completed``                             ``run.completed``; ``interrupted`` →
                                               ``run.killed``; ``failed`` → ``run.crashed``
                                               with its kind from ``codexErrorInfo``
a missing binary, a closed transport, a        ``run.crashed`` (``spawn_failed``,
broken JSON-RPC line, undecodable bytes        ``exited``, ``protocol``)
=============================================  ==============================================

Approvals: ``approvals="ask"`` (default) starts threads with ``approvalPolicy: on-request``
and reviewer ``user``, so Codex asks the client and every request becomes
``approval.requested``; ``"auto_review"`` lets Codex's automatic reviewer decide and
``"deny_all"`` (policy ``never``) declines unasked — in those two modes the provider declares
no ``approvals`` capability (it never asks).

Questions: Codex asks the user (``request_user_input``) only in its Plan collaboration mode;
in Default mode, its default, it refuses the model's call ("request_user_input is unavailable
in Default mode") and never asks. ``collaboration_mode="plan"`` sends ``collaborationMode``
with each ``turn/start`` (with the thread's model), and only then does the provider declare
``input_requests``.

The resume handle is the Codex thread id: known once the app-server has started (or resumed)
the thread, so ``run.started`` carries it; a new provider built with ``session_id=`` (or
``start(resume=id)``) resumes that thread (the same ``CODEX_HOME`` must hold it). Runs are
driven on asyncio (events reach the loop with ``call_soon_threadsafe``).
"""

from __future__ import annotations

from stuntset.providers.codex._crash import crash_of, turn_crash
from stuntset.providers.codex._provider import Approvals as Approvals
from stuntset.providers.codex._provider import CodexProvider
from stuntset.providers.codex._provider import CollaborationMode as CollaborationMode
from stuntset.providers.codex._run import CodexRun

__all__ = ["CodexProvider", "CodexRun", "crash_of", "turn_crash"]
