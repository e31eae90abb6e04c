"""Ctrl-C during a check: the check stops, exit 130, nothing half-written."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import as_in_a_terminal, git, make_repo, pilot_env


def test_sigint_stops_check_exits_130_and_leaves_nothing_half_written(tmp_path: Path) -> None:
    cfg = ('[[check]]\nname = "quick"\nrun = "true"\n'
           '[[check]]\nname = "slow"\nrun = "echo started > ../started; sleep 30; echo never > ../never"\n')
    repo = make_repo(tmp_path / "r", {".gitpilot.toml": cfg})
    proc = subprocess.Popen([sys.executable, "-m", "gitpilot", "check"], cwd=repo, env=pilot_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=as_in_a_terminal)
    deadline = time.monotonic() + 20
    while not (tmp_path / "started").exists():
        assert time.monotonic() < deadline, "the slow check never started"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 130
    assert b"interrupted" in err and b"Traceback" not in err
    time.sleep(0.2)
    assert not (tmp_path / "never").exists()  # the check's processes are gone
    logs = list((repo / ".git" / "pilot" / "checks").rglob("*"))
    assert not [p for p in logs if p.name.endswith(".partial")]
    assert not [p for p in logs if p.name == "02-slow.log"]
    # nothing recorded for an interrupted invocation, and the notes ref is not half-made
    assert git(repo, "for-each-ref", "refs/notes/") == ""
