"""``gemini -p … --output-format stream-json`` read as normalized events: the adapter of a
drift ``gemini`` column (the real ``@google/gemini-cli`` over the model double's Gemini wire,
and the fake ``gemini``, both read by this one adapter; ``runners.make_real`` / ``make_fake``
build it for the column, in the drift run's own directories; ``make_real`` / ``make_fake``
here are the same pair for a test's one folder).

=====================================================  =========================================
stream-json                                            normalized
=====================================================  =========================================
``init``                                               ``run.started`` (its ``session_id``)
``message`` ``assistant`` deltas                       ``message.delta`` each, then
                                                       ``message.completed`` (joined) before the
                                                       next event of another kind
``tool_use`` / ``tool_result``                         ``tool.started`` / ``tool.completed``
                                                       (``is_error`` for ``status: "error"``)
``result`` ``success``                                 ``usage`` (when tokens were reported),
                                                       ``run.completed``
``result`` ``error``                                   ``run.crashed``: the kind from the API
                                                       status the message quotes (429
                                                       ``rate_limited``…), a broken stream
                                                       ``protocol``
``message`` ``user``, ``error`` warnings               nothing
=====================================================  =========================================

The ``result`` line's ``status`` and whether it reported tokens are the run's
``result_fields`` (what drift compares as the final result: ``{"status": "success", "usage":
True}``). A line that is not JSON is ``run.crashed`` (``protocol``); stdout ending without a ``result``
is ``run.crashed`` (``exited``, with the exit code and stderr's last line); a binary that
cannot be started is ``spawn_failed``. ``interrupt()`` sends SIGTERM: ``run.killed``.

``native_script`` is drift's rewrite of the catalog's wire-neutral tools into gemini's own
(``drift.native`` calls it for this column; observed on gemini-cli 0.61.0 with ``--yolo``):

==============  ==================================================  ===========================
catalog         gemini                                              its ``tool_result`` output
==============  ==================================================  ===========================
``read_file``   ``read_file`` ``{"file_path": <path>}``             ``""`` (a read's display)
``bash``        ``run_shell_command`` ``{"command": <command>}``    the command's output
``list_files``  ``list_directory`` ``{"dir_path": <path>}``         none (its display is not
                                                                    text: no ``output`` key)
a question      ``ask_user`` (one choice question, ``yes``/``no``)  ``Tool "ask_user" not
                                                                    found…`` (an error: headless,
                                                                    it is not registered)
==============  ==================================================  ===========================

Headless with ``--yolo`` the CLI asks nobody, so the rewritten script asks for nothing (the
catalog's approval requests are dropped).
"""

from __future__ import annotations

import json
import os
import re
import signal
import tempfile
from pathlib import Path
from typing import IO, Any

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from stuntset.doubles.cli._neutral import native_call, native_output, neutral
from stuntset.events import (
    CrashKind,
    Event,
    MessageCompleted,
    MessageDelta,
    RunCompleted,
    RunCrashed,
    RunKilled,
    RunStarted,
    ToolCompleted,
    ToolStarted,
    Usage,
)
from stuntset.providers._crash_kinds import status_crash
from stuntset.providers.base import Capabilities
from stuntset.script import (
    ApprovalRequest,
    InputRequest,
    Script,
    Step,
    ToolCall,
    ToolResult,
    Turn,
)
from stuntset.seams import current_clock, current_ids

from ._ending import Sigterms, last_line, stop

__all__ = [
    "MODEL",
    "GeminiCliProvider",
    "GeminiCliRun",
    "failure_of",
    "gemini_env",
    "make_fake",
    "make_real",
    "native_script",
]

CAPABILITIES = Capabilities(interrupt=True, reasoning=False, usage=True)
#: A fixed model: the default (``auto``) asks a router model first, which a script would answer.
MODEL = "gemini-2.5-flash"
_LINE_LIMIT = 16 * 1024 * 1024
_CODE = re.compile(r'"code":\s*(\d{3})')


#: What the headless CLI answers a call of its ``ask_user`` (``--yolo``; observed, 0.61.0): the
#: three registered tools nearest by name.
REFUSED_QUESTION = (
    'Tool "ask_user" not found. Did you mean one of: "replace", "read_file", "grep_search"?'
)


