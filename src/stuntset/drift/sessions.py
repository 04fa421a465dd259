"""The ``claude-session`` column's plans: which catalog scenarios it plays as one
``ClaudeSDKClient`` session, with which script and which queries.

A scenario is played as a session where its turns line up with the session's queries on both
sides — the real ``claude`` makes one model request per query, the fake plays one agent turn
per query — so what the later queries bring is compared, not hidden behind a difference the
``claude`` column already shows. Each played scenario exercises one thing a session does:

``happy_path``
    a follow-up query in the same session (``FOLLOW_UP``; the script gets a turn that answers
    it), after the first query's response;
``multi_turn``
    its three turns, one query each;
``rate_limited``
    a query the CLI itself retries (a 429, then the answer: both retry, as the real one does),
    then a follow-up query;
``stuck``
    the first query stalls and is interrupted (``client.interrupt()``); the follow-up query
    in the same session then completes;
``spawn_missing``
    ``connect()`` itself fails.

Not played (``not played`` in the table): ``long_stream`` and ``slow`` (one answer streamed
long or late: nothing a second query adds to the ``claude`` column's run), the tool, approval
and question scenarios (the ``claude`` column compares their one query; a second would add
nothing) and the other
model-API faults (the CLI retries a broken model request that the one-turn script does not
answer again; a follow-up's turn would answer the retry, and the queries would no longer
line up with the script's turns).
"""

from __future__ import annotations

from stuntset import scenarios as catalog
from stuntset.script import Script, Text, Usage

from .runners import PROMPT

__all__ = ["FOLLOW_UP", "SESSION_SCENARIOS", "session_plan"]

#: The session's second query.
FOLLOW_UP = "One more question, in the same session"
_ANSWER: list[Text | Usage] = [Text("Still here: the same session, the next answer."), Usage(20, 9)]

#: The scenarios played as a session, and how many queries each sends (see the module docs).
SESSION_SCENARIOS = {
    "happy_path": "follow-up",
    "rate_limited": "follow-up",
    "multi_turn": "each turn",
    "spawn_missing": "one",
    "stuck": "follow-up",
}


def session_plan(name: str) -> tuple[Script, list[str]] | None:
    """The script both sides play and the queries the session sends, or ``None`` when
    scenario ``name`` is not played as a session."""
    how = SESSION_SCENARIOS.get(name)
    if how is None:
        return None
    script = catalog.build(name)
    if how == "one":
        return script, [PROMPT]
    if how == "each turn":
        return script, [PROMPT] + [f"{FOLLOW_UP} ({n})" for n in range(2, len(script.turns) + 1)]
    return script.then(_ANSWER), [PROMPT, FOLLOW_UP]
