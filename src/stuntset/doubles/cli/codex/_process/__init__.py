"""The fake ``codex`` process: the modules the installed executable runs.

Everything here runs inside the fake process, started as ``python -IS`` by the launcher
(``stuntset.doubles.cli._install``), and imports interpreter built-ins and
``stuntset.doubles.cli._runtime`` only (see ``_runtime``). The launcher maps the packages
above it in without running their ``__init__``; this one is never imported there either.
``run`` parses the top-level command line and hands over; ``exec`` plays ``codex exec
--json``; ``app_server`` plays ``codex app-server`` (what its methods do in ``app_methods``,
its turns in ``app_turn``, their tool calls in ``app_tools``, what a request must look like in
``requests``); ``common`` holds what the two modes share.
"""
