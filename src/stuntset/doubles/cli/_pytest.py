"""The logic behind the ``fake_claude`` fixture (and ``fake_codex``): pytest-free, so the
plugin stays a few lines.

The fixture is configured by its same-named marker or by a call::

    @pytest.mark.fake_claude("tool_use")                   # scenario, Script or file path
    def test_a(fake_claude): ClaudeAgentOptions(cli_path=fake_claude.path)

    def test_b(fake_claude):
        claude = fake_claude(Script.of([Text("hi")]), time_scale=0)

Marker and call take the same keywords: ``allow_unused_turns``, the install knobs
(``time_scale``, ``startup_delay``, ``ignore_sigterm``) and, for a scenario name, its
parameters. At teardown every installed double must have used all its turns (and never run
out), unless ``allow_unused_turns=True``; then its files are removed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stuntset._plugin_support import script_from
from stuntset.doubles.cli import InstalledCli, install_cli
from stuntset.errors import UsageError

__all__ = ["CliFixture"]

_KNOBS = ("time_scale", "startup_delay", "ignore_sigterm")


class CliFixture:
    """What ``fake_claude`` yields: call it to install; attributes of the installed double
    (``path``, ``env()``, ``invocations``…) are reachable on it directly."""

    __test__ = False

    def __init__(self, program: str, bin_dir: Path, where: str, base: Path | None = None) -> None:
        self._program = program
        self._bin_dir = bin_dir
        self._where = where
        self._base = base
        self._installed: list[tuple[InstalledCli, bool]] = []

    def __call__(
        self, script: Any, *, allow_unused_turns: bool = False, **options: Any
    ) -> InstalledCli:
        """Install the fake (again: it replaces the previous one) playing ``script`` (a
        ``Script``, a scenario name or a .toml/.json path)."""
        __tracebackhide__ = True
        knobs = {key: options.pop(key) for key in _KNOBS if key in options}
        built = script_from(script, options, self._where, self._base)
        installed = install_cli(self._program, built, bin_dir=self._bin_dir, **knobs)
        self._installed.append((installed, allow_unused_turns))
        return installed

    @property
    def installed(self) -> InstalledCli:
        if not self._installed:
            raise UsageError(
                f"{self._where}: fake_{self._program} has no script yet: mark the test "
                f"@pytest.mark.fake_{self._program}(<Script | scenario name | path>) or call "
                f"fake_{self._program}(script) first"
            )
        return self._installed[-1][0]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.installed, name)

    def configure(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Install from a marker's arguments (nothing if the marker has none)."""
        __tracebackhide__ = True
        if args:
            self(args[0], **kwargs)
        elif kwargs:
            raise UsageError(
                f"{self._where}: @pytest.mark.fake_{self._program} needs the script first "
                f"(a Script, a scenario name or a path), got only {sorted(kwargs)}"
            )

    def verify(self) -> None:
        """Fail on unused or exhausted turns (per installed double, unless allowed)."""
        __tracebackhide__ = True
        for installed, allow_unused in self._installed:
            if allow_unused:
                installed.assert_not_exhausted()
            else:
                installed.assert_all_used()

    def close(self) -> None:
        for installed, _ in self._installed:
            installed.uninstall()
