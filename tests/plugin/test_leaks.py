"""The leak check at teardown, through pytester: on for tests that use a stuntset fixture or
marker, each kind failing with its message; off with the marker, for unrelated tests, and for
resources of wider-scoped fixtures; everywhere with ``--stuntset-leaks=all``."""

from __future__ import annotations

import pytest

QUIET = ("-p", "no:hypothesispytest", "-p", "no:respx", "-p", "no:cacheprovider")

TESTS = """
import asyncio, shutil, socket, subprocess, sys, tempfile
import httpx2, pytest
from stuntset.script import Script, Stall, Text

KEEP = []
CHAT = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}

@pytest.fixture(scope="module", autouse=True)
def reaper():
    yield
    for thing in KEEP:
        if isinstance(thing, subprocess.Popen):
            thing.stdin.close()
            thing.wait(10)
        elif isinstance(thing, str):
            shutil.rmtree(thing)
        elif hasattr(thing, "close"):
            thing.close()

@pytest.fixture(scope="module")
def module_server():
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server

@pytest.fixture
def tidy_server():
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server

@pytest.fixture
def leaky_server():
    server = socket.create_server(("127.0.0.1", 0))
    KEEP.append(server)
    return server

@pytest.fixture
def anyio_backend():
    return "asyncio"

def sleeper():
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)
    KEEP.append(child)
    return child

def test_process(stuntset_leaks):
    sleeper()

def test_socket(stuntset_leaks):
    KEEP.append(socket.create_server(("127.0.0.1", 0)))

@pytest.mark.anyio
async def test_task(stuntset_leaks):
    KEEP.append(asyncio.get_running_loop().create_task(asyncio.Event().wait(), name="orphan"))

def test_temp_dir(tool_calls):
    KEEP.append(tempfile.mkdtemp(prefix="stuntset-plugin-leak-"))

@pytest.mark.stand_in(Script.of([Text("one two"), Stall()]))
def test_stream(stand_in):
    client = httpx2.Client(transport=stand_in.transport(), base_url="http://x")
    response = client.send(client.build_request("POST", "/v1/chat/completions", json=CHAT),
                           stream=True)
    chunks = response.iter_bytes()
    next(chunks)
    KEEP.append((client, response, chunks))

@pytest.mark.stand_in(Script.of([Text("one two"), Stall()]))
def test_stream_closed(stand_in):
    with httpx2.Client(transport=stand_in.transport(), base_url="http://x") as client:
        with client.stream("POST", "/v1/chat/completions", json=CHAT) as response:
            next(response.iter_bytes())

@pytest.mark.stuntset_leaks(False)
def test_switched_off(stuntset_leaks, tool_calls):
    assert stuntset_leaks is None
    KEEP.append(tempfile.mkdtemp(prefix="stuntset-plugin-off-"))

@pytest.mark.stuntset_leaks(ignore=["temp_dirs"])
def test_kind_ignored(tool_calls):
    KEEP.append(tempfile.mkdtemp(prefix="stuntset-plugin-ignored-"))

def test_unrelated_test_is_not_checked():
    KEEP.append(tempfile.mkdtemp(prefix="stuntset-plugin-unrelated-"))

@pytest.mark.stuntset_leaks
def test_opted_in():
    KEEP.append(tempfile.mkdtemp(prefix="stuntset-plugin-opted-in-"))

def test_kept(stuntset_leaks):
    child = sleeper()
    stuntset_leaks.keep(child)
    stuntset_leaks.keep(child.stdin)

def test_failed_test_reports_its_own_failure(stuntset_leaks):
    KEEP.append(tempfile.mkdtemp(prefix="stuntset-plugin-failed-"))
    assert False, "its own failure"

def test_wider_and_tidy_fixtures_pass(module_server, tidy_server, stuntset_leaks, tmp_path):
    (tmp_path / "x").mkdir()

def test_a_leaky_function_fixture_is_caught(leaky_server, stuntset_leaks):
    pass

@pytest.mark.stuntset_leaks("yes")
def test_bad_marker():
    pass
"""


def outcome(result: pytest.RunResult) -> dict[str, str]:
    found: dict[str, str] = {}
    for report in result.reprec.getreports("pytest_runtest_logreport"):  # type: ignore[attr-defined]
        name = report.nodeid.rsplit("::", 1)[-1]
        if report.failed:
            found[name] = f"{report.when} failed"
        else:
            found.setdefault(name, "passed")
    return found


