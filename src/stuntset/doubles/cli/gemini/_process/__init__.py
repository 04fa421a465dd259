"""The fake ``gemini`` process (runs in the installed executable: built-ins and
``stuntset.doubles.cli._runtime`` only). ``run`` is its main; the test process imports these
modules only to warm their bytecode."""
