"""Agent adapters: one class per agent CLI behind the interface in ``base``.

``ADAPTERS`` maps the ``--agent`` name to its class; ``get(name)`` returns an instance. A new
agent is one module with an ``Adapter`` subclass and one line here.

The files an agent keeps on the machine are read in one module per agent: ``claude_files``
(transcripts, settings), ``codex_files`` (rollouts, ``$CODEX_HOME``), with ``sessionfiles`` for
what they share. ``git pilot hook codex`` imports ``codex_files`` on every tool call, so this
``__init__`` imports nothing at load (``get`` imports the adapter it returns).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from gitpilot.agents.base import Adapter

ADAPTERS: dict[str, str] = {
    "claude": "gitpilot.agents.claude:ClaudeAdapter",
    "codex": "gitpilot.agents.codex:CodexAdapter",
    "copilot": "gitpilot.agents.copilot:CopilotAdapter",
    "pi": "gitpilot.agents.pi:PiAdapter",
    "grok": "gitpilot.agents.grok:GrokAdapter",
}


def get(name: str, env: Mapping[str, str] | None = None) -> Adapter:
    """The adapter for ``name`` (``claude``, ``codex``, ``copilot``, ``pi``, ``grok``); UsageError for
    an unknown agent."""
    import importlib

    from gitpilot.agents.base import Adapter
    from gitpilot.errors import UsageError

    target = ADAPTERS.get(name)
    if target is None:
        raise UsageError(f"unknown agent {name!r} (known: {', '.join(sorted(ADAPTERS))})")
    module, _, attr = target.partition(":")
    cls = getattr(importlib.import_module(module), attr)
    adapter = cls(env=env)
    assert isinstance(adapter, Adapter)
    return adapter