# Tests real time: each leaking test waits out the check's settle period (SETTLE_SECONDS,
# 1 s of real time, not configurable from pytest) before it counts what is still open.
@pytest.mark.slow
def test_each_kind_of_leak_fails_its_test_at_teardown(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(TESTS)
    result = pytester.runpytest(*QUIET)
    assert outcome(result) == {
        "test_process": "teardown failed",
        "test_socket": "teardown failed",
        "test_task": "teardown failed",
        "test_temp_dir": "teardown failed",
        "test_stream": "teardown failed",
        "test_stream_closed": "passed",
        "test_switched_off": "passed",
        "test_kind_ignored": "passed",
        "test_unrelated_test_is_not_checked": "passed",
        "test_opted_in": "teardown failed",
        "test_kept": "passed",
        "test_failed_test_reports_its_own_failure": "call failed",
        "test_wider_and_tidy_fixtures_pass": "passed",
        "test_a_leaky_function_fixture_is_caught": "teardown failed",
        "test_bad_marker": "setup failed",
    }
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_process*",
            "*ResourceLeak: *::test_process: 2 resource(s) opened here were still "
            "open at the end:*",
            "*[[]processes[]] child process *: *python* -c import sys; sys.stdin.read()*",
            "*started at *.py:* in sleeper*",
            "*[[]pipes[]] pipe write end (fd *",
            "*other end in child process *",
            "*to switch the check off, @pytest.mark.stuntset_leaks(False).*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_socket*",
            "*[[]sockets[]] tcp socket 127.0.0.1:* -> listening (fd *",
            "*opened at *.py:* in test_socket*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_task*",
            "*[[]tasks[]] asyncio task 'orphan' running Event.wait(), suspended at *locks.py*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_temp_dir*",
            "*[[]temp_dirs[]] temporary directory */stuntset-plugin-leak-*",
            "*created at *.py:* in test_temp_dir*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_stream*",
            "*[[]streams[]] model double stream: POST /v1/chat/completions (in-process response "
            "of 1 chunk(s)) (still open)*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_opted_in*",
            "*temporary directory */stuntset-plugin-opted-in-*",
        ]
    )
    result.stdout.fnmatch_lines(
        ["*ERROR at teardown of test_a_leaky_function_fixture_is_caught*", "*tcp socket*listening*"]
    )
    result.stdout.fnmatch_lines(["*stuntset_leaks takes `True`/`False` and `ignore=[[]kinds[]]`*"])
    # a failed test reports its own failure only
    # (the error sections' lines: with CI set pytest's short summary repeats them in full)
    leaks = [
        line for line in result.outlines if line.startswith("E   ") and "ResourceLeak: " in line
    ]
    assert len(leaks) == 7
    assert not [line for line in leaks if "test_failed_test_reports_its_own_failure" in line]


ALL = """
import glob, shutil, tempfile

def test_unrelated():
    tempfile.mkdtemp(prefix="stuntset-all-")

def test_cleanup():
    for path in glob.glob(tempfile.gettempdir() + "/stuntset-all-*"):
        shutil.rmtree(path)
"""


def test_all_mode_checks_every_test_and_off_mode_none(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(ALL)
    result = pytester.runpytest(*QUIET, "--stuntset-leaks=all")
    assert outcome(result) == {"test_unrelated": "teardown failed", "test_cleanup": "passed"}
    result.stdout.fnmatch_lines(["*temporary directory */stuntset-all-*"])
    pytester.makeini("[pytest]\nstuntset_leaks = off\n")
    pytester.makepyfile(ALL.replace("def test_unrelated():", "def test_unrelated(tool_calls):"))
    assert outcome(pytester.runpytest(*QUIET)) == {
        "test_unrelated": "passed",
        "test_cleanup": "passed",
    }


def test_a_bad_ini_value_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nstuntset_leaks = sometimes\n")
    pytester.makepyfile("def test_x(): pass\n")
    result = pytester.runpytest(*QUIET)
    result.stderr.fnmatch_lines(["*ini stuntset_leaks = 'sometimes': expected one of*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR


DROPPED = """
import asyncio, warnings
import pytest

CLOSED = []

class Stream:
    closed = False

    def close(self):
        self.closed = True
        CLOSED.append(self)

    def __del__(self):
        if not self.closed:
            warnings.warn("Unclosed <Stream>", ResourceWarning)

@pytest.fixture
def anyio_backend():
    return "asyncio"

async def messages():
    stream = Stream()
    try:
        yield 1
        yield 2
    finally:
        for _ in range(10):  # cleanup that takes loop turns (an SDK waiting for its CLI)
            await asyncio.sleep(0)
        stream.close()

@pytest.mark.anyio
async def test_breaks_out_early(stuntset_leaks):
    async for _ in messages():
        break  # dropped unclosed: the loop's finaliser task closes it

def test_its_stream_was_closed():
    assert len(CLOSED) == 1
"""


def test_an_async_test_s_dropped_generator_is_closed_before_its_loop_ends(
    pytester: pytest.Pytester,
) -> None:
    """An async test that breaks out of an async generator leaves its closing to a task of
    the loop's; the check waits for it on the test's loop, or the loop's end (anyio's runner
    cancels every task) cuts it off mid-cleanup and the stream is dropped unclosed (what
    claude-agent-sdk's ``query()`` did: "ResourceWarning: Unclosed <MemoryObjectReceiveStream>")."""
    pytester.makepyfile(DROPPED)
    result = pytester.runpytest(*QUIET, "-W", "error")
    assert outcome(result) == {
        "test_breaks_out_early": "passed",
        "test_its_stream_was_closed": "passed",
    }
    assert "Unclosed <Stream>" not in result.stdout.str()


def test_the_plugins_fixture_list_is_every_fixture_it_defines() -> None:
    """``__all__`` (and from it the fixtures that switch the leak check on) is the plugin's
    fixtures: one added without its name fails here."""
    import stuntset.pytest_plugin as plugin

    defined = {
        name
        for name, value in vars(plugin).items()
        if not name.startswith("_") and type(value).__name__ == "FixtureFunctionDefinition"
    }
    assert len(defined) > 20  # the check sees pytest's fixture objects
    assert sorted(defined) == plugin.__all__
    assert "mcp_double" in plugin._LEAK_FIXTURES


MCP_ONLY = """
import tempfile

def test_leaks_with_only_the_mcp_double(mcp_double):
    tempfile.mkdtemp(prefix="stuntset-mcp-leak-")

def test_cleanup():
    import glob, shutil
    for path in glob.glob(tempfile.gettempdir() + "/stuntset-mcp-leak-*"):
        shutil.rmtree(path)
"""


def test_a_leaking_test_that_uses_only_mcp_double_fails(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(MCP_ONLY)
    result = pytester.runpytest(*QUIET)
    assert outcome(result) == {
        "test_leaks_with_only_the_mcp_double": "teardown failed",
        "test_cleanup": "passed",
    }
    result.stdout.fnmatch_lines(["*temporary directory */stuntset-mcp-leak-*"])
