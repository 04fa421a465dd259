"""Refresh (or check) the vendored gitleaks rules: ``src/stuntset/cassettes/rules/``.

    python tools/refresh_gitleaks.py NEW_GITLEAKS_TOML --commit SHA   # vendor a new version
    python tools/refresh_gitleaks.py --check                          # the vendored one is intact

A new file is accepted only if every rule it has still loads (translated to Python's regex
syntax, compiled): then it is copied verbatim, and ``SOURCE`` records the commit and the
SHA-256. ``--check`` fails (exit 1) when the file is not the one ``SOURCE`` names. Get the file
from https://github.com/gitleaks/gitleaks (``config/gitleaks.toml``, MIT: keep
``LICENSE-gitleaks`` beside it). Nothing here goes on the network.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
from pathlib import Path

RULES = Path(__file__).resolve().parent.parent / "src" / "stuntset" / "cassettes" / "rules"
SOURCE = RULES / "SOURCE"
TOML = RULES / "gitleaks.toml"


def recorded_sha() -> str:
    found = re.search(r"^sha256: ([0-9a-f]{64})$", SOURCE.read_text(), re.MULTILINE)
    if found is None:
        raise SystemExit(f"error: {SOURCE}: no 'sha256:' line")
    return found.group(1)


def check() -> int:
    actual = hashlib.sha256(TOML.read_bytes()).hexdigest()
    if actual != recorded_sha():
        print(f"error: {TOML}: sha256 {actual} is not the one {SOURCE} records", file=sys.stderr)
        return 1
    return 0


def refresh(new: Path, commit: str) -> int:
    from stuntset.cassettes.secret_rules import load_rules

    try:
        rules, _ = load_rules(new)
    except Exception as error:  # any rule that does not load: refuse the file
        print(f"error: {new}: its rules do not load: {error}", file=sys.stderr)
        return 2
    data = new.read_bytes()
    TOML.write_bytes(data)
    sha = hashlib.sha256(data).hexdigest()
    text = re.sub(r"^commit: .*$", f"commit: {commit}", SOURCE.read_text(), flags=re.MULTILINE)
    SOURCE.write_text(re.sub(r"^sha256: .*$", f"sha256: {sha}", text, flags=re.MULTILINE))
    print(f"vendored {len(rules)} rules from {new} (commit {commit}, sha256 {sha})")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("toml", nargs="?", type=Path, help="a new config/gitleaks.toml")
    parser.add_argument("--commit", default="unknown", help="the gitleaks commit it is from")
    parser.add_argument("--check", action="store_true", help="only check the vendored file")
    args = parser.parse_args(argv)
    if args.check or args.toml is None:
        return check()
    if not args.toml.is_file():
        print(f"error: {args.toml}: no such file", file=sys.stderr)
        return 2
    return refresh(args.toml, args.commit)


if __name__ == "__main__":
    raise SystemExit(main())
