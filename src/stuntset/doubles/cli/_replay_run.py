"""The fake CLI process that replays a recorded transcript (a ``<name>-cli`` cassette).

Runs inside the installed executable (see ``_runtime``: built-ins only); the plan was
compiled from the cassette by ``stuntset.cassettes.cli_replay``. Each recorded invocation is a
*timeline* of what the real process read and wrote, in recorded order:

``("in", t, line)``   a stdin line the client sent: the replay waits for the client's next
                      line and compares it with this one;
``("out", t, line, partial)``
                      a stdout line, written ``t`` after the previous step (times the pace);
                      ``partial``: written without its newline (the process died mid-line);
``("err", t, text)``  stderr text;
``("eof", t)``        the client closed stdin here: the replay waits for it to.

Replaying is protocol-aware where the protocol makes a run differ from its recording: ids
the *client* chooses for its requests (stream-json ``control_request.request_id``, JSON-RPC
``id``) are ignored when comparing and mapped back onto the recorded responses, and the
recorded working directory is replaced by the current one (in argv, stdin and output). Ids the
*process* chose are replayed as recorded, so the client echoes them back unchanged.

Binding a process to its recording is content-aware. A spawn starts with every unreplayed
recording whose argv matches as a *candidate* and plays them in lockstep while they agree:
each stdin line drops the candidates that recorded another, and where the candidates would
write different things the process commits to the first of them no other process has
claimed (under the shared state's lock). So concurrent or nested sessions (a sub-agent) that
start alike each bind to their own recording, whatever order they were spawned in, and alike
ones take them in first-come order. Anything that does not match ends the process with status
1, one ``stuntset replay:`` line on stderr, and the whole difference in the shared state,
where the installing test's ``verify()`` raises it.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from stuntset.doubles.cli._runtime import Runtime

__all__ = [
    "client_request_id",
    "differences",
    "json_escaped",
    "normalized_argv",
    "rewrite_response",
    "run",
    "without_client_ids",
]

#: Exit status of a replay that met something the recording does not have.
MISMATCH_STATUS = 1


def json_escaped(text: str) -> str:
    """``text`` as it appears inside a JSON string (what to replace in a raw line)."""
    from stuntset.doubles.cli._runtime import dumps

    return dumps(text)[1:-1]


def normalized_argv(argv: list[str], ignore: list[str]) -> list[str]:
    """``argv`` with the values of the ``ignore`` flags (``--flag v`` / ``--flag=v``) blanked."""
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            out.append("<ignored>")
            skip = False
            continue
        name, equals, _ = arg.partition("=")
        if name in ignore:
            if equals:
                out.append(name + "=<ignored>")
            else:
                out.append(arg)
                skip = True
            continue
        out.append(arg)
    return out


def client_request_id(message: Any) -> Any:
    """The id a client chose for its request (``None`` if ``message`` is no client request)."""
    if not isinstance(message, dict):
        return None
    if message.get("type") == "control_request":
        return message.get("request_id")
    if "method" in message and "id" in message:
        return message["id"]
    return None


def without_client_ids(message: Any) -> Any:
    """``message`` without the request id its sender chose (what is compared)."""
    if not isinstance(message, dict):
        return message
    if message.get("type") == "control_request" and "request_id" in message:
        return {k: v for k, v in message.items() if k != "request_id"}
    if "method" in message and "id" in message:
        return {k: v for k, v in message.items() if k != "id"}
    return message


def rewrite_response(message: Any, ids: dict[str, Any]) -> bool:
    """Point a recorded response at the id the client used this time; ``True`` if changed.
    ``ids`` maps recorded ids (as JSON text) to this run's."""
    from stuntset.doubles.cli._runtime import dumps

    if not isinstance(message, dict):
        return False
    if message.get("type") == "control_response" and isinstance(message.get("response"), dict):
        inner = message["response"]
        key = dumps(inner.get("request_id"))
        if key in ids:
            inner["request_id"] = ids[key]
            return True
        return False
    if "id" in message and "method" not in message and ("result" in message or "error" in message):
        key = dumps(message["id"])
        if key in ids:
            message["id"] = ids[key]
            return True
    return False


def _short(value: Any) -> str:
    from stuntset.doubles.cli._runtime import dumps

    text = dumps(value)
    return text if len(text) <= 160 else text[:157] + "..."


def _clip(text: str) -> str:
    return text if len(text) <= 160 else text[:157] + "..."


