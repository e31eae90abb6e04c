"""The repository optimizer: failure-loop detection, learned command alternatives and capability
pruning (the source map, context for the agent, is ``gitpilot.context.sourcemap``).

Everything here is deterministic and local. The agent-hook side (``hookfast``, the handler of
``git pilot hook claude|codex``, with ``events``, ``codex_events``, ``loop``, ``learn`` and
``statefile``) is imported by that hot path, so this package's
``__init__`` stays empty: importing ``gitpilot.optimizer.loop`` must not pull in anything else.
"""
