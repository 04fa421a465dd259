"""Doubles: stand-ins that speak the real wire protocols, driven by scripts.

``stuntset.doubles.model``: the model API doubles (OpenAI Chat Completions, OpenAI Responses,
Anthropic Messages) as one ASGI app, in-process or over loopback.
``stuntset.doubles.cli``: fake agent command-line programs (``claude``, ``codex``).
"""
