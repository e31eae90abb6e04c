"""``optimize enable|disable codex``: git pilot's hooks in the project's ``.codex/hooks.json``.

Codex 0.171 reads hooks next to each config layer, the project's among them
(``<repo>/.codex/hooks.json``, Claude Code's shape). The editing (merge beside the user's own
groups, the ``info/exclude`` line, the byte-for-byte restore on disable, tracked and symlinked
files refused) is ``agent_hooks``; this module names the file and the events.

Codex runs a project's hooks only in a trusted project, and only hooks the user has trusted
(their ``sha256`` is recorded under ``[hooks.state]`` in ``~/.codex/config.toml`` when the user
approves them in Codex's ``/hooks`` review): git pilot never trusts them on the user's behalf.
Events followed: ``SessionStart`` (startup context), ``UserPromptSubmit`` and ``Stop`` (turns),
``PostToolUse`` for shell commands and patches (``codex_events`` reads the payloads).
"""

from __future__ import annotations

from pathlib import Path

from gitpilot.optimizer import agent_hooks

SETTINGS = Path(".codex") / "hooks.json"
MATCHER = "Bash|apply_patch"
EVENTS: tuple[tuple[str, str | None], ...] = (
    ("SessionStart", None),
    ("UserPromptSubmit", None),
    ("PostToolUse", MATCHER),
    ("Stop", None),
)
TARGET = agent_hooks.Target("codex", SETTINGS, "codex-hooks.json", EVENTS, "Codex")
TRUST_NOTE = ("Codex runs them only once trusted: in a trusted project, open codex and approve them in "
              "/hooks (git pilot never trusts hooks for you)")

