"""The fake ``codex`` process: the modules the installed executable runs.

Everything here runs inside the fake process, started as ``python -IS`` by the launcher
(``stuntset.doubles.cli._install``), and imports interpreter built-ins and
``stuntset.doubles.cli._runtime`` only (see ``_runtime``). The launcher maps the packages
above it in without running their ``__init__``; this one is never imported there either.
``run`` parses the top-level command line and holds what both modes share, ``exec`` plays
``codex exec --json``, ``app_server`` (with ``app_turn``) ``codex app-server``.
"""
