"""The resume ticket: ``<git common dir>/pilot/resume-ticket.json``, one per repository.

A ticket says which task and session to continue, in which checkout, and when: the stated
reset plus ``[quota] grace_minutes``. It is written atomically (temp file + rename) and taken
atomically: the helper that resumes first *claims* the ticket by renaming it, so two helpers
racing for one ticket resume it exactly once, and a ``stop`` racing a helper either cancels
the ticket or finds it already claimed, never both. Outcomes are appended to
``quota-events.jsonl`` beside it, for ``status`` and for the user.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from gitpilot.fileio import atomic_write, rename
from gitpilot.quota.clock import parse
from gitpilot.quota.resets import iso

TICKET_NAME = "resume-ticket.json"
EVENTS_NAME = "quota-events.jsonl"
EXPIRY = timedelta(days=3)


@dataclass(frozen=True)
class Ticket:
    """A pending quota resume."""

    id: str
    project_root: str  # the worktree the session ran in
    git_dir: str  # that worktree's git dir: tells linked worktrees apart
    branch: str | None
    task_id: str  # blake3 of the task text
    session: str
    provider: str
    reset_at: str  # ISO UTC, as stated by the CLI
    resume_at: str  # reset_at + grace_minutes
    created_at: str
    task_file: str | None = None  # re-hashed at resume: an edited task is a different task

    @property
    def resume_time(self) -> datetime:
        return parse(self.resume_at)

    @property
    def expires_time(self) -> datetime:
        return self.resume_time + EXPIRY

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def new_ticket(
    *,
    project_root: Path,
    git_dir: Path,
    branch: str | None,
    task_id: str,
    session: str,
    provider: str,
    reset_at: datetime,
    grace_minutes: float,
    now: datetime,
    task_file: str | None = None,
) -> Ticket:
    """A ticket for resuming ``grace_minutes`` after the stated reset."""
    return Ticket(
        id=uuid.uuid4().hex,
        project_root=str(project_root),
        git_dir=str(git_dir),
        branch=branch,
        task_id=task_id,
        session=session,
        provider=provider,
        reset_at=iso(reset_at),
        resume_at=iso(reset_at + timedelta(minutes=grace_minutes)),
        created_at=iso(now),
        task_file=task_file,
    )


def ticket_path(pilot_dir: Path) -> Path:
    return pilot_dir / TICKET_NAME


def write(pilot_dir: Path, ticket: Ticket) -> Path:
    """Write the ticket atomically (a reader sees the old ticket or the new one, never half)."""
    pilot_dir.mkdir(parents=True, exist_ok=True)
    path = ticket_path(pilot_dir)
    data = json.dumps(ticket.to_json(), sort_keys=True, indent=2) + "\n"
    atomic_write(path, data.encode("utf-8"), fsync=True)  # the promise to resume the work: synced
    return path


def read(path: Path) -> Ticket | None:
    """The ticket at ``path``; None when there is none or it is unreadable."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict):
        return None
    try:
        ticket = Ticket(**{k: raw[k] for k in Ticket.__dataclass_fields__ if k in raw})
        ticket.resume_time  # noqa: B018 - validates the stored time
    except (TypeError, ValueError):
        return None
    return ticket


def pending(pilot_dir: Path) -> Ticket | None:
    return read(ticket_path(pilot_dir))


def claim(pilot_dir: Path, ticket_id: str) -> Path | None:
    """Take the ticket for this process by renaming it; None if it is gone or was replaced.

    The rename is atomic, so of several processes claiming one ticket exactly one succeeds.
    """
    path = ticket_path(pilot_dir)
    current = read(path)
    if current is None or current.id != ticket_id:
        return None
    taken = pilot_dir / f"{TICKET_NAME}.claimed.{os.getpid()}.{uuid.uuid4().hex[:8]}"
    try:
        rename(path, taken)  # a claim between live processes: not synced
    except FileNotFoundError:
        return None
    claimed = read(taken)
    if claimed is None or claimed.id != ticket_id:  # replaced between read and rename: put it back
        _restore(taken, path)
        return None
    return taken


