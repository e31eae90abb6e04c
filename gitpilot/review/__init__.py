"""Adaptive Codex review: review budgets (``budget``, ``risk``), review rounds and planning (``codex``)."""
