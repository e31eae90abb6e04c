"""Why a background session failed, read before anything resumes it.

A background Claude job that ended ``failed`` may have stopped on a usage limit; resuming it at
once would run straight into that limit. Its recent terminal output (``claude logs <id>``) is
read and classified; when the CLI can no longer read it (the job's daemon socket is gone:
``Couldn't read logs ...``), the end of the session's transcript is read instead (Claude Code
records a limit there as a synthetic assistant message with ``"error":"rate_limit"``).

A quota stop with a reset still ahead is recorded on the task (``waiting-quota``, and a resume
ticket when ``[quota] auto_resume`` is on) and the resume is refused with one line. A stated
reset that has passed lets the resume go on (the ticket's own resume, or the user's after the
reset): once a wait is recorded for the session, its reset time decides, not the output read
again. Without a stated reset the first resume is refused with ``NO_RESET_MESSAGE`` and the
task records it as a blocker; the user's next resume goes on, as that message tells them to.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from gitpilot.agents.base import Adapter, Features, LiveSession
from gitpilot.quota import clock
from gitpilot.quota.classify import NO_RESET_MESSAGE, classify
from gitpilot.repo import Repo

LOGS_TIMEOUT = 30.0
_PAST = "stated reset time is in the past"


def recent_output(repo: Repo, tid: str, adapter: Adapter, features: Features, job: LiveSession) -> str:
    """The failed job's recent terminal output, or else the end of its session's transcript."""
    from gitpilot.checks.ansi import strip_ansi
    from gitpilot.tasks import launch

    inv = adapter.logs(job, features)
    if inv is not None:
        done = launch.execute(repo, tid, adapter, inv, "read a failed background session's output",
                              timeout=LOGS_TIMEOUT)
        if done.outcome.exit_code == 0 and done.stdout.strip():
            return strip_ansi(done.stdout)
    if adapter.name != "claude" or not job.session_id:
        return ""
    from gitpilot.agents.claude_files import transcript_tail

    return transcript_tail(Path.home(), repo.workdir, job.session_id)


def refusal(repo: Repo, tid: str, adapter: Adapter, features: Features, job: LiveSession,
            state: dict[str, Any]) -> str | None:
    """Why the failed background ``job`` must not be resumed now (recorded on the task), or None.

    ``state``: the task's state. A wait recorded for this session decides by its reset time (a
    clock time in the output, read again later, would name the next day); a limit without a
    reset time is refused once (its blocker is recorded).
    """
    from gitpilot.quota.resets import iso
    from gitpilot.quota.schedule import handle_tool_stop, record_blocker

    wait = state.get("quota_wait")
    if isinstance(wait, dict) and wait.get("session") == job.session_id and isinstance(wait.get("reset_at"), str):
        if wait["reset_at"] <= iso(clock.now()):
            return None  # the limit recorded for this session has reset
        return f"the {wait.get('provider') or 'agent'} limit resets at {wait['reset_at']}"
    blockers = list(state.get("blockers") or [])
    output = recent_output(repo, tid, adapter, features, job)
    if not output.strip():
        return None
    zone = os.environ.get("TZ") or None
    verdict = classify(output, clock.now(), zone)
    if verdict.kind != "quota":
        return None
    if verdict.reset.at is None:
        if verdict.reset.reason.startswith(_PAST):
            return None  # the limit has reset since
        marker = f"background session {job.short_id}: {NO_RESET_MESSAGE}"
        if marker in blockers:
            return None  # said once; the user resumes after the limit reset
        record_blocker(repo, tid, marker)
        return NO_RESET_MESSAGE
    stop = handle_tool_stop(repo, output=output, task_id=tid, provider=adapter.name, what="git pilot resume",
                            pinned_zone=zone)
    return stop.message
