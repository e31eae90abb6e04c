"""The repository optimizer: failure-loop detection, learned command alternatives, capability pruning
and the source map.

Everything here is deterministic and local. The agent-hook side (``events``, ``loop``, ``learn``,
``statefile``) is imported by the ``git pilot hook claude`` hot path, so this package's
``__init__`` stays empty: importing ``gitpilot.optimizer.loop`` must not pull in anything else.
"""