def differences(recorded: Any, actual: Any, path: str = "") -> list[str]:
    """Where two JSON values differ, one ``path: recorded X, got Y`` line per leaf."""
    if isinstance(recorded, dict) and isinstance(actual, dict):
        out: list[str] = []
        for key in sorted(set(recorded) | set(actual)):
            where = f"{path}.{key}" if path else str(key)
            if key not in actual:
                out.append(f"{where}: recorded {_short(recorded[key])}, got nothing")
            elif key not in recorded:
                out.append(f"{where}: not recorded, got {_short(actual[key])}")
            else:
                out.extend(differences(recorded[key], actual[key], where))
        return out
    if isinstance(recorded, list) and isinstance(actual, list) and len(recorded) == len(actual):
        out = []
        for index, (want, got) in enumerate(zip(recorded, actual, strict=True)):
            out.extend(differences(want, got, f"{path}[{index}]"))
        return out
    if recorded == actual:
        return []
    return [f"{path or 'line'}: recorded {_short(recorded)}, got {_short(actual)}"]


def _parse(rt: Runtime, text: str) -> Any:
    try:
        return rt.loads(text)
    except ValueError:
        return None


class _Candidate:
    """A recording this process may be replaying, with its own client-id map."""

    def __init__(self, index: int, invocation: dict[str, Any], cwd: str) -> None:
        self.index = index
        self.id: str = invocation["id"]
        self.timeline: list[Any] = invocation["timeline"]
        self.status = int(invocation["status"])
        self.cwd_from: str = invocation.get("cwd") or ""
        self.cwd_to = cwd
        self.ids: dict[str, Any] = {}

    def step(self, position: int) -> Any:
        return self.timeline[position] if position < len(self.timeline) else None

    def localized(self, text: str) -> str:
        """``text`` with the recorded working directory replaced by this run's."""
        if self.cwd_from and self.cwd_from != self.cwd_to:
            return text.replace(json_escaped(self.cwd_from), json_escaped(self.cwd_to))
        return text

    def output(self, rt: Runtime, recorded: str) -> tuple[str, Any]:
        """The line to write for a recorded stdout line, and its parsed message (or None)."""
        text = self.localized(recorded)
        message = _parse(rt, text)
        if message is not None and rewrite_response(message, self.ids):
            text = rt.dumps(message)
        return text, message

    def accepts(self, rt: Runtime, recorded: str, text: str, got: Any) -> list[str]:
        """How the client's line ``text`` (parsed: ``got``) differs from the recorded one
        (nothing: it matches, and a client request id is mapped)."""
        want = _parse(rt, self.localized(recorded))
        if want is None or got is None:
            same = self.localized(recorded) == text
            return [] if same else [f"line: recorded {_clip(recorded)}, got {_clip(text)}"]
        found = differences(without_client_ids(want), without_client_ids(got))
        recorded_id = client_request_id(want)
        if not found and recorded_id is not None:
            self.ids[rt.dumps(recorded_id)] = client_request_id(got)
        return found


