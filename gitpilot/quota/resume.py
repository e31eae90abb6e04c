"""Acting on a due ticket: claim it, check that resuming is still right, then resume or cancel.

The ticket is cancelled unless every condition holds: automatic resume is still on; the task
record still exists, names the ticket's session as its latest, and its task file (when one was
given) still hashes to the task id; the task is still waiting on its quota and no process of
that session is running; the checkout is the same worktree on the same branch; and the ticket
is at most three days past its resume time.

The resume itself crosses one small boundary, ``resume_task``: it runs ``git pilot resume
<session>`` in the worktree (the same checked path as ``run``, owned by the agents package),
telling it through the environment that this is a quota continuation. Tests replace the
command with ``GIT_PILOT_QUOTA_RESUME_COMMAND``.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from gitpilot.errors import PilotError
from gitpilot.quota import clock, tickets
from gitpilot.quota.tickets import Ticket
from gitpilot.repo import Repo

RESUME_COMMAND_ENV = "GIT_PILOT_QUOTA_RESUME_COMMAND"
WAITING = "waiting-quota"

QUOTA_CONTINUATION = (
    "The usage limit that stopped this session has reset ({reset}). "
    "Continue the task from the current git state."
)


def process_due(pilot_dir: Path, ticket: Ticket) -> None:
    """Claim a due ticket and resume it, or cancel it with the first failed condition."""
    taken = tickets.claim(pilot_dir, ticket.id)
    if taken is None:
        return  # another helper or a stop took it first
    try:
        now = clock.now()
        repo, reason = _open(ticket, now)
        if repo is not None:
            reason = failed_condition(repo, ticket)
        if reason or repo is None:
            tickets.log_event(pilot_dir, "cancelled", ticket, now, reason=reason)
            return
        tickets.log_event(pilot_dir, "resuming", ticket, now)
        code = resume_task(repo, ticket)
        event = "resumed" if code == 0 else "resume-failed"
        tickets.log_event(pilot_dir, event, ticket, clock.now(), exit=code)
    finally:
        taken.unlink(missing_ok=True)


def _open(ticket: Ticket, now: datetime) -> tuple[Repo | None, str]:
    """The ticket's worktree, or why the ticket cannot be resumed before looking at it."""
    if now > ticket.expires_time:
        return None, f"expired: more than three days past its resume time {ticket.resume_at}"
    try:
        return Repo.discover(ticket.project_root), ""
    except PilotError as exc:
        return None, f"worktree is gone: {exc}"


def failed_condition(repo: Repo, ticket: Ticket) -> str:
    """The first condition that no longer holds, as a short reason; empty when all hold."""
    checks: tuple[Callable[[Repo, Ticket], str], ...] = (
        _auto_resume_off,
        _other_checkout,
        _task_changed,
        _task_not_waiting,
        _session_running,
    )
    for check in checks:
        reason = check(repo, ticket)
        if reason:
            return reason
    return ""


def _auto_resume_off(repo: Repo, ticket: Ticket) -> str:
    from gitpilot import config

    try:
        cfg = config.load(Path(ticket.project_root))
    except PilotError as exc:
        return f"configuration no longer loads: {exc}"
    return "" if cfg.get("quota.auto_resume") is True else "automatic resume is off ([quota] auto_resume)"


def _other_checkout(repo: Repo, ticket: Ticket) -> str:
    if repo.root is None or not _same(repo.root, ticket.project_root):
        return f"checkout moved: {ticket.project_root} is not the worktree it was"
    if not _same(repo.git_dir, ticket.git_dir):
        return "checkout moved: the worktree was replaced"
    branch = repo.current_branch()
    if branch != ticket.branch:
        return f"branch changed: {ticket.branch or '(detached)'} -> {branch or '(detached)'}"
    return ""


