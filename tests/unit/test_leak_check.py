"""The leak check (``stuntset.checks.leaks``) without pytest's plugin: each kind of leak fails
it with what the resource is and where it came from; what is closed, kept or ignored passes."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from stuntset._leak_check import (
    PYTEST_HINT,
    LeakSnapshot,
    check_no_leaks,
    marker_options,
    pytest_temp_roots,
)
from stuntset.checks import ResourceLeak
from stuntset.doubles.model import transport
from stuntset.errors import UsageError
from stuntset.script import Script, Stall, Text

HERE = Path(__file__).name
FAST = 0.05  # settle: what these tests leave open stays open


def check(snapshot: LeakSnapshot) -> str:
    with pytest.raises(ResourceLeak) as raised:
        snapshot.check(settle=FAST)
    return str(raised.value)


@pytest.fixture
def waiting_child() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for child in started:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(10)


@pytest.mark.slow
def test_a_child_process_left_running_is_named_with_its_command_and_origin(
    waiting_child: list[subprocess.Popen[bytes]],
) -> None:
    snapshot = LeakSnapshot.take(where="my block")
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    waiting_child.append(child)
    message = check(snapshot)
    assert message.startswith("my block: 2 resource(s) opened here were still open at the end:")
    assert f"[processes] child process {child.pid}: {sys.executable} -c import sys" in message
    assert f"started at {__file__}:" in message
    assert "in test_a_child_process_left_running_is_named_with_its_command_and_origin" in message
    # its stdin pipe is open too, and the report says who holds the other end
    assert "[pipes] pipe write end (fd" in message
    assert f"other end in child process {child.pid}" in message
    assert "snapshot.keep(obj) lets one outlive the block on purpose" in message


def test_a_child_process_waited_for_is_not_a_leak() -> None:
    with check_no_leaks():
        subprocess.run([sys.executable, "-c", "pass"], check=True)


def test_a_kept_process_and_its_pipe_pass(waiting_child: list[subprocess.Popen[bytes]]) -> None:
    snapshot = LeakSnapshot.take()
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    waiting_child.append(child)
    assert child.stdin is not None
    snapshot.keep(child)
    snapshot.keep(child.stdin)
    snapshot.check(settle=FAST)


@pytest.mark.slow
def test_a_listening_socket_left_open_is_named_with_its_address_and_origin() -> None:
    snapshot = LeakSnapshot.take(kinds=["sockets"])
    server = socket.create_server(("127.0.0.1", 0))
    port, fd = server.getsockname()[1], server.fileno()
    try:
        message = check(snapshot)
    finally:
        server.close()
    assert f"[sockets] tcp socket 127.0.0.1:{port} -> listening (fd {fd})" in message
    assert f"opened at {__file__}:" in message


@pytest.mark.slow
def test_a_connected_socket_names_both_ends() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        snapshot = LeakSnapshot.take(kinds=["sockets"])
        client = socket.create_connection(("127.0.0.1", port))
        accepted, _ = server.accept()
        try:
            message = check(snapshot)
        finally:
            client.close()
            accepted.close()
    assert f"-> 127.0.0.1:{port}" in message  # the client's end
    assert f"tcp socket 127.0.0.1:{port} -> 127.0.0.1:" in message  # the accepted end


@pytest.mark.slow
def test_a_socket_dropped_unclosed_is_reported_with_what_the_collector_said() -> None:
    snapshot = LeakSnapshot.take(kinds=["sockets"])

    def drop() -> None:
        sock = socket.socket()
        cycle: list[object] = [sock]
        cycle.append(cycle)  # only the cyclic collector frees it

    drop()
    message = check(snapshot)
    assert "[sockets] tcp socket 0.0.0.0:0 -> not connected (fd " in message
    assert f"), dropped without being closed\n      opened at {__file__}:" in message
    assert "[collector] the garbage collector said: ResourceWarning: unclosed <socket" in message


def test_closed_sockets_and_socket_pairs_pass() -> None:
    with check_no_leaks(kinds=["sockets", "pipes"]):
        left, right = socket.socketpair()
        left.close()
        right.close()
        read, write = os.pipe()
        os.close(read)
        os.close(write)


@pytest.mark.slow
def test_a_unix_socket_pair_left_open_is_reported() -> None:
    snapshot = LeakSnapshot.take(kinds=["sockets"])
    left, right = socket.socketpair()
    try:
        message = check(snapshot)
    finally:
        left.close()
        right.close()
    assert message.count("[sockets] unix socket unnamed -> unnamed") == 2


def test_a_pending_asyncio_task_is_named_with_its_coroutine() -> None:
    async def worker() -> None:
        await asyncio.Event().wait()

    async def main() -> None:
        async with check_no_leaks(kinds=["tasks"]) as snapshot:
            asyncio.get_running_loop().create_task(worker(), name="forgotten")
            assert snapshot.kinds == {"tasks"}

    with pytest.raises(ResourceLeak) as raised:
        asyncio.run(main())
    message = str(raised.value)
    assert "[tasks] asyncio task 'forgotten' running " in message
    assert "worker()" in message
    assert f"suspended at {__file__}:" in message


def test_a_forgotten_task_the_garbage_collector_destroyed_is_still_a_leak() -> None:
    """asyncio holds tasks weakly: a forgotten task waiting on an event only it references is
    a reference cycle, and a collection during the block removes it from ``all_tasks()``
    before the check looks (seen: a run of the fast tier on the newest dependencies did not
    raise). asyncio tells the loop's exception handler, and the check listens there."""
    import gc

    async def worker() -> None:
        await asyncio.Event().wait()

    handlers: list[object] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        handlers.append(loop.get_exception_handler())
        try:
            async with check_no_leaks(kinds=["tasks"]):
                loop.create_task(worker(), name="collected")  # noqa: RUF006 - forgotten on purpose
                await asyncio.sleep(0)  # it runs and waits: now nothing refers to it
                gc.collect()
                assert not [t for t in asyncio.all_tasks() if t.get_name() == "collected"]
        finally:
            handlers.append(loop.get_exception_handler())

    with pytest.raises(ResourceLeak) as raised:
        asyncio.run(main())
    message = str(raised.value)
    assert "[tasks] asyncio task 'collected' running " in message
    assert "worker()" in message
    assert "destroyed by the garbage collector while pending" in message
    assert handlers == [None, None]  # the loop's own handler is back after the block


