"""``optimize enable|disable claude``: git pilot's hooks in ``.claude/settings.local.json``.

The file, its events and matchers; the editing (merge, exclude, byte-for-byte restore) is
``agent_hooks``. The hook command is the interpreter running git pilot now, by absolute path,
with ``-m gitpilot hook claude``: it works from the agent's shell whatever its PATH holds (a
version-manager shim on PATH would cost ~80 ms on every tool call).
"""

from __future__ import annotations

from pathlib import Path

from gitpilot.optimizer import agent_hooks

SETTINGS = Path(".claude") / "settings.local.json"
#: Tools whose results the detector and the learner read; other tools never start the hook.
MATCHER = "Bash|Edit|Write|MultiEdit|NotebookEdit"
EVENTS: tuple[tuple[str, str | None], ...] = (
    ("SessionStart", None),
    ("UserPromptSubmit", None),
    ("PostToolUse", MATCHER),
    ("PostToolUseFailure", MATCHER),
    ("Stop", None),
    ("SessionEnd", None),
)
TARGET = agent_hooks.Target("claude", SETTINGS, "claude-hooks.json", EVENTS, "Claude Code")

