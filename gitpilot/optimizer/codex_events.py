"""Codex hook payloads as optimizer evidence (``git pilot hook codex``; stdlib only, hot path).

What codex-cli 0.171.0 sends (``fixtures/replays/codex-*.jsonl``, captured from the real binary
against the loopback mock): every payload has ``session_id``, ``turn_id`` (turn events),
``transcript_path`` (the session's rollout), ``cwd``, ``hook_event_name``, ``model`` and
``permission_mode``. ``SessionStart`` adds ``source``; ``UserPromptSubmit`` the ``prompt``;
``PreToolUse``/``PostToolUse`` ``tool_name`` (``Bash`` for shell commands, ``apply_patch`` for
edits), ``tool_input`` (``{"command": ...}``) and ``tool_use_id``; ``PostToolUse`` also
``tool_response``: the command's output as a string, **without its exit code**; ``Stop`` has
``last_assistant_message``.

The exit code is read from the rollout instead: by the time Codex runs ``PostToolUse`` it has
written the call's ``event_msg``/``item_completed`` record (``item.id`` is the ``tool_use_id``,
with ``exit_code`` and ``status``) to ``transcript_path``, near its end
(``agents.codex_files.completed_item`` reads it from the rollout's tail). A call whose record
is not found has status ``unknown``: it counts neither as a failure nor as a pass.
"""

from __future__ import annotations

import json
import re

from gitpilot.agents.codex_files import completed_item
from gitpilot.optimizer.events import FAIL, PASS, TOOL, UNKNOWN, Event, lifecycle_event

_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.M)
_MOVE_TO = re.compile(r"^\*\*\* Move to: (.+)$", re.M)


def codex_hook_event(payload: dict[str, object]) -> Event | None:
    """The evidence in one Codex hook payload (``None`` for events the optimizer does not follow)."""
    started = lifecycle_event("codex", payload, "turn_id")
    if started is not None or payload.get("hook_event_name") != "PostToolUse":
        return started
    session = str(payload.get("session_id") or "")
    cwd = str(payload.get("cwd") or "")
    tool = str(payload.get("tool_name") or "")
    tool_input = payload.get("tool_input")
    command = ""
    if isinstance(tool_input, dict) and isinstance(tool_input.get("command"), str):
        command = str(tool_input["command"])
    call = str(payload.get("tool_use_id") or "")
    if tool == "apply_patch":
        return Event("codex", TOOL, session, event_id=call, tool="apply_patch", status=PASS,
                     paths=patch_paths(command), cwd=cwd)
    response = payload.get("tool_response")
    text = response if isinstance(response, str) else json.dumps(response) if response is not None else ""
    status = exit_status(str(payload.get("transcript_path") or ""), call)
    return Event("codex", TOOL, session, event_id=call, tool=tool, command=command, status=status, text=text,
                 cwd=cwd)


def patch_paths(patch: str) -> tuple[str, ...]:
    """The files an ``apply_patch`` envelope adds, updates, deletes or moves to."""
    found = _PATCH_FILE.findall(patch) + _MOVE_TO.findall(patch)
    return tuple(sorted({p.strip() for p in found if p.strip()}))


def exit_status(rollout: str, call: str) -> str:
    """``pass``/``fail`` of call ``call`` from the rollout's ``item_completed`` record, else ``unknown``."""
    item = completed_item(rollout, call)
    if item is None:
        return UNKNOWN
    code = item.get("exit_code")
    if isinstance(code, int) and not isinstance(code, bool):
        return PASS if code == 0 else FAIL
    return FAIL if item.get("status") == "failed" else UNKNOWN