def test_finished_and_kept_tasks_pass() -> None:
    async def main() -> None:
        async with check_no_leaks(kinds=["tasks"]) as snapshot:
            done = asyncio.get_running_loop().create_task(asyncio.sleep(0))
            await done
            kept = asyncio.get_running_loop().create_task(asyncio.Event().wait())
            snapshot.keep(kept)
        kept.cancel()

    asyncio.run(main())


def test_the_async_check_waits_for_the_loop_to_finish_closing_a_dropped_generator() -> None:
    """A consumer that breaks out of an async generator leaves its closing to the loop (a
    task of its own); the check waits for it, or the loop's end would cancel it mid-cleanup
    (what claude-agent-sdk's ``query()`` did under load: its message stream never closed)."""
    cleaned: list[str] = []

    async def parts() -> AsyncIterator[int]:
        try:
            yield 1
            yield 2
        finally:
            for _ in range(10):  # cleanup that takes loop turns (an SDK waiting for its CLI)
                await asyncio.sleep(0)
            cleaned.append("done")

    async def main() -> None:
        async with check_no_leaks():
            async for _ in parts():
                break  # dropped unclosed: the loop's finaliser closes it
        assert cleaned == ["done"]

    asyncio.run(main())


def test_a_temporary_directory_left_behind_is_named_with_its_origin() -> None:
    snapshot = LeakSnapshot.take(kinds=["temp_dirs"])
    left = tempfile.mkdtemp(prefix="stuntset-leak-test-")
    try:
        message = check(snapshot)
    finally:
        shutil.rmtree(left)
    assert f"[temp_dirs] temporary directory {left}" in message
    assert f"created at {__file__}:" in message


def test_removed_kept_and_ignored_temporary_directories_pass(tmp_path: Path) -> None:
    ignored = Path(tempfile.gettempdir()) / f"stuntset-ignored-{os.getpid()}"
    with check_no_leaks(kinds=["temp_dirs"]) as snapshot:
        with tempfile.TemporaryDirectory():
            pass
        kept = tempfile.mkdtemp()
        snapshot.keep(kept)
        (tmp_path / "not-in-the-temporary-directory").mkdir()
    shutil.rmtree(kept)
    snapshot = LeakSnapshot.take(kinds=["temp_dirs"], ignore_paths=[ignored])
    ignored.mkdir()
    try:
        snapshot.check(settle=FAST)
    finally:
        ignored.rmdir()


def client_of(script: Script) -> httpx2.Client:
    return httpx2.Client(transport=transport(script), base_url="http://double")


