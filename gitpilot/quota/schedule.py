"""What happens when an agent stops on a limit: classify its output and, for a quota stop with a
stated reset time and ``[quota] auto_resume = true``, write a ticket and start the helper.

``handle_stop`` is the one call the ``run`` machinery makes after a failed session.
``handle_tool_stop`` is the same for a Codex command a task's session ran (``codex plan``,
``codex review``): the wait is recorded on the task whatever ``auto_resume`` says, and the
ticket resumes the task's own session. Neither guesses: without a stated reset time the task
stops with exactly ``NO_RESET_MESSAGE``; with automatic resume off it says when the limit
resets and that nothing was scheduled.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

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
    moment, verdict = _classified(output, pinned_zone, now)
    reset = verdict.reset.at
    if verdict.kind != "quota" or reset is None:
        return _not_scheduled(verdict)
    if not _auto_resume(repo):
        return StopOutcome(verdict, _off_message(reset))
    ticket = _ticket(repo, task_id, session, provider, reset, moment, task_file)
    schedule(repo, ticket, moment)
    return StopOutcome(verdict, tickets.status_line(ticket), ticket)


def handle_tool_stop(
    repo: Repo,
    *,
    output: str,
    task_id: str | None,
    provider: str,
    what: str,
    pinned_zone: str | None = None,
    now: datetime | None = None,
) -> StopOutcome:
    """Classify the output of a failed ``what`` (``codex review``) run for task ``task_id``.

    A quota stop is recorded on the task: ``waiting-quota`` with the stated reset (no resume
    time when nothing is scheduled), or a blocker when no reset time was stated; with
    ``auto_resume`` on and a session to continue, a ticket resumes the task's current session
    after the reset. Outside a task nothing is recorded; the message says when to try again.
    """
    moment, verdict = _classified(output, pinned_zone, now)
    reset = verdict.reset.at
    if verdict.kind != "quota" or reset is None:
        if verdict.kind == "quota" and task_id is not None:
            record_blocker(repo, task_id, f"{what}: {NO_RESET_MESSAGE}")
        return _not_scheduled(verdict)
    session = _current_session(repo, task_id) if task_id is not None else None
    if task_id is not None and session and _auto_resume(repo):
        ticket = _ticket(repo, task_id, session, provider, reset, moment, None)
        schedule(repo, ticket, moment)
        return StopOutcome(verdict, tickets.status_line(ticket), ticket)
    if task_id is None:
        return StopOutcome(verdict, f"{provider} quota exhausted; the limit resets at {iso(reset)}: "
                                    f"run {what} again after that")
    _record_wait(repo, task_id, {"reset_at": iso(reset), "resume_at": None, "session": session,
                                 "provider": provider}, f"quota: {what} waits for the limit to reset ({iso(reset)})")
    if not session:
        return StopOutcome(verdict, f"quota exhausted; the {provider} limit resets at {iso(reset)}. No session "
                                    f"of this task to resume: run {what} again after that.")
    return StopOutcome(verdict, _off_message(reset))


def _classified(output: str, pinned_zone: str | None, now: datetime | None) -> tuple[datetime, Verdict]:
    moment = now or clock.now()
    return moment, classify(output, moment, pinned_zone)


def _not_scheduled(verdict: Verdict) -> StopOutcome:
    """Another stop than a quota one, or a quota stop without a stated reset time."""
    return StopOutcome(verdict, NO_RESET_MESSAGE if verdict.kind == "quota" else _blocker_message(verdict))


def _auto_resume(repo: Repo) -> bool:
    from gitpilot import config

    return config.load(repo.workdir).get("quota.auto_resume") is True


def _off_message(reset: datetime) -> str:
    return (f"quota exhausted; the limit resets at {iso(reset)}. Automatic resume is off "
            "([quota] auto_resume = false): run git pilot run once the limit has reset.")


def _ticket(repo: Repo, task_id: str, session: str, provider: str, reset: datetime, moment: datetime,
            task_file: str | None) -> Ticket:
    from gitpilot import config

    grace = float(config.load(repo.workdir).get("quota.grace_minutes"))
    if grace < 0:
        raise PilotError("quota.grace_minutes must not be negative")
    return tickets.new_ticket(
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


def schedule(repo: Repo, ticket: Ticket, now: datetime) -> None:
    """Record the wait in the task state, write the ticket, and make sure a helper runs."""
    from gitpilot.quota.helper import start_helper

    _record_wait(repo, ticket.task_id, {"reset_at": ticket.reset_at, "resume_at": ticket.resume_at,
                                        "session": ticket.session, "provider": ticket.provider,
                                        "ticket": ticket.id},
                 f"quota: waiting for the limit to reset ({ticket.reset_at})")
    tickets.write(repo.pilot_dir, ticket)
    tickets.log_event(repo.pilot_dir, "scheduled", ticket, now, resume_at=ticket.resume_at)
    start_helper(repo.pilot_dir)  # does nothing when a helper is alive: it reads the new ticket


def cancel(repo: Repo, ident: str, reason: str = "stopped by git pilot stop") -> Ticket | None:
    """Cancel the pending ticket of a session or task (``git pilot stop``); returns it, or None."""
    return tickets.cancel(repo.pilot_dir, ident, reason, clock.now())


def _current_session(repo: Repo, task_id: str) -> str | None:
    """The session id of the task's latest session, the one a quota resume continues."""
    from gitpilot.store.tasks import TaskStore
    from gitpilot.tasks.session import SESSION_FILE, current, parse_session

    files = TaskStore(repo).read(task_id) or {}
    entry = current(parse_session(files.get(SESSION_FILE))) or {}
    sid = entry.get("session_id")
    return sid if isinstance(sid, str) and sid else None


def _update_state(repo: Repo, task_id: str, change: Callable[[dict[str, Any]], None], message: str) -> None:
    from gitpilot.store.tasks import TaskStore

    store = TaskStore(repo)
    if store.tip(task_id) is None:
        return  # no record to update; a resume will cancel for want of one

    def apply(files: dict[str, bytes]) -> dict[str, bytes | None]:
        try:
            state = json.loads(files.get("state.json", b"{}"))
        except ValueError:
            state = {}
        if not isinstance(state, dict):
            state = {}
        change(state)
        return {**files, "state.json": (json.dumps(state, sort_keys=True, indent=2) + "\n").encode()}

    store.update(task_id, apply, message)


def _record_wait(repo: Repo, task_id: str, wait: dict[str, Any], message: str) -> None:
    """``state.json``: status waiting-quota and the wait, other keys kept (one CAS commit)."""

    def change(state: dict[str, Any]) -> None:
        state["status"] = "waiting-quota"
        state["quota_wait"] = wait

    _update_state(repo, task_id, change, message)


def record_blocker(repo: Repo, task_id: str, blocker: str) -> None:
    def change(state: dict[str, Any]) -> None:
        state["status"] = "blocked"
        found = state.get("blockers")
        blockers: list[Any] = found if isinstance(found, list) else []
        state["blockers"] = [*blockers, blocker] if blocker not in blockers else blockers

    _update_state(repo, task_id, change, "quota: exhausted, no reset time stated")


def _blocker_message(verdict: Verdict) -> str:
    if verdict.kind == "rate_limit":
        return f"rate limited (not a quota stop): {verdict.evidence}"
    if verdict.kind == "unknown":
        return "the agent stopped for a reason git pilot does not recognise"
    return f"blocked ({verdict.kind.replace('_', ' ')}): {verdict.evidence}"
