"""``session.json`` in the task record: the task's agent sessions, every launched argv, and the
session manifest (exactly what the current session was given).

Layout: ``{"agent": NAME, "sessions": [{session_id, short_id, agent, mode, started, forked_from,
exit, failure}], "launches": [{at, what, argv, mode, exit}], "given": <session manifest> | null,
"task_file": PATH | null}``. The last entry of ``sessions`` is the current session (the quota
resume reads it the same way).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from gitpilot.repo import Repo
from gitpilot.store.tasks import TaskStore

SESSION_FILE = "session.json"


def parse_session(data: bytes | None) -> dict[str, Any]:
    record: dict[str, Any] = {"agent": None, "sessions": [], "launches": [], "given": None, "task_file": None}
    if not data:
        return record
    try:
        raw = json.loads(data)
    except ValueError:
        return record
    if isinstance(raw, dict):
        record.update({k: v for k, v in raw.items() if k in record})
    for key in ("sessions", "launches"):
        if not isinstance(record[key], list):
            record[key] = []
    return record


def session_bytes(record: Mapping[str, Any]) -> bytes:
    return (json.dumps(record, sort_keys=True, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def current(record: Mapping[str, Any]) -> dict[str, Any] | None:
    """The latest session entry, or None."""
    sessions = record.get("sessions") or []
    last = sessions[-1] if sessions else None
    return last if isinstance(last, dict) else None


def launch_entry(at: str, what: str, argv: Sequence[str], mode: str) -> dict[str, Any]:
    return {"at": at, "what": what, "argv": list(argv), "mode": mode, "exit": None}


def update_session(repo: Repo, tid: str, change: Any, message: str) -> dict[str, Any]:
    """Apply ``change(record)`` (mutating) to session.json in one CAS commit; returns the record.

    ``change`` may also touch ``state.json``: it receives (session record, state dict) when it
    takes two arguments, so the session and the state land in the same commit.
    """
    import inspect

    from gitpilot.tasks.state import STATE_FILE, parse_state, state_bytes

    result: dict[str, Any] = {}
    two = len(inspect.signature(change).parameters) == 2

    def apply(files: dict[str, bytes]) -> dict[str, bytes | None]:
        record = parse_session(files.get(SESSION_FILE))
        new: dict[str, bytes | None] = dict(files)
        if two:
            state = parse_state(files.get(STATE_FILE))
            change(record, state)
            new[STATE_FILE] = state_bytes(state)
        else:
            change(record)
        new[SESSION_FILE] = session_bytes(record)
        result.clear()
        result.update(record)
        return new

    TaskStore(repo).update(tid, apply, message)
    return result


def find_task(repo: Repo, ident: str) -> str:
    """The task id named by ``ident``: a task id or unique prefix (4+ hex), or a session id, short
    id or unique session-id prefix (4+ characters)."""
    from gitpilot.errors import PilotError

    store = TaskStore(repo)
    ids = store.list_ids()
    ident = ident.strip()
    low = ident.lower()
    if len(low) >= 4 and all(c in "0123456789abcdef" for c in low):
        matches = [t for t in ids if t.startswith(low)]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise PilotError(f"{ident!r} names {len(matches)} tasks: give more of the id")
    owners = []
    for tid in ids:
        rec = parse_session(store.read_file(tid, SESSION_FILE))
        for s in rec["sessions"]:
            if isinstance(s, dict) and ident in (s.get("session_id"), s.get("short_id")):
                owners.append(tid)
                break
    if len(owners) == 1:
        return owners[0]
    if len(owners) > 1:
        raise PilotError(f"session {ident!r} appears in {len(owners)} tasks: give the task id")
    if len(ident) >= 4:  # a unique prefix of a session id, as of a task id
        begun: dict[str, set[str]] = {}  # session id -> the tasks that name it
        for tid in ids:
            for s in parse_session(store.read_file(tid, SESSION_FILE))["sessions"]:
                sid = s.get("session_id") if isinstance(s, dict) else None
                if isinstance(sid, str) and sid.startswith(ident):
                    begun.setdefault(sid, set()).add(tid)
        if len(begun) == 1:
            (sid, tasks), = begun.items()
            if len(tasks) == 1:
                return next(iter(tasks))
            raise PilotError(f"session {sid!r} appears in {len(tasks)} tasks: give the task id")
        if begun:
            raise PilotError(f"{ident!r} begins {len(begun)} session ids: give more of it")
    raise PilotError(f"no task or session {ident!r} (see git pilot status)")
