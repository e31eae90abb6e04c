"""Running agent command lines for a task, and knowing which of them still run.

Every argv git pilot starts for a task (sessions, resumes, ``claude agents --json``, ``claude
stop``) goes through ``execute``, which logs it to the task record first. The agent's
environment carries ``GIT_PILOT_TASK=<task id>`` (the checks engine files logs under it) and
none of a calling hook's ``GIT_DIR``-style variables. A session process started in the
foreground is registered in ``<git common dir>/pilot/run/<task>.json`` while it runs, so a
second ``run``/``resume`` of the same task never starts a copy and ``stop`` can end it.

Ctrl-C: an interactive session owns the terminal and reads Ctrl-C itself (Claude Code uses it
to cancel a turn), so git pilot ignores SIGINT while it waits for that session and records how
it ended when it exits. A session whose output git pilot captures is ended with it: the
process is terminated (killed after ``STOP_GRACE`` seconds) and the interrupt goes on to the
caller, which records the task as stopped.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from gitpilot.agents.base import Adapter, Features, Invocation, LiveSession, Outcome
from gitpilot.errors import PilotError
from gitpilot.fileio import atomic_write
from gitpilot.gitrun import clean_env
from gitpilot.procs import alive
from gitpilot.repo import Repo
from gitpilot.tasks.session import launch_entry, update_session

LIST_TIMEOUT = 60.0
STOP_GRACE = 5.0


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Finished:
    """A finished run: what the adapter read back, and the raw output (for the caller to show)."""

    outcome: Outcome
    stdout: str
    stderr: str


def agent_env(tid: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {"GIT_PILOT_TASK": tid}
    if extra:
        env.update(extra)
    return clean_env(env)


def log_launch(repo: Repo, tid: str, inv: Invocation, what: str) -> None:
    entry = launch_entry(now_iso(), what, inv.argv, inv.mode)
    update_session(repo, tid, lambda rec: rec["launches"].append(entry), f"pilot: launch {what}")


def execute(repo: Repo, tid: str, adapter: Adapter, inv: Invocation, what: str,
            timeout: float | None = None) -> Finished:
    """Log ``inv`` to the task record, run it in the worktree, and read its outcome back."""
    log_launch(repo, tid, inv, what)
    env = agent_env(tid, dict(inv.env))
    cwd = repo.workdir
    try:
        if inv.mode == "interactive":
            started = time.time()
            proc = subprocess.Popen(list(inv.argv), cwd=cwd, env=env)
            _register(repo, tid, proc.pid, inv)
            previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # the session reads Ctrl-C itself
            try:
                code = proc.wait()
            finally:
                signal.signal(signal.SIGINT, previous)
                _unregister(repo, tid, proc.pid)
            outcome = adapter.outcome(inv, code, "", "")
            if outcome.session_id is None:  # an interactive session printed nothing we read
                found = adapter.session_after(inv, started, cwd)
                if found:
                    outcome = replace(outcome, session_id=found)
            return Finished(outcome, "", "")
        proc = subprocess.Popen(list(inv.argv), cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        _register(repo, tid, proc.pid, inv)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        except KeyboardInterrupt:
            _end(proc)
            raise
        finally:
            _unregister(repo, tid, proc.pid)
    except OSError as exc:
        raise PilotError(f"cannot run {inv.argv[0]}: {exc.strerror or exc}") from exc
    stdout, stderr = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    return Finished(adapter.outcome(inv, proc.returncode, stdout, stderr), stdout, stderr)


def _end(proc: subprocess.Popen[bytes]) -> None:
    """Terminate ``proc`` (interrupted by Ctrl-C), killing it if it outlives STOP_GRACE seconds."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not orphan it
    try:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(STOP_GRACE)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    finally:
        signal.signal(signal.SIGINT, previous)


def list_live(repo: Repo, tid: str, adapter: Adapter, features: Features) -> list[LiveSession] | None:
    """The CLI's own session list (logged like any launch); None when it cannot list."""
    inv = adapter.list_sessions(features)
    if inv is None:
        return None
    done = execute(repo, tid, adapter, inv, "list sessions", timeout=LIST_TIMEOUT)
    if done.outcome.exit_code != 0:
        return None
    return adapter.parse_sessions(done.stdout)


def find_live(sessions: list[LiveSession], session_id: str | None,
              short_id: str | None) -> LiveSession | None:
    for s in sessions:
        if (session_id and s.session_id == session_id) or (short_id and s.short_id == short_id):
            return s
    return None


# -- the foreground process registry ---------------------------------------------------------
def _run_file(repo: Repo, tid: str) -> Path:
    return repo.pilot_dir / "run" / f"{tid}.json"


def _register(repo: Repo, tid: str, pid: int, inv: Invocation) -> None:
    path = _run_file(repo, tid)
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"pid": pid, "session_id": inv.session_id, "mode": inv.mode, "started": now_iso()}
    atomic_write(path, json.dumps(body, sort_keys=True).encode("utf-8"))  # a live process's: not synced


def _unregister(repo: Repo, tid: str, pid: int) -> None:
    path = _run_file(repo, tid)
    try:
        if json.loads(path.read_text("utf-8")).get("pid") == pid:
            path.unlink()
    except (OSError, ValueError, AttributeError):
        pass


def running_process(repo: Repo, tid: str) -> dict[str, object] | None:
    """The registered session process of the task, if it is still alive."""
    path = _run_file(repo, tid)
    try:
        body = json.loads(path.read_text("utf-8"))
        pid = int(body["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not alive(pid):
        path.unlink(missing_ok=True)
        return None
    return dict(body)




def terminate(pid: int) -> bool:
    try:
        os.kill(pid, signal.SIGTERM)
        return True
    except ProcessLookupError:
        return False
