"""The fake ``claude`` process: the modules the installed executable runs.

Everything here runs inside the fake process, started as ``python -IS`` by the launcher
(``stuntset.doubles.cli._install``), and imports interpreter built-ins and
``stuntset.doubles.cli._runtime`` only (see ``_runtime``). The launcher maps the packages
above it in without running their ``__init__``; this one is never imported there either.
``run`` reads the command line and serves stdin, ``turn`` renders one turn of the plan (how
it ends in ``endings``), ``args`` parses the options, ``common`` holds what they share (the
choice of the scripted turn among them); ``tools``, ``faults`` and ``hooks`` load only when a
tool op or a fault plays, or a settings file or an SDK hook is in play.
"""
