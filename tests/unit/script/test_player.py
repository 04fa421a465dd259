from __future__ import annotations

import threading

import pytest

from stuntset.errors import ScriptExhausted, UnusedTurns
from stuntset.script import Match, Script, ScriptPlayer, Text, Turn, TurnRequest, turn


def ask(text: str = "", **kw: object) -> TurnRequest:
    return TurnRequest(input_text=text, **kw)  # type: ignore[arg-type]


def test_turns_play_in_order_by_default() -> None:
    player = ScriptPlayer(Script.of([Text("a")], [Text("b")]))
    assert [player.next_turn(ask()).index for _ in range(2)] == [0, 1]
    player.assert_all_used()


def test_match_selects_a_turn_by_request_content() -> None:
    script = Script.of(
        turn(Text("weather"), match=Match(contains="weather")),
        turn(Text("anything")),
    )
    player = ScriptPlayer(script)
    assert player.next_turn(ask("hello")).index == 1
    assert player.next_turn(ask("the weather?")).index == 0


def test_times_repeats_a_turn() -> None:
    player = ScriptPlayer(Script.of(Turn(steps=(Text("x"),), times=2), [Text("y")]))
    assert [player.next_turn(ask()).index for _ in range(3)] == [0, 0, 1]


def test_exhaustion_says_what_happened_and_what_to_do() -> None:
    player = ScriptPlayer(Script.of([Text("a")], name="tiny"))
    player.next_turn(ask())
    with pytest.raises(
        ScriptExhausted,
        match=r"(?s)'tiny' has no turn for request #2 .*all 1 turns were used.*add a turn",
    ):
        player.next_turn(ask("again"))


def test_no_match_lists_the_remaining_turns() -> None:
    player = ScriptPlayer(Script.of(turn(Text("a"), match=Match(model="gpt"), name="gpt only")))
    with pytest.raises(
        ScriptExhausted,
        match=r"(?s)no remaining turn matches it.*turn 0: 'gpt only' \[text\] when model='gpt'",
    ):
        player.next_turn(ask(model="claude"))


def test_long_inputs_are_shortened_in_messages() -> None:
    player = ScriptPlayer(Script())
    with pytest.raises(ScriptExhausted, match=r"x{77}\.\.\."):
        player.next_turn(ask("x" * 200))


def test_the_function_answers_when_no_turn_is_left() -> None:
    script = Script.of([Text("first")]).then()
    script = Script(turns=script.turns, function=lambda r: [Text(f"echo {r.input_text}")])
    player = ScriptPlayer(script)
    assert player.next_turn(ask("a")).index == 0
    played = player.next_turn(ask("b"))
    assert played.index == 1
    assert played.turn.steps == (Text("echo b"),)
    assert player.next_turn(ask("c")).index == 2


def test_unused_turns_fail_with_the_opt_out_named() -> None:
    player = ScriptPlayer(Script.of([Text("a")], [Text("b")]))
    player.next_turn(ask())
    assert [i for i, _ in player.unused()] == [1]
    with pytest.raises(
        UnusedTurns, match=r"(?s)1 scripted turn\(s\).*turn 1: \[text\].*allow_unused_turns=True"
    ):
        player.assert_all_used()


def test_concurrent_requests_each_get_a_distinct_turn() -> None:
    player = ScriptPlayer(Script.of(Turn(steps=(Text("x"),), times=200)))
    threads = [
        threading.Thread(target=lambda: [player.next_turn(ask()) for _ in range(50)])
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(player.played) == 200
    player.assert_all_used()


def test_next_open_plays_as_next_turn_and_makes_the_request_when_read() -> None:
    script = Script.of(Turn(steps=(Text("x"),), times=2), [Text("y")])
    made: list[str] = []

    def make(text: str) -> TurnRequest:
        made.append(text)
        return ask(text)

    open_player, plain = ScriptPlayer(script, cycle=True), ScriptPlayer(script, cycle=True)
    picked = [open_player.next_open(make, f"r{i}") for i in range(7)]
    assert [p and p[0] for p in picked] == [plain.next_turn(ask()).index for _ in range(7)]
    assert made == []  # nothing made until ``played`` is read
    assert (open_player.requests, open_player.cycles) == (plain.requests, plain.cycles) == (7, 2)
    assert [p.request.input_text for p in open_player.played] == [f"r{i}" for i in range(7)]
    assert [p.index for p in open_player.played] == [p.index for p in plain.played]


def test_next_open_leaves_matched_functional_or_spent_scripts_to_next_turn() -> None:
    matched = ScriptPlayer(Script.of(turn(Text("a"), match=Match(model="m"))))
    assert matched.next_open(ask, "") is None
    spent = ScriptPlayer(Script.of([Text("a")]), keep=1)
    assert spent.next_open(ask, "first") == (0, spent.script.turns[0])
    assert spent.next_open(ask, "second") is None
    assert spent.requests == 1  # the refused one is not counted: next_turn counts it
    assert [p.request.input_text for p in spent.played] == ["first"]
    assert spent.played.maxlen == 1
