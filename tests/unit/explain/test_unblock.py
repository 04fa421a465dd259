"""What the deadline does where it cannot interrupt the test's thread (``unblock``): the fake
CLI processes still running are killed, the model doubles' stalled responses end; and a
malformed ``stuntset_deadline`` marker is a usage error naming the test."""

from __future__ import annotations

import signal
import subprocess
from typing import Any

import pytest

from stuntset.explain._pytest import unblock
from stuntset.explain.timeline import Timeline


@pytest.mark.fake_claude("stuck", allow_unused_turns=True)  # killed whenever it is
def test_a_running_fake_cli_is_killed(fake_claude: Any) -> None:
    timeline = Timeline()
    timeline.watch("cli", fake_claude)
    process = subprocess.Popen(
        [str(fake_claude.path), "-p", "hi", "--output-format", "stream-json", "--verbose"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline()  # its first line: it runs, and has journaled its start
        unblock(timeline)
        assert process.wait(timeout=30) == -signal.SIGKILL
    finally:
        process.kill()
        process.wait()
        if process.stdout is not None:
            process.stdout.close()


@pytest.mark.stand_in("happy_path", allow_unused_turns=True)
def test_a_model_doubles_stalls_are_released(stand_in: Any) -> None:
    timeline = Timeline()
    timeline.watch("model", stand_in)
    unblock(timeline)
    assert getattr(stand_in, "double", stand_in).closing.is_set()


def test_a_deadline_marker_takes_one_number(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_bad_deadline="""
        import pytest

        @pytest.mark.stuntset_deadline(1, 2)
        @pytest.mark.stand_in("happy_path", allow_unused_turns=True)
        def test_x(stand_in):
            pass
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-n", "0")
    assert "stuntset_deadline takes one number of seconds" in result.stdout.str()
    assert result.ret != 0
