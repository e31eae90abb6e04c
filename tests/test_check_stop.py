"""Stopping checks: `--bail` names the checks it skipped; Ctrl-C (SIGINT to git pilot alone or to
its process group, once or twice), SIGTERM and SIGHUP leave no process of the check behind, and
the interrupted check's partial log stays readable with `--log`. Real processes, real signals."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from conftest import as_in_a_terminal, make_repo, pilot_env, run_pilot

# Started by the check: a subshell, a background sleep and a Python child, each holding TOKEN in
# its command line so the test can find any that is left. `trap '' TERM` makes them ignore SIGTERM.
SLOW = """\
#!/bin/sh
token="$1"
[ "$2" = stubborn ] && trap '' TERM
echo "started $token"
echo started > ../started
(sleep 60; echo never > ../never) &
python3 -c 'import signal, sys, time
if sys.argv[2] == "stubborn": signal.signal(signal.SIGTERM, signal.SIG_IGN)
time.sleep(60)' "$token" "$2" &
python3 -c 'import time; time.sleep(60)' "$token"
wait
"""


def slow_repo(tmp_path: Path, mode: str = "plain") -> tuple[Path, str]:
    token = f"gp-check-{uuid.uuid4().hex}"
    trap = "trap '' TERM; " if mode == "stubborn" else ""  # the check's own shell ignores SIGTERM too
    cfg = ('[[check]]\nname = "quick"\nrun = "true"\n'
           f'[[check]]\nname = "slow"\nrun = "{trap}sh ./slow.sh {token} {mode}"\n')
    repo = make_repo(tmp_path / "repo", {".gitpilot.toml": cfg, "slow.sh": SLOW})
    return repo, token


def processes_with(token: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if token.encode() in cmdline and state != "Z":
            found.append(int(entry))
    return found


def start(repo: Path) -> subprocess.Popen[bytes]:
    (repo.parent / "started").unlink(missing_ok=True)
    return subprocess.Popen([sys.executable, "-m", "gitpilot", "check", "--force"], cwd=repo, env=pilot_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=as_in_a_terminal)


def wait_started(repo: Path, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while not (repo.parent / "started").exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the slow check never started"
        time.sleep(0.02)


def assert_none_left(token: str) -> None:
    left = processes_with(token)
    for pid in left:  # leave nothing running whatever the outcome
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert left == [], f"{len(left)} process(es) of the check outlived git pilot"


@pytest.mark.parametrize("target", ["git pilot alone", "its process group"])
def test_ctrl_c_leaves_no_process_of_the_check(tmp_path: Path, target: str) -> None:
    repo, token = slow_repo(tmp_path)
    rng = random.Random(11)
    for _ in range(6):
        proc = start(repo)
        wait_started(repo, proc)
        time.sleep(rng.uniform(0, 0.3))
        if target == "git pilot alone":
            proc.send_signal(signal.SIGINT)
        else:
            os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C sends
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 130, err
        assert err.decode().strip().splitlines()[-1] == "interrupted"
        assert_none_left(token)
    assert not (tmp_path / "never").exists()


def test_a_second_ctrl_c_does_not_orphan_a_check_that_ignores_sigterm(tmp_path: Path) -> None:
    repo, token = slow_repo(tmp_path, "stubborn")
    proc = start(repo)
    wait_started(repo, proc)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.5)  # git pilot is waiting for the group to end; an impatient user presses again
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert_none_left(token)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_take_the_check_with_them(tmp_path: Path, signum: int) -> None:
    repo, token = slow_repo(tmp_path)
    proc = start(repo)
    wait_started(repo, proc)
    proc.send_signal(signum)
    proc.communicate(timeout=30)
    assert proc.returncode == -signum  # git pilot ends as the signal ends it, after cleaning up
    assert_none_left(token)
    assert run_pilot("check", "--log", "slow", cwd=repo).stdout.startswith(f"started {token}")


def test_the_partial_log_of_an_interrupted_check_is_readable(tmp_path: Path) -> None:
    repo, token = slow_repo(tmp_path)
    proc = start(repo)
    wait_started(repo, proc)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)
    assert proc.returncode == 130
    shown = run_pilot("check", "--log", "slow", cwd=repo)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == f"started {token}\n"
    assert "interrupted" in shown.stderr and "partial" in shown.stderr
    # The next complete run's log is the latest again.
    (repo / ".gitpilot.toml").write_text('[[check]]\nname = "quick"\nrun = "true"\n'
                                         '[[check]]\nname = "slow"\nrun = "echo done now"\n')
    assert run_pilot("check", cwd=repo).returncode == 0
    again = run_pilot("check", "--log", "slow", cwd=repo)
    assert again.stdout == "done now\n" and again.stderr == ""


def test_bail_names_the_checks_it_skipped(tmp_path: Path) -> None:
    cfg = "".join(f'[[check]]\nname = "{n}"\nrun = "{r}"\n' for n, r in (
        ("lint", "true"), ("unit", "echo boom; exit 2"), ("e2e", "touch ../e2e-ran"), ("docs", "touch ../docs-ran")))
    repo = make_repo(tmp_path / "repo", {".gitpilot.toml": cfg})
    res = run_pilot("check", "--bail", cwd=repo)
    assert res.returncode == 1
    lines = res.stdout.splitlines()
    assert lines[-2] == "skipped (--bail): e2e, docs"
    assert lines[-1] == "checks: 1 passed, 1 failed, 2 skipped · full log: git pilot check --log unit"
    assert not (tmp_path / "e2e-ran").exists() and not (tmp_path / "docs-ran").exists()
    data = json.loads(run_pilot("check", "--bail", "--json", cwd=repo).stdout)
    assert data["skipped"] == ["e2e", "docs"]
    assert [c["name"] for c in data["checks"]] == ["lint", "unit"]
    # Without --bail nothing is skipped, and nothing says so.
    full = run_pilot("check", cwd=repo)
    assert "skipped" not in full.stdout and (tmp_path / "docs-ran").exists()
    assert json.loads(run_pilot("check", "--json", cwd=repo).stdout)["skipped"] == []
