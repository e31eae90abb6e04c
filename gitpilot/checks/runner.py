"""Runs one check command: its whole output to a log file, a timeout, and clean interruption.

stdout and stderr share one pipe, so the log holds them interleaved as a terminal would
show them, byte for byte. The command runs in its own process group: a timeout, Ctrl-C
(SIGINT to git pilot alone or to its whole process group), SIGTERM or SIGHUP kills the whole
group, not just the shell, and git pilot waits until none of it is left. A signal that arrives
while the command starts is held until the group can be cleaned up, and a second Ctrl-C does not
cut the cleanup short. The log is written as ``.partial`` and renamed when the command ends; an
interrupted run's log is kept as ``NN-name.interrupted.log`` (``git pilot check --log`` shows it),
so no log under a check's own name is ever half-written.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import BinaryIO

from gitpilot.fileio import rename
from gitpilot.gitrun import clean_env


@dataclass(frozen=True)
class RunResult:
    exit_code: int
    seconds: float
    timed_out: bool
    log_path: Path
    log_size: int


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived while a check ran (like KeyboardInterrupt for SIGINT)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


_HANDLED: tuple[int, ...] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_GONE_WAIT = 2.0  # seconds to wait for a killed group's last processes to exit


def _raise_for(signum: int, frame: FrameType | None = None) -> None:
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated(signum)


class _Held:
    """Signals held while the check starts, then raised where the group can be cleaned up."""

    def __init__(self) -> None:
        self.pending: list[int] = []
        self.previous: dict[int, object] = {}

    def hold(self, signum: int, frame: FrameType | None) -> None:
        self.pending.append(signum)

    def release(self) -> None:
        """From here on the signals raise; one that came while holding raises now."""
        for signum in self.previous:
            signal.signal(signum, _raise_for)
        if self.pending:
            _raise_for(self.pending[0])


@contextmanager
def _signals_held() -> Iterator[_Held]:
    held = _Held()
    try:
        for signum in _HANDLED:
            held.previous[signum] = signal.signal(signum, held.hold)
    except ValueError:  # not the main thread: signals cannot be handled here
        held.previous.clear()
    try:
        yield held
    finally:
        for signum, previous in held.previous.items():
            signal.signal(signum, previous)  # type: ignore[arg-type]


@contextmanager
def _uninterrupted() -> Iterator[None]:
    """Ignore further signals while the group is killed: a second Ctrl-C must not orphan it."""
    previous: dict[int, object] = {}
    try:
        for signum in _HANDLED:
            previous[signum] = signal.signal(signum, signal.SIG_IGN)
    except ValueError:
        previous.clear()
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]


def _group_gone(pgid: int, deadline: float) -> bool:
    """Wait until no process of group ``pgid`` is left (a reaped zombie counts as gone)."""
    while True:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the whole group, SIGKILL to what is left after 2 s, then wait until it is gone."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=2)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
    _group_gone(proc.pid, time.monotonic() + _GONE_WAIT)


def interrupted_name(log_path: Path) -> Path:
    """Where an interrupted run keeps its partial log: ``01-unit.log`` -> ``01-unit.interrupted.log``."""
    return log_path.with_name(log_path.name.removesuffix(".log") + ".interrupted.log")


def run_command(
    command: str,
    cwd: Path,
    log_path: Path,
    timeout_s: float,
    tick: Callable[[], None] | None = None,
    env: dict[str, str] | None = None,
) -> RunResult:
    """Run ``command`` with ``sh -c`` in ``cwd``; the log ends up at ``log_path``.

    Interrupted (KeyboardInterrupt, or ``Terminated`` for SIGTERM/SIGHUP), the command's whole
    process group is gone before the exception goes on, and the output so far is kept at
    ``interrupted_name(log_path)``.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    partial = log_path.with_name(log_path.name + ".partial")
    start = time.monotonic()
    timed_out = False
    with _signals_held() as held, open(partial, "wb") as log:
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
            held.release()
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
        except BaseException as exc:
            with _uninterrupted():
                _kill_group(proc)
                _drain(fd, log)
                log.close()
                rename(partial, interrupted_name(log_path))
            if isinstance(exc, Terminated):  # end as the signal would have ended git pilot
                signal.signal(exc.signum, signal.SIG_DFL)
                os.kill(os.getpid(), exc.signum)
            raise
        finally:
            proc.stdout.close()
    seconds = time.monotonic() - start
    rename(partial, log_path)  # a log: not synced
    code = proc.returncode if proc.returncode is not None else -9
    if code < 0:
        code = 128 + (-code)
    return RunResult(code, seconds, timed_out, log_path, log_path.stat().st_size)


def _drain(fd: int, log: BinaryIO) -> None:
    """What the killed group had written and git pilot had not read yet, into the partial log."""
    while True:
        ready, _, _ = select.select([fd], [], [], 0)
        if not ready:
            return
        chunk = os.read(fd, 65536)
        if not chunk:
            return
        log.write(chunk)