def _restore(taken: Path, path: Path) -> None:
    try:
        os.link(taken, path)  # only if no newer ticket was written meanwhile
    except FileExistsError:
        pass
    except OSError:
        return
    taken.unlink(missing_ok=True)


def cancel(pilot_dir: Path, ident: str, reason: str, now: datetime) -> Ticket | None:
    """Cancel the pending ticket if ``ident`` names its session or its task; returns it."""
    ticket = pending(pilot_dir)
    if ticket is None or not matches(ticket, ident):
        return None
    taken = claim(pilot_dir, ticket.id)
    if taken is None:
        return None
    taken.unlink(missing_ok=True)
    log_event(pilot_dir, "cancelled", ticket, now, reason=reason)
    return ticket


def matches(ticket: Ticket, ident: str) -> bool:
    """``ident`` is the ticket's session id, its task id, or a prefix of either (8+ chars)."""
    ident = ident.strip()
    if not ident:
        return False
    if ident in (ticket.session, ticket.task_id):
        return True
    return len(ident) >= 8 and (ticket.session.startswith(ident) or ticket.task_id.startswith(ident))


def log_event(pilot_dir: Path, event: str, ticket: Ticket | None, now: datetime, **extra: object) -> None:
    """Append one outcome to ``quota-events.jsonl`` (one line, written in one call)."""
    record: dict[str, object] = {"at": iso(now), "event": event}
    if ticket is not None:
        record.update(ticket=ticket.id, task=ticket.task_id, session=ticket.session)
    record.update(extra)
    line = json.dumps(record, sort_keys=True) + "\n"
    pilot_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(pilot_dir / EVENTS_NAME, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)


def events(pilot_dir: Path) -> list[dict[str, Any]]:
    """Every recorded outcome, oldest first; lines that do not parse are skipped."""
    try:
        lines = (pilot_dir / EVENTS_NAME).read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            out.append(record)
    return out


def status_line(ticket: Ticket) -> str:
    """What ``git pilot status`` shows for a task waiting on its quota."""
    return (
        f"waiting-quota — resume scheduled {ticket.resume_at} "
        f"({ticket.provider} limit resets {ticket.reset_at}; session {ticket.session})"
    )


def wait_line(pilot_dir: Path, task_id: str, wait: dict[str, Any], now: datetime) -> tuple[str, str]:
    """(state, line) of a task's recorded quota wait, as the ticket file and its events tell it now.

    ``scheduled``: its ticket is pending (``status_line``); ``cancelled``, ``expired`` or
    ``resumed``: the last event of its ticket (a ticket more than three days past its resume time
    is expired even before a helper says so); ``not-scheduled``: no ticket was written for it.
    """
    ticket = pending(pilot_dir)
    wanted = wait.get("ticket")
    if ticket is not None and ticket.task_id == task_id and wanted in (None, ticket.id):
        if now > ticket.expires_time:
            return "expired", (f"waiting-quota — resume expired: not resumed within three days of "
                               f"{ticket.resume_at}; run git pilot resume {task_id[:12]}")
        return "scheduled", status_line(ticket)
    reset = f"{wait.get('provider') or 'agent'} limit resets {wait.get('reset_at')}"
    last = next((e for e in reversed(events(pilot_dir)) if e.get("task") == task_id
                 and (wanted is None or e.get("ticket") == wanted) and e.get("event") != "scheduled"), None)
    if last is None or not wait.get("resume_at"):
        return "not-scheduled", f"waiting-quota — no resume scheduled ({reset})"
    event = str(last.get("event"))
    if event == "cancelled":
        reason = str(last.get("reason") or "")
        state = "expired" if reason.startswith("expired") else "cancelled"
        return state, f"waiting-quota — resume {state} {last.get('at')}: {reason} ({reset})"
    if event in ("resumed", "resuming"):
        return "resumed", f"waiting-quota — resumed {last.get('at')} after the limit reset ({reset})"
    return event, f"waiting-quota — resume {event.replace('-', ' ')} {last.get('at')} ({reset})"
