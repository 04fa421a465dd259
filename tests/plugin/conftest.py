"""The plugin's tests run pytest inside pytest (``pytester.runpytest``, in-process). pytester
snapshots ``sys.modules`` around each inner run and drops every module first imported inside
it, so a stuntset module an inner run imported first comes back as a *second* module object
the next time — with classes that ``isinstance`` does not recognise (an event from one
``stuntset.events`` fails the contract check of another). Importing them here, in the outer
process, before any inner run, keeps one identity whatever order xdist hands the tests out."""

import stuntset
import stuntset.cassettes.session
import stuntset.cassettes.snapshot
import stuntset.checks
import stuntset.checks._pytest
import stuntset.contract
import stuntset.driver
import stuntset.events
import stuntset.log
import stuntset.providers
import stuntset.scenarios
import stuntset.script  # noqa: F401
