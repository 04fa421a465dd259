"""Why a red test is red (issue 28), one concept a module:

- ``timeline``: one test's timeline of what every double it used saw and did (the report's
  ``stuntset`` section), read by ``sources`` from the doubles' own journals;
- ``trace``: the trace files kept for a failed test (self-contained HTML + JSONL), served by
  ``viewer`` (``stuntset console --trace FILE``);
- ``deadline``: the test-bound deadline that ends a hung test naming what is pending;
- ``window``: where two long values first differ (a path and a window of text), for the
  mismatch messages of cassettes, snapshots and checks.

``_pytest`` is the plugin's glue. Nothing is imported here: the plugin imports what a test
needs when it needs it.
"""
