"""Cassettes: recordings of real traffic as canonical JSON Lines, secret-free by construction.

``write_cassette`` scrubs (``Scrubber``: header allow-list, credential fields, key shapes,
env values) and refuses to write bytes that still look like a secret;
``load_cassette`` reads one back with errors naming file, line and field, its system prompts
and tool schemas resolved from the folder's ``_blocks.jsonl`` (``stuntset.cassettes.blocks``);
``verify`` scans a tree for cassettes and JSONL files holding secrets.
``install_cli_recorder`` tees a real agent CLI into a cassette; ``install_cli_replay`` installs
a fake that plays it back.
"""

from stuntset.cassettes.cli_record import install_cli_recorder
from stuntset.cassettes.cli_replay import ReplayedCli, install_cli_replay
from stuntset.cassettes.format import (
    FORMAT,
    VERSION,
    Cassette,
    CassetteError,
    Frame,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    SecretFound,
    dumps_cassette,
    is_cassette,
    load_cassette,
    loads_cassette,
    write_cassette,
)
from stuntset.cassettes.scrub import Finding, Scrubber, scan_for_secrets
from stuntset.cassettes.verify import verify_tree

__all__ = [
    "FORMAT",
    "VERSION",
    "Cassette",
    "CassetteError",
    "Finding",
    "Frame",
    "Interaction",
    "RecordedRequest",
    "RecordedResponse",
    "ReplayedCli",
    "Scrubber",
    "SecretFound",
    "dumps_cassette",
    "install_cli_recorder",
    "install_cli_replay",
    "is_cassette",
    "load_cassette",
    "loads_cassette",
    "scan_for_secrets",
    "verify_tree",
    "write_cassette",
]
