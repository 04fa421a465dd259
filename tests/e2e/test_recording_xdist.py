"""Real pytest-xdist: two workers recording one cassette keep both recordings (issue 32). In
e2e: three fresh interpreters with every plugin cost several seconds (25 s on a loaded
machine); the lock and merge themselves are tested in tests/unit/cassettes."""

from __future__ import annotations

import textwrap

import pytest

from stuntset.cassettes import load_cassette


@pytest.mark.slow  # two xdist workers in a pytest subprocess, ~25 s
@pytest.mark.real_time
def test_two_xdist_workers_recording_one_cassette_keep_both(pytester: pytest.Pytester) -> None:
    """Real pytest-xdist: two tests record through the proxy into the same cassette, both
    recordings open at once (each waits for the other to start); both are kept."""
    pytester.makepyfile(
        test_shared=textwrap.dedent(
            """
            from pathlib import Path

            import httpx2
            import pytest

            import stuntset
            from stuntset.cassettes.record import record
            from stuntset.script import Script, Text
            from stuntset.waiting import wait_for

            SHARED = Path(__file__).parent / "shared.jsonl"

            @pytest.mark.parametrize("who", ["a", "b"])
            def test_record(who):
                script = Script.of([Text("hello " + who)])
                with stuntset.serve(script) as upstream:
                    with record(upstream.url("openai"), SHARED) as recording:
                        body = {"model": "m", "messages": [{"role": "user", "content": who}]}
                        httpx2.post(recording.url + "/chat/completions", json=body, timeout=30)
                        (SHARED.parent / f"started-{who}").touch()
                        other = "b" if who == "a" else "a"
                        wait_for(lambda: (SHARED.parent / f"started-{other}").exists(),
                                 timeout=60)
            """
        )
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2")
    result.assert_outcomes(passed=2)
    cassette = load_cassette(pytester.path / "shared.jsonl")
    asked = sorted(i.request.body["messages"][0]["content"] for i in cassette.interactions)
    assert asked == ["a", "b"]