def _question(prompt: str) -> list[Step]:
    options = [{"label": "yes", "description": "Go ahead"}, {"label": "no", "description": "Stop"}]
    question = {"question": prompt, "header": "Question", "type": "choice", "options": options}
    return [
        ToolCall("ask_user", {"questions": [question]}),
        ToolResult(REFUSED_QUESTION, is_error=True),
    ]


def native_script(script: Script) -> Script:
    """``script`` with the catalog's wire-neutral tool calls, their results and its questions
    as gemini's own tools (see the module docs); ``script`` itself when it has none."""
    import msgspec

    turns = tuple(_native_turn(turn) for turn in script.turns)
    if all(new is old for new, old in zip(turns, script.turns, strict=True)):
        return script
    return msgspec.structs.replace(script, turns=turns)


def _native_turn(turn: Turn) -> Turn:
    import msgspec

    if not any(
        isinstance(s, InputRequest) or (isinstance(s, ToolCall) and neutral("gemini", s))
        for s in turn.steps
    ):
        return turn
    steps: list[Step] = []
    waiting: list[ToolCall] = []  # neutral calls whose result is still to come, in order
    for step in turn.steps:
        if isinstance(step, ToolCall) and neutral("gemini", step):
            waiting.append(step)
            steps.append(native_call("gemini", step))
        elif isinstance(step, ApprovalRequest):
            continue  # headless with --yolo, gemini asks nobody
        elif isinstance(step, ToolResult) and waiting:
            output = native_output("gemini", waiting.pop(0), step.output)
            steps.append(msgspec.structs.replace(step, output=output))
        elif isinstance(step, InputRequest):
            steps.extend(_question(step.prompt))
        else:
            steps.append(step)
    return msgspec.structs.replace(turn, steps=tuple(steps))


def failure_of(message: str) -> tuple[CrashKind, bool]:
    """The crash kind and retryability of an error ``result``'s message (``[API Error: …]``)."""
    found = _CODE.search(message)
    if found is not None:
        reason = "API_KEY_INVALID" if "API_KEY_INVALID" in message else None
        kind, _, retryable = status_crash(int(found.group(1)), message, reason=reason)
        return kind, retryable
    if "Resource has been exhausted" in message:
        return "rate_limited", True
    if "terminated" in message or "JSON" in message:
        return "protocol", True
    return "internal", False


def gemini_env(home: Path, base_url: str, *, attempts: int = 2) -> dict[str, str]:
    """The environment (and ``home/.gemini/settings.json``) that points a ``gemini`` at the
    model double's Gemini wire at ``base_url`` offline: the API-key auth method, a trusted
    folder, ``attempts`` model attempts (the real default, 10, waits minutes of backoff), and
    no enclosing ``make``'s variables."""
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True, "maxAttempts": attempts},
    }
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    return {
        "GEMINI_CLI_HOME": str(home),
        "GEMINI_API_KEY": "stuntset",
        "GOOGLE_GEMINI_BASE_URL": base_url.rstrip("/"),
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
        "GEMINI_CLI_NO_RELAUNCH": "1",
        # no enclosing make: its shell tool would run a scripted `make` as a sub-make
        # ("make[1]: Entering directory …"), as runners.NO_ENCLOSING_MAKE says
        "MAKELEVEL": "",
        "MAKEFLAGS": "",
        "MFLAGS": "",
    }


def make_real(binary: Path, where: Path, base_url: str) -> GeminiCliProvider:
    """The real side of the column: ``binary`` over the double at ``base_url``."""
    cwd = where / "real-cwd"
    cwd.mkdir(parents=True, exist_ok=True)
    return GeminiCliProvider(
        str(binary), cwd=str(cwd), env=gemini_env(where / "real-home", base_url)
    )


def make_fake(script: Script, where: Path, *, time_scale: float = 0.1) -> GeminiCliProvider:
    """The fake side: the fake ``gemini`` playing ``script``, with the same settings."""
    from stuntset.doubles.cli import install_cli

    installed = install_cli("gemini", script, bin_dir=where / "fake-bin", time_scale=time_scale)
    cwd = where / "fake-cwd"
    cwd.mkdir(parents=True, exist_ok=True)
    env = gemini_env(where / "fake-home", "http://127.0.0.1:9/gemini")  # the fake calls no API
    return GeminiCliProvider(str(installed.path), cwd=str(cwd), env=env)


