"""What happens when an agent session stops: classify its output and, for a quota stop with a
stated reset time and ``[quota] auto_resume = true``, write a ticket and start the helper.

``handle_stop`` is the one call the ``run`` machinery makes after a failed session. It never
guesses: without a stated reset time the task stops with exactly ``NO_RESET_MESSAGE``; with
automatic resume off it says when the limit resets and that nothing was scheduled.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from gitpilot.errors import PilotError
from gitpilot.quota import clock, tickets
from gitpilot.quota.classify import NO_RESET_MESSAGE, Verdict, classify
from gitpilot.quota.resets import iso
from gitpilot.quota.tickets import Ticket
from gitpilot.repo import Repo


@dataclass(frozen=True)
class StopOutcome:
    """What the stop was and what git pilot did about it."""

    verdict: Verdict
    message: str  # one line for the user
    ticket: Ticket | None = None  # set when a resume was scheduled

    @property
    def kind(self) -> str:
        return self.verdict.kind

    @property
    def status(self) -> str:
        """The task status to record: waiting-quota, blocked, or retry (a short rate limit)."""
        if self.ticket is not None:
            return "waiting-quota"
        return "retry" if self.kind == "rate_limit" else "blocked"


def handle_stop(
    repo: Repo,
    *,
    output: str,
    task_id: str,
    session: str,
    provider: str,
    pinned_zone: str | None = None,
    task_file: str | None = None,
    now: datetime | None = None,
) -> StopOutcome:
    """Classify a failed session's ``output`` and schedule its resume when that is safe.

    ``pinned_zone`` is the ``TZ`` git pilot started the agent process with (zone-less clocks
    are read only in it); ``task_file`` is re-hashed at resume time when given.
    """
    moment = now or clock.now()
    verdict = classify(output, moment, pinned_zone)
    if verdict.kind != "quota":
        return StopOutcome(verdict, _blocker_message(verdict))
    reset = verdict.reset.at
    if reset is None:
        return StopOutcome(verdict, NO_RESET_MESSAGE)
    from gitpilot import config

    cfg = config.load(repo.workdir)
    if cfg.get("quota.auto_resume") is not True:
        return StopOutcome(
            verdict,
            f"quota exhausted; the limit resets at {iso(reset)}. Automatic resume is off "
            "([quota] auto_resume = false): run git pilot run once the limit has reset.",
        )
    grace = float(cfg.get("quota.grace_minutes"))
    if grace < 0:
        raise PilotError("quota.grace_minutes must not be negative")
    ticket = tickets.new_ticket(
        project_root=repo.workdir,
        git_dir=repo.git_dir,
        branch=repo.current_branch(),
        task_id=task_id,
        session=session,
        provider=provider,
        reset_at=reset,
        grace_minutes=grace,
        now=moment,
        task_file=str(Path(task_file).resolve()) if task_file else None,
    )
    schedule(repo, ticket, moment)
    return StopOutcome(verdict, tickets.status_line(ticket), ticket)


def schedule(repo: Repo, ticket: Ticket, now: datetime) -> None:
    """Record the wait in the task state, write the ticket, and make sure a helper runs."""
    from gitpilot.quota.helper import start_helper

    _record_wait(repo, ticket)
    tickets.write(repo.pilot_dir, ticket)
    tickets.log_event(repo.pilot_dir, "scheduled", ticket, now, resume_at=ticket.resume_at)
    start_helper(repo.pilot_dir)  # does nothing when a helper is alive: it reads the new ticket


def cancel(repo: Repo, ident: str, reason: str = "stopped by git pilot stop") -> Ticket | None:
    """Cancel the pending ticket of a session or task (``git pilot stop``); returns it, or None."""
    return tickets.cancel(repo.pilot_dir, ident, reason, clock.now())


def _record_wait(repo: Repo, ticket: Ticket) -> None:
    """``state.json``: status waiting-quota and the wait, other keys kept (one CAS commit)."""
    from gitpilot.store.tasks import TaskStore

    store = TaskStore(repo)
    if store.tip(ticket.task_id) is None:
        return  # no record to update; the resume will cancel for want of one

    def change(files: dict[str, bytes]) -> dict[str, bytes | None]:
        try:
            state = json.loads(files.get("state.json", b"{}"))
        except ValueError:
            state = {}
        if not isinstance(state, dict):
            state = {}
        state["status"] = "waiting-quota"
        state["quota_wait"] = {
            "reset_at": ticket.reset_at,
            "resume_at": ticket.resume_at,
            "session": ticket.session,
            "provider": ticket.provider,
        }
        return {**files, "state.json": (json.dumps(state, sort_keys=True, indent=2) + "\n").encode()}

    store.update(ticket.task_id, change, f"quota: waiting for the limit to reset ({ticket.reset_at})")


def _blocker_message(verdict: Verdict) -> str:
    if verdict.kind == "rate_limit":
        return f"rate limited (not a quota stop): {verdict.evidence}"
    if verdict.kind == "unknown":
        return "the agent stopped for a reason git pilot does not recognise"
    return f"blocked ({verdict.kind.replace('_', ' ')}): {verdict.evidence}"
