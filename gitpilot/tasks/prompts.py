"""What git pilot says to an agent session: the launch prompt, the v0.4.0 launch prompt, the
continuation and the delta message, and the session's allow-list.

All short and deterministic: the substance is in files the agent reads (the capsule, the delta),
so the prompt only points at them and states the repository's rule.

The v0.4.0 launch prompt (``leanloop.enabled = false``) is ``V04_LAUNCH_PROMPT``: the text the
project recorded as "the v0.4.0 launch prompt" when it was founded, which the capsule benchmark
measures its baseline with (``bench/capsule.py``; a test keeps the two identical). The v0.4.0
release's own source is not in this repository, its history, fixtures or docs: this is the
project's record of it, not a copy checked against v0.4.0.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

# The only commands a session may run without asking: run, stop, resume and the rest stay out.
ALLOWED_TOOLS: tuple[str, ...] = (
    "Bash(git pilot check*)",
    "Bash(git pilot codex plan*)",
    "Bash(git pilot codex review*)",
    "Bash(git pilot review-budget*)",
    "Bash(git pilot state*)",
)
CONTINUATION_LIMIT = 512

RULE = (
    "Rule for this repository: run checks only through `git pilot check` (PASS lines, or a failure "
    "excerpt with its log path); open a full log (`git pilot check --log NAME`) only for a failing "
    "check; record progress with `git pilot state` (--status ready|working|blocked, --pr N, "
    "--ci passing|failing|pending, --blocker \"reason\")."
)


def planning_line(planner_enabled: bool) -> str:
    if planner_enabled:
        return "Plan at most once, through `git pilot codex plan`; review through `git pilot codex review`."
    return "Do not plan with Codex (planning is off here); review through `git pilot codex review`."


def launch_prompt(task_id: str, capsule_path: Path, capsule_bytes: int, planner_enabled: bool) -> str:
    """The short prompt that starts a session: read the capsule, follow the rule."""
    return (
        f"git pilot task {task_id[:12]}. Read {capsule_path} first ({capsule_bytes} bytes): it holds the "
        "task verbatim, this repository's instructions and the documentation sections that matter, "
        "each with its source path and lines; open a source it lists only if you need more.\n"
        f"{RULE}\n{planning_line(planner_enabled)}"
    )


V04_LAUNCH_PROMPT = """You are working in the git repository at {root}.
Before you change anything:
1. Read the project rules in {rules}.
2. Read the git pilot configuration in {config}.
3. Read the task below.
4. Read every context file listed here:
{files}

Task:
{task}
"""


def v04_prompt(root: Path, rule_files: Sequence[str], config_path: str | None, context_files: Sequence[str],
               task: str) -> str:
    """The v0.4.0 launch prompt (``leanloop.enabled = false``): read the rules, the config, the
    task and every context file; no capsule, no LeanLoop rule."""
    return V04_LAUNCH_PROMPT.format(root=root, rules=", ".join(rule_files) or "(none)",
                                    config=config_path or "(none)",
                                    files="\n".join(f"- {p}" for p in context_files), task=task)


def continuation(task_id: str, note: str = "") -> str:
    """Task and context unchanged: at most 512 bytes, nothing to re-read."""
    text = (
        f"git pilot: task {task_id[:12]} continues. Context unchanged since you read it: what you read "
        "stays authoritative, do not re-read it. Continue from the current git and PR state "
        "(git status, git log, the PR and its CI); checks via `git pilot check`, progress via "
        "`git pilot state`."
    )
    if note:
        text = f"{note.strip()} {text}"
    encoded = text.encode("utf-8")
    if len(encoded) > CONTINUATION_LIMIT:
        text = encoded[: CONTINUATION_LIMIT - 3].decode("utf-8", "ignore").rstrip() + "..."
    return text


def delta_message(task_id: str, delta_path: Path, sources: int, sections: int, note: str = "") -> str:
    """Context changed: read only the delta file."""
    text = (
        f"git pilot: task {task_id[:12]} continues. Its context changed since you read it: read "
        f"{delta_path} ({sources} source(s), {sections} section(s) changed); everything else you read "
        "stays authoritative. Continue from the current git and PR state; checks via "
        "`git pilot check`, progress via `git pilot state`."
    )
    return f"{note.strip()} {text}" if note else text
