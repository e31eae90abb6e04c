"""The detached resume helper: waits for a ticket's ``resume_at``, then resumes or cancels it.

``python -m gitpilot.quota.helper <pilot dir>`` runs in its own session (``setsid``), so it
survives the terminal closing and the command that started it exiting. One helper per
repository holds ``locks/quota-helper.lock`` for its whole life; a second one exits at once.
The helper does not survive a reboot, the ticket does: ``rearm_if_needed`` (cheap: one stat
when there is no ticket) starts a new helper from any later ``git pilot`` command, and a
helper that finds its ticket already due acts at once. No OS scheduler or service is used.

The clock is ``gitpilot.quota.clock`` (``GIT_PILOT_NOW`` in tests); with an injected clock
the helper polls every ``GIT_PILOT_QUOTA_POLL`` seconds (default 0.05) instead of sleeping
until the resume time.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from gitpilot.repo import Repo

LOCK_NAME = "quota-helper.lock"
PID_NAME = "quota-helper.pid"
LOG_NAME = "quota-helper.log"
POLL_ENV = "GIT_PILOT_QUOTA_POLL"
LOCK_FD_ENV = "GIT_PILOT_QUOTA_LOCK_FD"  # set by start_helper: the lock, already held


def rearm_if_needed(repo: Repo | Path) -> bool:
    """Start a helper when a ticket waits and no helper is alive; True if one was started.

    ``repo`` is a Repo or its pilot dir (``<git common dir>/pilot``). Without a ticket this
    costs one ``stat``.
    """
    pilot_dir = repo if isinstance(repo, Path) else repo.pilot_dir
    try:
        os.stat(pilot_dir / "resume-ticket.json")
    except OSError:
        return False
    return start_helper(pilot_dir) is not None


def helper_alive(pilot_dir: Path) -> bool:
    """True while some helper holds the helper lock (a dead helper's lock is released)."""
    lock = _try_lock(pilot_dir)
    if lock is None:
        return True
    lock.close()
    return False


def start_helper(pilot_dir: Path) -> int | None:
    """Start a detached helper for this repository; its pid, or None when one is alive.

    The helper lock is taken here and handed to the child as an inherited descriptor, so
    there is no moment in which two starters both see "no helper" and both start one.
    """
    import subprocess

    from gitpilot.gitrun import clean_env

    lock = _try_lock(pilot_dir)
    if lock is None:
        return None
    env = clean_env()
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = package_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env[LOCK_FD_ENV] = str(lock.fileno())
    try:
        with open(pilot_dir / LOG_NAME, "ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "gitpilot.quota.helper", str(pilot_dir)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                cwd=str(pilot_dir),
                env=env,
                start_new_session=True,
                pass_fds=(lock.fileno(),),
            )
    finally:
        lock.close()  # the child's copy of the descriptor keeps the lock
    return proc.pid


def _try_lock(pilot_dir: Path) -> IO[bytes] | None:
    """The helper lock, held by this process; None when another process holds it."""
    import fcntl

    locks = pilot_dir / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    f = open(locks / LOCK_NAME, "ab")  # noqa: SIM115 - held for the helper's life
    try:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.close()
        return None
    return f


def _inherited_lock() -> IO[bytes] | None:
    raw = os.environ.pop(LOCK_FD_ENV, "")
    if not raw.isdigit():
        return None
    try:
        return os.fdopen(int(raw), "ab")
    except OSError:
        return None


def main(argv: list[str] | None = None) -> int:
    """Serve the repository's ticket until there is none left."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write("usage: python -m gitpilot.quota.helper <git common dir>/pilot\n")
        return 2
    pilot_dir = Path(args[0])
    for attempt in range(3):
        lock = _inherited_lock() if attempt == 0 else None
        lock = lock or _try_lock(pilot_dir)
        if lock is None:
            return 0  # another helper serves this repository
        try:
            (pilot_dir / PID_NAME).write_text(f"{os.getpid()}\n", encoding="utf-8")
            _serve(pilot_dir)
        finally:
            (pilot_dir / PID_NAME).unlink(missing_ok=True)
            lock.close()
        # A ticket written while this helper was leaving found the lock still held: serve it.
        if not (pilot_dir / "resume-ticket.json").exists():
            return 0
    return 0


def _serve(pilot_dir: Path) -> None:
    from gitpilot.quota import clock, tickets
    from gitpilot.quota.resume import process_due

    path = tickets.ticket_path(pilot_dir)
    while True:
        ticket = tickets.read(path)
        if ticket is None:
            return
        now = clock.now()
        if now >= ticket.resume_time:
            process_due(pilot_dir, ticket)
            continue
        time.sleep(_pause(clock.injected(), (ticket.resume_time - now).total_seconds()))


def _pause(injected: bool, remaining: float) -> float:
    if injected:
        try:
            return max(0.01, float(os.environ.get(POLL_ENV, "0.05")))
        except ValueError:
            return 0.05
    # Wake at least once a minute: a suspended laptop or a changed clock is noticed soon.
    return min(max(remaining, 1.0), 60.0)


if __name__ == "__main__":
    raise SystemExit(main())
