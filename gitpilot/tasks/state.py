"""Compact task state: ``state.json`` in the task record, orchestration facts only.

It holds the status, the session ids, the PR number, the CI state, the blockers, the review
rounds used, whether planning was done, and the quota wait; never prompts, responses or
transcripts (keys outside ``KEYS`` are dropped on every write). Every update is a new commit
on the task ref through ``TaskStore.update`` (compare-and-swap, retried), so concurrent
writers (the agent's ``git pilot state``, the review and quota machinery) never lose each
other's facts: each change is applied to the state as it is at commit time.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from gitpilot.errors import PilotError, UsageError
from gitpilot.repo import Repo
from gitpilot.store.tasks import TaskStore

STATE_FILE = "state.json"
# What an agent or user may set with ``git pilot state --status``.
USER_STATUSES = ("ready", "working", "blocked", "waiting-quota")
# What git pilot itself records about the session.
SESSION_STATUSES = ("new", "stopped", "failed")
CI_STATES = ("passing", "failing", "pending")
KEYS = ("status", "sessions", "pr", "ci", "blockers", "review_rounds_used", "planned", "quota_wait",
        "agent", "updated")
MAX_BLOCKER = 200


def empty_state() -> dict[str, Any]:
    return {"status": "new", "sessions": [], "pr": None, "ci": None, "blockers": [],
            "review_rounds_used": 0, "planned": False, "quota_wait": None}


def parse_state(data: bytes | None) -> dict[str, Any]:
    """The state in ``data`` with defaults filled in; unknown keys and bad JSON are ignored."""
    state = empty_state()
    if not data:
        return state
    try:
        raw = json.loads(data)
    except ValueError:
        return state
    if isinstance(raw, dict):
        state.update({k: v for k, v in raw.items() if k in KEYS})
    return state


def state_bytes(state: Mapping[str, Any]) -> bytes:
    clean = {k: state[k] for k in KEYS if k in state}
    return (json.dumps(clean, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def read_state(repo: Repo, tid: str) -> dict[str, Any] | None:
    """The task's state, or None when there is no task record."""
    store = TaskStore(repo)
    if store.tip(tid) is None:
        return None
    return parse_state(store.read_file(tid, STATE_FILE))


def update_state(repo: Repo, tid: str, change: Callable[[dict[str, Any]], None], message: str,
                 *, create: bool = False) -> dict[str, Any]:
    """Apply ``change`` (mutating the state dict) in one new commit on the task ref (CAS).

    Without ``create`` a missing task record is an error (a typo in an id must not make one).
    """
    store = TaskStore(repo)
    if not create and store.tip(tid) is None:
        raise PilotError(f"no task {tid[:12]}: start it with git pilot run")
    result: dict[str, Any] = {}

    def apply(files: dict[str, bytes]) -> dict[str, bytes | None]:
        state = parse_state(files.get(STATE_FILE))
        change(state)
        result.clear()
        result.update(state)
        return {**files, STATE_FILE: state_bytes(state)}

    store.update(tid, apply, message)
    return result


def set_facts(repo: Repo, tid: str, *, pr: int | None = None, ci: str | None = None,
              blockers: tuple[str, ...] = (), clear_blockers: bool = False, status: str | None = None,
              now: str | None = None) -> dict[str, Any]:
    """``git pilot state``: validate and record the given facts (one commit)."""
    if ci is not None and ci not in CI_STATES:
        raise UsageError(f"--ci must be one of {', '.join(CI_STATES)}, not {ci!r}")
    if status is not None and status not in USER_STATUSES:
        raise UsageError(f"--status must be one of {', '.join(USER_STATUSES)}, not {status!r}")
    if pr is not None and pr <= 0:
        raise UsageError(f"--pr must be a positive pull request number, not {pr}")
    cleaned = []
    for b in blockers:
        line = " ".join(b.split())
        if not line:
            raise UsageError("--blocker needs a reason")
        from gitpilot.redact import redact

        line = redact(line)  # a reason may quote a credential; the task record never keeps one
        cleaned.append(line if len(line) <= MAX_BLOCKER else line[: MAX_BLOCKER - 1] + "…")

    def change(state: dict[str, Any]) -> None:
        if pr is not None:
            state["pr"] = pr
        if ci is not None:
            state["ci"] = ci
        current = [] if clear_blockers else list(state.get("blockers") or [])
        for line in cleaned:
            if line not in current:
                current.append(line)
        state["blockers"] = current
        if status is not None:
            state["status"] = status
            if status != "waiting-quota":
                state["quota_wait"] = None
        if now:
            state["updated"] = now

    parts = [f"{k}={v}" for k, v in (("status", status), ("pr", pr), ("ci", ci)) if v is not None]
    parts += [f"blocker={b}" for b in cleaned] + (["blockers cleared"] if clear_blockers else [])
    return update_state(repo, tid, change, "pilot: state " + (", ".join(parts) or "unchanged"))


def summary_line(state: Mapping[str, Any]) -> str:
    """One short line: status, PR, CI, blockers, review rounds, planning, quota wait."""
    status = str(state.get("status") or "new")
    wait = state.get("quota_wait")
    if status == "waiting-quota" and isinstance(wait, dict) and wait.get("resume_at"):
        status = (f"waiting-quota — resume scheduled {wait.get('resume_at')} "
                  f"({wait.get('provider') or 'agent'} limit resets {wait.get('reset_at')}; "
                  f"session {wait.get('session')})")
    parts = [status]
    if state.get("pr"):
        parts.append(f"PR #{state['pr']}")
    if state.get("ci"):
        parts.append(f"CI {state['ci']}")
    rounds = state.get("review_rounds_used") or 0
    if rounds:
        parts.append(f"review rounds {rounds}")
    if state.get("planned"):
        parts.append("planned")
    blockers = state.get("blockers") or []
    if blockers:
        parts.append(f"blocked: {blockers[0]}" + (f" (+{len(blockers) - 1})" if len(blockers) > 1 else ""))
    return " · ".join(parts)