class GeminiCliProvider:
    """Runs ``binary -p <prompt> -m MODEL --output-format stream-json --yolo`` in ``cwd`` with
    ``env`` added to this process's environment; one process per run."""

    __test__ = False

    def __init__(
        self,
        binary: str,
        *,
        cwd: str,
        env: dict[str, str] | None = None,
        close_timeout: float = 10.0,
    ) -> None:
        self.binary = binary
        self.cwd = cwd
        self.env = dict(env or {})
        self.close_timeout = close_timeout
        self.clock = current_clock()
        self.ids = current_ids()
        self._session_id = ""
        self.runs: list[GeminiCliRun] = []

    @property
    def name(self) -> str:
        return "gemini"

    @property
    def capabilities(self) -> Capabilities:
        return CAPABILITIES

    @property
    def session_id(self) -> str:
        return self._session_id

    def argv(self, prompt: str) -> list[str]:
        return [self.binary, "-p", prompt, "-m", MODEL, "--output-format", "stream-json", "--yolo"]

    def start(self, prompt: str, *, resume: str | None = None) -> GeminiCliRun:
        run = GeminiCliRun(self, str(self.ids.new("run")), prompt)
        self.runs.append(run)
        return run

    async def aclose(self) -> None:
        for run in self.runs:
            await run.aclose()


