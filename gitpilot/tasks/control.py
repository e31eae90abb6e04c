"""``stop`` and ``status``: end a task's session (and its pending quota resume), list tasks.

``stop`` ends whatever of the task still runs: the foreground process git pilot started, or
the background job (through the CLI's own ``stop``, logged like every launch), cancels a
pending quota resume ticket for the task or session even when the session is gone, and records
the task as stopped. ``summaries`` reads every task record for ``git pilot status``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gitpilot.repo import Repo
from gitpilot.store.tasks import TaskStore
from gitpilot.tasks import launch
from gitpilot.tasks.session import SESSION_FILE, current, find_task, parse_session, update_session
from gitpilot.tasks.state import STATE_FILE, parse_state, summary_line

TERMINAL = frozenset({"stopped", "failed", "completed", "complete", "done", "finished", "exited", "killed",
                      "cancelled", "canceled", "error", "dead"})


@dataclass
class StopReport:
    task_id: str
    lines: list[str] = field(default_factory=list)


def stop(repo: Repo, ident: str) -> StopReport:
    """``git pilot stop ID``: ID is a task id (or prefix) or a session id."""
    from gitpilot.errors import PilotError

    try:
        tid = find_task(repo, ident)
    except PilotError:
        # No record names it, but a quota ticket may: cancelling that is still a stop.
        ticket = _cancel_ticket(repo, ident)
        if ticket is None:
            raise
        return StopReport(ident, [f"cancelled the pending quota resume of {ident}"])
    report = StopReport(tid)
    files = TaskStore(repo).read(tid) or {}
    record = parse_session(files.get(SESSION_FILE))
    cur = current(record) or {}
    proc = launch.running_process(repo, tid)
    if proc is not None and launch.terminate(int(str(proc["pid"]))):
        report.lines.append(f"stopped the session process (pid {proc['pid']})")
    if cur.get("mode") == "background":
        report.lines += _stop_background(repo, tid, cur)
    for name in dict.fromkeys([ident, tid, str(cur.get("session_id") or "")]):
        if name and _cancel_ticket(repo, name) is not None:
            report.lines.append("cancelled the pending quota resume")
            break

    def record_stop(rec: dict[str, Any], state: dict[str, Any]) -> None:
        state["status"] = "stopped"
        state["quota_wait"] = None
        state["updated"] = launch.now_iso()

    update_session(repo, tid, record_stop, "pilot: stop")
    if not report.lines:
        report.lines.append("nothing was running")
    report.lines.append(f"task {tid[:12]} stopped; continue it with git pilot resume {tid[:12]}")
    return report


def _stop_background(repo: Repo, tid: str, cur: dict[str, Any]) -> list[str]:
    from gitpilot import agents

    adapter = agents.get(str(cur.get("agent") or "claude"))
    features = adapter.features(cache_dir=repo.pilot_dir / "agents")
    if not features.installed:
        short = cur.get("short_id")
        return [f"{adapter.executable} is not installed: cannot stop background session {short}"]
    live = launch.list_live(repo, tid, adapter, features)
    if live is None:
        return [f"{adapter.executable} cannot list its sessions: stop {cur.get('short_id')} yourself"]
    job = launch.find_live(live, cur.get("session_id"), cur.get("short_id"))
    if job is None or job.state in TERMINAL:
        return []
    inv = adapter.stop(job, features)
    if inv is None:
        return [f"{adapter.executable} cannot stop sessions: stop {job.short_id} yourself"]
    done = launch.execute(repo, tid, adapter, inv, "stop")
    if done.outcome.exit_code != 0:
        return [f"could not stop background session {job.short_id}: {done.outcome.failure}"]
    return [f"stopped background session {job.short_id} ({job.state})"]


def _cancel_ticket(repo: Repo, ident: str) -> object | None:
    try:
        from gitpilot.quota.schedule import cancel
    except ImportError:
        return None
    return cancel(repo, ident)


def summaries(repo: Repo) -> list[dict[str, Any]]:
    """One summary per task record, most recently updated first (ties by id)."""
    store = TaskStore(repo)
    rows = []
    for tid in store.list_ids():
        files = store.read(tid) or {}
        state = parse_state(files.get(STATE_FILE))
        record = parse_session(files.get(SESSION_FILE))
        cur = current(record) or {}
        title = _title(files.get("task.md"))
        rows.append({
            "task": tid,
            "title": title,
            "status": state["status"],
            "summary": summary_line(state),
            "agent": cur.get("agent") or state.get("agent"),
            "session": cur.get("session_id"),
            "short_id": cur.get("short_id"),
            "mode": cur.get("mode"),
            "session_started": cur.get("started"),
            "pr": state["pr"],
            "ci": state["ci"],
            "blockers": list(state["blockers"]),
            "review_rounds_used": state["review_rounds_used"],
            "planned": state["planned"],
            "quota_wait": state["quota_wait"],
            "updated": state.get("updated"),
        })
    rows.sort(key=lambda r: (str(r["updated"] or ""), r["task"]), reverse=True)
    return rows


def _title(data: bytes | None, limit: int = 60) -> str:
    if not data:
        return ""
    from gitpilot.redact import redact

    for line in data.decode("utf-8", "replace").splitlines():
        line = " ".join(line.strip().lstrip("#").split())
        if line:
            line = redact(line)
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""
