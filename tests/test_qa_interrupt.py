"""A process killed or interrupted mid-write: exit 130 and one line for Ctrl-C, and whatever it was
writing is either complete or absent; the next run works and loses nothing.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import as_in_a_terminal, make_repo, pilot_env, run_pilot
from fake_agents import install
from test_qa_support import assert_fsck_clean, standard_files


def test_an_event_after_a_ledger_line_cut_short_is_kept(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", standard_files())
    assert run_pilot("check", cwd=repo).returncode == 0
    ledger = repo / ".git" / "pilot" / "efficiency.jsonl"
    whole = ledger.read_bytes()
    ledger.write_bytes(whole + b'{"at": "2024-01-01T00:00:00Z", "mechanism": "quiet-ch')  # a writer died here
    assert run_pilot("check", "--force", cwd=repo).returncode == 0
    summary = json.loads(run_pilot("efficiency", "--json", cwd=repo).stdout)
    assert summary["total"]["events"] == 2  # the first run's and the new one, not glued to the cut line
    assert ledger.read_bytes().startswith(whole)


def test_ctrl_c_during_run_exits_130_and_leaves_the_task_record_valid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo", standard_files())
    agents = install(tmp_path, monkeypatch)
    monkeypatch.setenv("FAKE_AGENT_SLEEP", "30")  # still in the agent's session when Ctrl-C comes
    proc = subprocess.Popen([sys.executable, "-m", "gitpilot", "run", "set up the widgets"], cwd=repo,
                            env=pilot_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, preexec_fn=as_in_a_terminal)
    # Ctrl-C while the agent works: once its session has begun, `run` has written its task.
    deadline = time.monotonic() + 60
    while not agents.state()["sessions"] and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert agents.state()["sessions"], "the agent's session never began"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert err.decode().strip().splitlines()[-1] == "interrupted"
    assert b"Traceback" not in err
    assert_fsck_clean(repo)
    status = run_pilot("status", "--json", cwd=repo)
    assert status.returncode == 0
    assert [t["title"] for t in json.loads(status.stdout)] == ["set up the widgets"]
    # The capsule the agent was given is complete: the same bytes a fresh build gives.
    capsule = next((repo / ".git" / "pilot").glob("capsule-*.md")).read_text()
    again = run_pilot("capsule", "--task", "set up the widgets", "--print", cwd=repo)
    assert again.stdout == capsule + "\n" or again.stdout == capsule