def _task_changed(repo: Repo, ticket: Ticket) -> str:
    from gitpilot.store.tasks import TaskStore, task_id

    if ticket.task_file:
        try:
            text = Path(ticket.task_file).read_text(encoding="utf-8")
        except OSError:
            return f"task file is gone: {ticket.task_file}"
        if task_id(text) != ticket.task_id:
            return "task text changed since the quota stop"
    files = TaskStore(repo).read(ticket.task_id)
    if files is None:
        return f"no task record for task {ticket.task_id[:12]}"
    session = recorded_session(files)
    if session != ticket.session:
        return f"task's latest session is {session or 'unknown'}, not {ticket.session}"
    return ""


def _task_not_waiting(repo: Repo, ticket: Ticket) -> str:
    from gitpilot.store.tasks import TaskStore

    files = TaskStore(repo).read(ticket.task_id) or {}
    status = _json(files.get("state.json")).get("status")
    if status not in (None, WAITING):
        return f"task is {status}, no longer {WAITING}"
    return ""


def _session_running(repo: Repo, ticket: Ticket) -> str:
    pid = session_process(ticket.session)
    return f"session {ticket.session} is running (pid {pid})" if pid else ""


def recorded_session(files: dict[str, bytes]) -> str | None:
    """The latest session id of a task record (``session.json``: ``session_id``, or ``sessions``)."""
    data = _json(files.get("session.json"))
    sessions = data.get("sessions")
    if isinstance(sessions, list) and sessions:
        last = sessions[-1]
        data = last if isinstance(last, dict) else {"session_id": last}
    for key in ("session_id", "sessionId", "id"):
        value = data.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def session_process(session: str) -> int | None:
    """A running process (not this one or its parents) whose command line names ``session``."""
    mine = {os.getpid(), os.getppid()}
    proc = Path("/proc")
    if not proc.is_dir():
        return _session_process_ps(session, mine)
    needle = session.encode()
    for entry in sorted(proc.iterdir(), key=lambda p: p.name):
        if not entry.name.isdigit() or int(entry.name) in mine:
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        args = cmdline.split(b"\0")[1:]
        if any(needle in arg for arg in args) and b"gitpilot.quota.helper" not in cmdline:
            return int(entry.name)
    return None


def _session_process_ps(session: str, mine: set[int]) -> int | None:
    try:
        out = subprocess.run(["ps", "-Ao", "pid=,args="], capture_output=True, text=True, check=False).stdout
    except OSError:
        return None
    for line in out.splitlines():
        pid, _, args = line.strip().partition(" ")
        if pid.isdigit() and int(pid) not in mine and session in args and "gitpilot.quota.helper" not in args:
            return int(pid)
    return None


def resume_task(repo: Repo, ticket: Ticket) -> int:
    """Continue the ticket's session through ``git pilot resume``; returns its exit code.

    This is the whole boundary with the run machinery: a subprocess in the worktree, told by
    ``GIT_PILOT_RESUME_REASON=quota`` and ``GIT_PILOT_RESUME_NOTE`` that the session stopped
    on its quota, so it adds the short quota continuation to its usual Delta Resume message.
    """
    env = dict(os.environ)
    env.update(
        GIT_PILOT_RESUME_REASON="quota",
        GIT_PILOT_RESUME_NOTE=QUOTA_CONTINUATION.format(reset=ticket.reset_at),
        GIT_PILOT_TASK=ticket.task_id,
    )
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_PREFIX"):
        env.pop(name, None)
    try:
        proc = subprocess.run(
            resume_argv(ticket), cwd=repo.workdir, env=env, stdin=subprocess.DEVNULL, check=False
        )
    except OSError as exc:
        sys.stderr.write(f"git pilot: quota resume could not start: {exc}\n")
        return 127
    return proc.returncode


def resume_argv(ticket: Ticket) -> list[str]:
    """``git pilot resume <session>``, or the command a test configured."""
    custom = os.environ.get(RESUME_COMMAND_ENV, "").strip()
    if custom:
        fields = {"session": ticket.session, "task": ticket.task_id, "root": ticket.project_root}
        return [part.format(**fields) for part in shlex.split(custom)]
    return [sys.executable, "-m", "gitpilot", "resume", ticket.session]


def _same(a: Path | str, b: Path | str) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return False


def _json(data: bytes | None) -> dict[str, object]:
    if not data:
        return {}
    try:
        value = json.loads(data)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
