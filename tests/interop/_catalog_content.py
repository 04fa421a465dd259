"""What the catalog's content scenarios answer, as every SDK should read it back: per model
turn, the text and the tool calls (name, arguments); the usage the scripts report. Shared by
the interop tests of every wire."""

from __future__ import annotations

CONTENT = {
    "happy_path": [("Hello! How can I help you today?", [])],
    "tool_use": [
        ("Let me look at that file.", [("read_file", {"path": "a.txt"})]),
        ("The file says: hello from a.txt", []),
    ],
    "needs_approval": [
        ("I will clean the build directory.", [("bash", {"command": "rm -rf build/"})]),
        ("Done: the build directory is clean.", []),
    ],
    "input_request": [("Before I deploy, I need one detail.Thanks, deploying now.", [])],
    "interleaved_streaming": [
        (
            "Reading both files.",
            [("read_file", {"path": "a.txt"}), ("read_file", {"path": "b.txt"})],
        ),
        ("a.txt says alpha, b.txt says beta.", []),
    ],
    "long_stream": [(" ".join(f"word{i}" for i in range(400)), [])],
    "multi_turn": [(f"Answer number {i}.", []) for i in (1, 2, 3)],
    "rate_limited": [("Sorry for the wait. Here is the answer.", [])],
    "overloaded": [("Back in service. Here is the answer.", [])],
    "slow": [("This answer takes its time to arrive.", [])],
}
USAGE = {"happy_path": (12, 9), "tool_use": (40, 18), "long_stream": (10, 400)}
