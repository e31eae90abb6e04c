"""Ctrl-C during ``git pilot run``: the task is recorded as stopped (not left ``working``), the
captured session process is ended with it, and an interactive session keeps Ctrl-C for itself."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import as_in_a_terminal, make_repo, pilot_env, run_pilot
from fake_agents import install
from fake_agents.pilot import session_record, state_record, tid_of

TASK = "set up the widgets"


def start(repo: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "gitpilot", "run", TASK], cwd=repo, env=pilot_env(),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=as_in_a_terminal)


def registered_pid(repo: Path, timeout: float = 20.0) -> int:
    """The session process git pilot registered (it is running once this returns)."""
    path = repo / ".git" / "pilot" / "run" / f"{tid_of(TASK)}.json"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            return int(json.loads(path.read_text())["pid"])
        except (OSError, ValueError, KeyError):
            time.sleep(0.05)
    raise AssertionError("the session process was never registered")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_ctrl_c_records_the_task_as_stopped_and_ends_the_session_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "# widgets\n"})
    install(tmp_path, monkeypatch)
    monkeypatch.setenv("FAKE_AGENT_SLEEP", "30")
    proc = start(repo)
    child = registered_pid(repo)
    assert state_record(repo, tid_of(TASK))["status"] == "working"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    lines = [ln for ln in err.decode().splitlines() if ln.strip()]
    assert lines[-1] == "interrupted" and "Traceback" not in err.decode()
    assert f"task {tid_of(TASK)[:12]} stopped (interrupted); continue it with git pilot resume" in lines[-2]
    assert not alive(child)  # not left running with nobody reading its output
    state = state_record(repo, tid_of(TASK))
    assert state["status"] == "stopped"
    entry = session_record(repo, tid_of(TASK))["sessions"][-1]
    assert (entry["exit"], entry["failure"], entry["interrupted"]) == (130, None, True)
    status = json.loads(run_pilot("status", "--json", cwd=repo).stdout)
    assert [t["status"] for t in status] == ["stopped"]


def test_an_interactive_session_keeps_ctrl_c_for_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "# widgets\n", ".gitpilot.toml": '[agent]\nmode = "interactive"\n'})
    install(tmp_path, monkeypatch)
    monkeypatch.setenv("FAKE_AGENT_SLEEP", "3")
    proc = start(repo)
    child = registered_pid(repo)
    proc.send_signal(signal.SIGINT)  # what the terminal sends to git pilot too when the user cancels a turn
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err.decode()  # it waited for the session to end by itself
    assert not alive(child)
    entry = session_record(repo, tid_of(TASK))["sessions"][-1]
    assert entry["exit"] == 0 and "interrupted" not in entry