class _Replay:
    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.plan = rt.plan
        self.scale = float(rt.plan.get("time_scale", 0.0))
        self.timeout = float(rt.plan.get("stdin_timeout", 60.0))
        self.label = ""
        self.committed = False
        self.candidates: list[_Candidate] = []

    # which recordings

    def _recorded_argv(self, invocation: dict[str, Any]) -> list[str]:
        cwd = invocation.get("cwd") or ""
        args = [a.replace(cwd, self.rt.cwd) if cwd else a for a in invocation["argv"]]
        return normalized_argv(args, list(self.plan.get("ignore_args", ())))

    def start(self) -> None:
        """Every unreplayed recording with this argv is a candidate."""
        rt = self.rt
        argv = normalized_argv(rt.argv, list(self.plan.get("ignore_args", ())))
        used = rt.state.update(lambda state: list(state.get("replayed", [])))
        invocations: list[dict[str, Any]] = self.plan["invocations"]
        self.candidates = [
            _Candidate(index, invocation, rt.cwd)
            for index, invocation in enumerate(invocations)
            if index not in used and self._recorded_argv(invocation) == argv
        ]
        if not self.candidates:
            self.mismatch(self._no_invocation(argv, used))
        rt.journal.write("candidates", interactions=[c.id for c in self.candidates])

    def _no_invocation(self, argv: list[str], used: list[int]) -> str:
        invocations = self.plan["invocations"]
        lines = [f"no recorded {self.plan['name']} invocation has these arguments: {argv}"]
        left = [inv for i, inv in enumerate(invocations) if i not in used]
        if not left:
            lines.append(f"  all {len(invocations)} recorded invocation(s) were already replayed")
        for invocation in left[:3]:
            want = self._recorded_argv(invocation)
            extra = [a for a in argv if a not in want]
            missing = [a for a in want if a not in argv]
            lines.append(
                f"  nearest {invocation['id']}: {want}\n"
                f"    not recorded: {extra or '-'}; recorded but missing: {missing or '-'}"
            )
        return "\n".join(lines)

    def commit(self) -> _Candidate:
        """Bind to the first candidate no other process has claimed."""
        if self.committed:
            return self.candidates[0]
        indexes = [c.index for c in self.candidates]

        def take(state: dict[str, Any]) -> int | None:
            used = state.setdefault("replayed", [])
            free = next((index for index in indexes if index not in used), None)
            if free is not None:
                used.append(free)
            return free

        chosen = self.rt.state.update(take)
        if chosen is None:
            self.mismatch(
                "every recording this run matched ("
                + ", ".join(c.id for c in self.candidates)
                + ") was already replayed by another process"
            )
        self.candidates = [c for c in self.candidates if c.index == chosen]
        self.committed = True
        self.label = self.candidates[0].id
        self.rt.journal.write("replaying", interaction=self.label)
        return self.candidates[0]

    # playing

    def read_line(self, recorded: str, number: int) -> tuple[str, Any]:
        rt = self.rt
        line = rt.next_line(self.timeout)
        if line is None:
            self.mismatch(
                f"stdin line {number}: waited {self.timeout:g} s for the client to send "
                f"{_clip(recorded)}; it sent nothing"
            )
        if line is rt.EOF:
            self.mismatch(
                f"stdin line {number}: the client closed stdin; the recording has "
                f"{_clip(recorded)} next"
            )
        assert isinstance(line, bytes)
        text = line.decode("utf-8", "replace")
        got = _parse(rt, text)
        rt.journal.write("stdin", **({"message": got} if got is not None else {"raw": text}))
        return text, got

    def expect_line(self, position: int, number: int) -> None:
        rt = self.rt
        first = self.candidates[0]
        text, got = self.read_line(first.step(position)[2], number)
        differing = [(c, c.accepts(rt, c.step(position)[2], text, got)) for c in self.candidates]
        matching = [c for c, found in differing if not found]
        if not matching:
            found = differing[0][1]
            self.label = self.label or first.id
            self.mismatch(
                f"stdin line {number} differs from the recording:\n  " + "\n  ".join(found)
            )
        self.candidates = matching

    def expect_eof(self) -> None:
        rt = self.rt
        line = rt.next_line(self.timeout)
        if line is rt.EOF:
            return
        self.commit()
        if line is None:
            self.mismatch(
                f"the recording's client closed stdin here; this one kept it open "
                f"{self.timeout:g} s"
            )
        assert isinstance(line, bytes)
        self.mismatch(
            f"the recording's client closed stdin here; this one sent "
            f"{_clip(line.decode('utf-8', 'replace'))}"
        )

    def write(self, position: int) -> None:
        rt = self.rt
        candidates = self.candidates
        lines = [c.output(rt, c.step(position)[2]) for c in candidates]
        chosen = 0
        if any(text != lines[0][0] for text, _ in lines[1:]):
            chosen = candidates.index(self.commit())  # they part here: bind to one
        step = candidates[chosen].step(position)
        text, message = lines[chosen]
        if step[0] == "err":
            rt.stderr(text)
            return
        rt.journal.write(
            "stdout", **({"message": message} if message is not None else {"raw": text})
        )
        rt.write_bytes((text if step[3] else text + "\n").encode("utf-8"))

    def mismatch(self, text: str) -> None:
        rt = self.rt
        where = f"{self.plan['source']}" + (f" {self.label}" if self.label else "")
        message = f"{where}: {text}"
        rt.state.update(lambda state: state.setdefault("mismatches", []).append(message))
        rt.stderr(f"stuntset replay: {message}\n")
        rt.exit(MISMATCH_STATUS)

    def play(self) -> int:
        """Play until the recording ends; its exit status."""
        import time

        self.start()
        last_t, last_at = 0.0, time.monotonic()
        position = number = 0
        while True:
            if len(self.candidates) == 1:
                self.commit()
            steps = [c.step(position) for c in self.candidates]
            kinds = {None if step is None else step[0] for step in steps}
            if len(kinds) > 1:
                steps = [self.commit().step(position)]  # the candidates part here
            step = steps[0]
            if step is None:
                return self.commit().status
            kind, t = step[0], float(step[1])
            if kind == "in":
                number += 1
                self.expect_line(position, number)
            elif kind == "eof":
                self.expect_eof()
            else:
                due = last_at + max(0.0, t - last_t) * self.scale
                if (wait := due - time.monotonic()) > 0:
                    self.rt.sleep(wait, scaled=False)
                self.write(position)
            last_t, last_at = t, time.monotonic()
            position += 1


def run(rt: Runtime) -> None:
    rt.open_journal()
    replay = _Replay(rt)
    status = replay.play()
    if status < 0:
        # the recorded client ended the process with a signal: wait for it to do so again
        import _signal  # type: ignore[import-not-found]
        import posix

        while rt.next_line(replay.timeout) not in (None, rt.EOF):
            pass
        rt.journal.write("exit", code=status)
        _signal.signal(-status, _signal.SIG_DFL)
        posix.kill(posix.getpid(), -status)
    rt.exit_code = status