class GeminiCliRun:
    """One ``gemini`` process; its stdout read as the run is iterated."""

    __test__ = False

    def __init__(self, provider: GeminiCliProvider, run_id: str, prompt: str) -> None:
        self._provider = provider
        self._run_id = run_id
        self.prompt = prompt
        self.events: list[Event] = []
        self.finished = False
        self._ready: list[Event] = []
        self._process: Process | None = None
        self._stdout: BufferedByteReceiveStream | None = None
        self._stderr: IO[bytes] | None = None
        self._spawned = False
        self._began = False
        self._over = False
        self._killed: str | None = None
        self._sigterms = Sigterms()
        self._text: list[str] = []
        self._messages = 0
        #: the ``result`` line's status and whether it reported tokens (empty before it)
        self.result_fields: dict[str, Any] = {}

    @property
    def run_id(self) -> str:
        return self._run_id

    @property
    def session_id(self) -> str:
        return self._provider.session_id

    def __aiter__(self) -> GeminiCliRun:
        return self

    async def __anext__(self) -> Event:
        if self.finished:
            raise StopAsyncIteration
        while not self._ready:
            await self._advance()
        event = self._ready.pop(0)
        self.events.append(event)
        if event.terminal:
            self.finished = True
        return event

    def _emit(self, cls: type[Any], **fields: Any) -> None:
        if not self._began:
            self._began = True
            self._ready.append(
                RunStarted(
                    run_id=self._run_id,
                    ts=self._provider.clock.now(),
                    session_id=self._provider.session_id,
                    provider=self._provider.name,
                )
            )
        if cls is RunStarted:
            return
        if cls is not MessageDelta:
            self._close_message()
        self._ready.append(cls(run_id=self._run_id, ts=self._provider.clock.now(), **fields))

    def _close_message(self) -> None:
        if self._text:
            text, self._text = "".join(self._text), []
            item = f"msg_{self._messages}"
            self._messages += 1
            self._ready.append(
                MessageCompleted(
                    run_id=self._run_id, ts=self._provider.clock.now(), item_id=item, text=text
                )
            )

    def _end(self, cls: type[Any], **fields: Any) -> None:
        self._emit(cls, **fields)
        self._over = True
        stop(self._process)

    async def _spawn(self) -> None:
        self._spawned = True
        if self._killed is not None:
            self._end(RunKilled, reason=self._killed)
            return
        provider = self._provider
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed by aclose)
        try:
            self._process = await anyio.open_process(
                provider.argv(self.prompt),
                cwd=provider.cwd,
                env={**os.environ, **provider.env},
                stdin=None,
                stderr=self._stderr,
            )
        except OSError as error:
            self._end(RunCrashed, kind="spawn_failed", message=str(error), retryable=False)
            return
        if self._interrupted():  # while it was being started
            self._sigterms.send(self._process)
        assert self._process.stdout is not None
        if self._process.stdin is not None:
            await self._process.stdin.aclose()  # no piped prompt: stdin at EOF
        self._stdout = BufferedByteReceiveStream(self._process.stdout)

    async def _advance(self) -> None:
        if not self._spawned:
            await self._spawn()
            return
        if self._over:  # pragma: no cover - the terminal event is queued first
            raise StopAsyncIteration
        assert self._stdout is not None
        try:
            line = await self._sigterms.receive_line(
                self._stdout, _LINE_LIMIT, self._process, self._provider.close_timeout
            )
        except anyio.IncompleteRead:
            tail = bytes(self._stdout.buffer)
            if tail.strip():
                self._line(tail)
            if not self._over:
                await self._ended()
            return
        except anyio.DelimiterNotFound:
            self._end(
                RunCrashed, kind="protocol", message="a stdout line too long", retryable=False
            )
            return
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self._ended()
            return
        self._line(line)

    async def _ended(self) -> None:
        process = self._process
        assert process is not None
        with anyio.move_on_after(self._provider.close_timeout):
            await process.wait()
        if self._killed is not None:
            self._end(RunKilled, reason=self._sigterms.reason(self._killed))
            return
        tail = last_line(self._stderr)
        said = f": {tail}" if tail else ""
        self._end(
            RunCrashed,
            kind="exited",
            message=f"gemini exited with code {process.returncode} before its result{said}",
            retryable=False,
        )

    def _line(self, raw: bytes) -> None:
        try:
            event = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            self._end(
                RunCrashed,
                kind="protocol",
                message=f"a stdout line that is not JSON: {raw[:200]!r}",
                retryable=False,
            )
            return
        if not isinstance(event, dict):
            self._end(
                RunCrashed,
                kind="protocol",
                message="a stdout line that is not an object",
                retryable=False,
            )
            return
        kind = event.get("type")
        if kind == "init":
            self._provider._session_id = str(event.get("session_id") or "")
            self._emit(RunStarted)
        elif kind == "message" and event.get("role") == "assistant":
            text = str(event.get("content") or "")
            self._emit(MessageDelta, item_id=f"msg_{self._messages}", text=text)
            self._text.append(text)
        elif kind == "tool_use":
            parameters = event.get("parameters")
            self._emit(
                ToolStarted,
                tool_call_id=str(event.get("tool_id") or ""),
                name=str(event.get("tool_name") or ""),
                input=parameters if isinstance(parameters, dict) else {},
            )
        elif kind == "tool_result":
            self._emit(
                ToolCompleted,
                tool_call_id=str(event.get("tool_id") or ""),
                output=event.get("output"),
                is_error=event.get("status") == "error",
            )
        elif kind == "result":
            stats: Any = event.get("stats")
            stats = stats if isinstance(stats, dict) else {}
            given, made = int(stats.get("input_tokens") or 0), int(stats.get("output_tokens") or 0)
            self.result_fields = {"status": event.get("status"), "usage": bool(given or made)}
            if event.get("status") == "success":
                if given or made:
                    self._emit(Usage, input_tokens=given, output_tokens=made)
                self._end(RunCompleted, stop_reason="end_turn")
            else:
                error: Any = event.get("error")
                error = error if isinstance(error, dict) else {}
                message = str(error.get("message") or "")
                failure, retryable = failure_of(message)
                self._end(RunCrashed, kind=failure, message=message, retryable=retryable)

    async def respond(self, request_id: str, decision: str) -> None:
        from stuntset.errors import UsageError

        raise UsageError(
            f"run {self._run_id!r} has no open request {request_id!r}: gemini -p never asks"
        )

    async def interrupt(self, reason: str = "interrupted") -> None:
        if self.finished or self._over or self._killed is not None:
            return
        self._killed = reason
        self._sigterms.send(self._process)

    def _interrupted(self) -> bool:
        return self._killed is not None

    async def aclose(self) -> None:
        process = self._process
        if process is not None:
            if process.returncode is None:
                if self._killed is None and not self._over:
                    self._killed = "closed"
                stop(process)
            with anyio.CancelScope(shield=True):
                with anyio.move_on_after(self._provider.close_timeout):
                    await process.wait()
                if process.returncode is None:
                    stop(process, signal.SIGKILL)
                    await process.wait()
                await process.aclose()
        if self._stderr is not None:
            self._stderr.close()
