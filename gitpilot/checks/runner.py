"""Runs one check command: its whole output to a log file, a timeout, and clean interruption.

stdout and stderr share one pipe, so the log holds them interleaved as a terminal would
show them, byte for byte. The command runs in its own process group: a timeout or Ctrl-C
kills the whole group, not just the shell. The log is written as ``.partial`` and renamed
when the command ends, so an interrupted run leaves nothing half-written.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gitpilot.gitrun import clean_env


@dataclass(frozen=True)
class RunResult:
    exit_code: int
    seconds: float
    timed_out: bool
    log_path: Path
    log_size: int


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=2)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def run_command(
    command: str,
    cwd: Path,
    log_path: Path,
    timeout_s: float,
    tick: Callable[[], None] | None = None,
    env: dict[str, str] | None = None,
) -> RunResult:
    """Run ``command`` with ``sh -c`` in ``cwd``; the log ends up at ``log_path``."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    partial = log_path.with_name(log_path.name + ".partial")
    start = time.monotonic()
    timed_out = False
    with open(partial, "wb") as log:
        proc = subprocess.Popen(
            ["/bin/sh", "-c", command],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=clean_env(env),
        )
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        try:
            while True:
                remaining = timeout_s - (time.monotonic() - start)
                if remaining <= 0:
                    timed_out = True
                    _kill_group(proc)
                    break
                ready, _, _ = select.select([fd], [], [], min(0.5, remaining))
                if ready:
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        break
                    log.write(chunk)
                if tick is not None:
                    tick()
            if not timed_out:
                # The shell closed its output; processes it left behind in the group go too.
                proc.wait()
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        except BaseException:
            _kill_group(proc)
            log.close()
            partial.unlink(missing_ok=True)
            raise
        finally:
            proc.stdout.close()
    seconds = time.monotonic() - start
    os.replace(partial, log_path)
    code = proc.returncode if proc.returncode is not None else -9
    if code < 0:
        code = 128 + (-code)
    return RunResult(code, seconds, timed_out, log_path, log_path.stat().st_size)