CHAT = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.slow
def test_an_in_process_stream_its_client_did_not_close_is_reported() -> None:
    client = client_of(Script.of([Text("one two"), Stall()]))
    snapshot = LeakSnapshot.take(kinds=["streams"])
    response = client.send(
        client.build_request("POST", "/v1/chat/completions", json=CHAT), stream=True
    )
    chunks = response.iter_bytes()
    next(chunks)  # reads on no further, and does not close it
    message = check(snapshot)
    response.close()
    client.close()
    assert "[streams] model double stream: POST /v1/chat/completions (in-process response of" in (
        message
    )
    assert "(still open)" in message


def test_streams_closed_early_or_read_to_the_end_pass() -> None:
    client = client_of(Script.of([Text("one two")], [Text("three")]))
    with client, check_no_leaks(kinds=["streams"]):
        with client.stream("POST", "/v1/chat/completions", json=CHAT) as response:
            next(response.iter_bytes())  # stops early, closes
        client.post("/v1/chat/completions", json=CHAT).read()  # read to the end


def test_a_block_that_raised_is_not_checked() -> None:
    made: list[str] = []

    def leak_then_fail() -> None:
        with check_no_leaks():
            made.append(tempfile.mkdtemp())
            raise RuntimeError("its own error")

    with pytest.raises(RuntimeError, match="its own error"):
        leak_then_fail()
    shutil.rmtree(made[0])


def test_kinds_are_checked_and_validated() -> None:
    with pytest.raises(UsageError, match=r"unknown leak kind\(s\) \['threads'\]"):
        LeakSnapshot.take(kinds=["threads"])
    snapshot = LeakSnapshot.take(ignore=["tasks", "streams"])
    assert "tasks" not in snapshot.kinds
    snapshot.close()
    snapshot.close()  # idempotent
    with pytest.raises(UsageError, match="keep"):
        LeakSnapshot.take().keep(1.5)


def test_keep_takes_a_descriptor_number_and_a_pid() -> None:
    snapshot = LeakSnapshot.take(kinds=["pipes", "processes"])
    read, write = os.pipe()
    try:
        snapshot.keep(read)
        snapshot.keep(write)
        snapshot.keep(123456789)  # not a descriptor: a pid
        snapshot.check(settle=FAST)
    finally:
        os.close(read)
        os.close(write)


def test_the_marker_options() -> None:
    assert marker_options((), {}, "t") == (True, ())
    assert marker_options((False,), {}, "t") == (False, ())
    assert marker_options((), {"ignore": "tasks"}, "t") == (True, ("tasks",))
    with pytest.raises(UsageError, match=r"t: stuntset_leaks takes `True`/`False`"):
        marker_options(("no",), {}, "t")
    with pytest.raises(UsageError, match=r"unknown kind\(s\) \['threads'\]"):
        marker_options((), {"ignore": ["threads"]}, "t")
    assert "@pytest.mark.stuntset_leaks(False)" in PYTEST_HINT


