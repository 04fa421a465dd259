"""The bodies of the ``stuntset`` commands, one module per command: ``stuntset.cli`` parses
the arguments (click) and calls them; each body builds what its command serves or runs from
the packages below it and prints what it shows.

They were each package's ``_cli.py``; here they sit above every package they mount (a
``serve --console`` mounts the console, ``console`` runs the daemon and a model double), so
no package imports upward for its command. Like ``stuntset.cli`` this package is an entry
point of the package map (docs/design.md): it may import any part, and no part imports it.

- ``serve``: ``stuntset serve``, the model double as a standalone server
- ``mcp``: ``stuntset mcp serve``, the MCP double on stdio or Streamable HTTP
- ``fake_cli``: ``stuntset cli claude|codex``, a fake CLI run by hand
- ``daemon``: ``stuntset daemon``, the session host
- ``console``: ``stuntset console``, the web console with a host and a model double
- ``eval``: ``stuntset eval``, eval files run N times and reported
- ``log``: ``stuntset log doctor``'s table
"""