def test_pytest_temp_roots(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PYTEST_DEBUG_TEMPROOT", str(tmp_path))
    roots = pytest_temp_roots(tmp_path / "base")
    assert roots[0].startswith(str(tmp_path / "pytest-of-"))
    assert roots[1] == str(tmp_path / "base")


def test_a_folder_that_was_already_there_is_never_blamed(tmp_path: Path) -> None:
    # issue #33: a mkdir(exist_ok=True) of a folder already in the temporary directory (a
    # project checked out there recording a cassette) was reported as the block's
    root = tmp_path / "temp"
    (root / "project" / "tests").mkdir(parents=True)
    with check_no_leaks(kinds=["temp_dirs"], temp_root=root):
        (root / "project").mkdir(exist_ok=True)
        os.makedirs(root / "project" / "tests" / "cassettes", exist_ok=True)
        with pytest.raises(FileExistsError):
            os.mkdir(root / "project")
    snapshot = LeakSnapshot.take(kinds=["temp_dirs"], temp_root=root)
    (root / "new").mkdir(exist_ok=True)  # a folder the block made is still one
    (root / "new").mkdir(exist_ok=True)
    message = check(snapshot)
    assert message.count("[temp_dirs]") == 1
    assert f"temporary directory {root / 'new'}" in message


LIBRARY = '''
import socket, threading
from concurrent.futures import ThreadPoolExecutor

sockets = []
stop = threading.Event()
pool = ThreadPoolExecutor(1)  # a library's logging pool, for the process's life


def _open():
    sockets.append(socket.socket())


def log_in_the_background():
    pool.submit(_open).result()


def default_loop():
    """What asyncio.get_event_loop() does outside a running loop (litellm's service logger)."""
    import asyncio

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    return loop


def _work(ready):
    sockets.append(socket.socket())  # a connection kept for the process's life
    ready.set()
    stop.wait()


def start_worker(daemon=True):
    """A library's own background thread (think litellm's logging worker)."""
    ready = threading.Event()
    thread = threading.Thread(target=_work, args=(ready,), daemon=daemon, name="fakelib")
    thread.start()
    ready.wait(10)
    return thread
'''


@pytest.fixture
def fakelib(tmp_path: Path) -> Iterator[tuple[Any, Path]]:
    """A module that stands for an installed library, in its own folder (``libraries=``)."""
    import importlib

    folder = tmp_path / "site"
    folder.mkdir()
    (folder / "fakelib_issue33.py").write_text(LIBRARY)
    sys.path.insert(0, str(folder))
    module = importlib.import_module("fakelib_issue33")
    try:
        yield module, folder
    finally:
        module.stop.set()
        module.pool.shutdown()
        for sock in module.sockets:
            sock.close()
        sys.path.remove(str(folder))
        del sys.modules["fakelib_issue33"]


def test_a_socket_a_library_keeps_on_its_own_running_thread_is_not_the_tests(
    fakelib: tuple[Any, Path],
) -> None:
    # issue #33: litellm's logging thread holds a socket for the process's life; an app
    # cannot close it
    module, folder = fakelib
    for daemon in (True, False):
        with check_no_leaks(kinds=["sockets"], libraries=[folder]):
            thread = module.start_worker(daemon=daemon)
        assert thread.is_alive()
        module.stop.set()
        thread.join(10)
        module.stop.clear()
        for sock in module.sockets:
            sock.close()


def test_a_librarys_socket_is_reported_once_its_thread_ended_or_outside_libraries(
    fakelib: tuple[Any, Path],
) -> None:
    module, folder = fakelib
    snapshot = LeakSnapshot.take(kinds=["sockets"], libraries=[folder])
    thread = module.start_worker()
    module.stop.set()
    thread.join(10)  # its thread is gone: nothing lives on for the process
    assert "[sockets] tcp socket 0.0.0.0:0 -> not connected" in check(snapshot)
    module.sockets.pop().close()
    module.stop.clear()
    snapshot = LeakSnapshot.take(kinds=["sockets"])  # the module is not an installed package
    module.start_worker()
    assert "[sockets] tcp socket 0.0.0.0:0 -> not connected" in check(snapshot)


def test_a_library_call_on_a_thread_the_test_started_is_still_the_tests(
    fakelib: tuple[Any, Path],
) -> None:
    import threading

    module, folder = fakelib
    snapshot = LeakSnapshot.take(kinds=["sockets"], libraries=[folder])
    ready = threading.Event()

    def mine() -> None:  # the test's own thread, calling into the library
        module._work(ready)

    worker = threading.Thread(target=mine, daemon=True)
    worker.start()
    assert ready.wait(10)
    message = check(snapshot)
    assert "[sockets] tcp socket 0.0.0.0:0 -> not connected" in message
    assert worker.is_alive()


def test_a_socket_a_librarys_pool_opens_running_its_own_work_is_the_librarys(
    fakelib: tuple[Any, Path],
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    module, folder = fakelib
    with check_no_leaks(kinds=["sockets"], libraries=[folder]):
        module.log_in_the_background()  # litellm's logging: its pool, its callback
    snapshot = LeakSnapshot.take(kinds=["sockets"], libraries=[folder])
    with ThreadPoolExecutor(1) as pool:  # the test's own work on a pool is the test's
        opened = pool.submit(lambda: socket.socket()).result()
        try:
            assert "[sockets] tcp socket 0.0.0.0:0 -> not connected" in check(snapshot)
        finally:
            opened.close()


def test_the_default_event_loop_a_library_gave_the_thread_is_not_the_blocks(
    fakelib: tuple[Any, Path],
) -> None:
    # issue #33, as litellm 1.8x does it: asyncio.get_event_loop() on the main thread makes
    # the thread a default loop, whose self-pipe (a socket pair) lives with the thread
    module, folder = fakelib
    try:
        with check_no_leaks(kinds=["sockets"], libraries=[folder]):
            loop = module.default_loop()
    finally:
        loop.close()
        asyncio.set_event_loop(None)
    snapshot = LeakSnapshot.take(kinds=["sockets"], libraries=[folder])
    mine = asyncio.new_event_loop()  # the test's own default loop is the test's
    asyncio.set_event_loop(mine)
    try:
        assert check(snapshot).count("[sockets] unix socket unnamed -> unnamed") == 2
    finally:
        mine.close()
        asyncio.set_event_loop(None)
