"""The pre-push gate: a failing check refuses the push with its excerpt; a passed tree goes at once."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from conftest import git, make_repo, run_pilot

CHECK_SH = """#!/bin/sh
echo ran >> "$RUNS"
i=1
while [ $i -le 50 ]; do echo "test $i ok"; i=$((i+1)); done
if [ ! -f ok ]; then echo "AssertionError: ok is missing"; exit 1; fi
"""


def project(tmp: Path, gate: str = '["tests"]') -> tuple[Path, Path]:
    remote = tmp / "remote.git"
    git(tmp, "init", "-q", "--bare", str(remote))
    config = f'[[check]]\nname = "tests"\nrun = "sh check.sh"\n[share]\ngate = {gate}\n'
    repo = make_repo(tmp / "r", {".gitpilot.toml": config, "check.sh": CHECK_SH})
    git(repo, "remote", "add", "origin", str(remote))
    assert run_pilot("hooks", "install", cwd=repo).returncode == 0
    return repo, remote


def push(repo: Path, runs: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["git", "push", "origin", *args], cwd=repo, capture_output=True, timeout=120,
                          env={**os.environ, "RUNS": str(runs)})
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def commit_ok(repo: Path) -> None:
    (repo / "ok").write_text("")
    git(repo, "add", "ok")
    git(repo, "commit", "-q", "-m", "fix")


def test_failing_gate_refuses_the_push_with_the_excerpt(tmp_path: Path) -> None:
    repo, remote = project(tmp_path)
    runs = tmp_path / "runs"
    res = push(repo, runs, "main")
    assert res.returncode != 0
    out = res.stdout + res.stderr
    assert "AssertionError: ok is missing" in out
    assert "excerpt: " in out and "log: " in out  # the bounded excerpt and where the full log is
    assert "git pilot: push refused: tests failed on main" in out
    assert git(remote, "for-each-ref").strip() == ""  # nothing reached the remote


def test_passed_tree_goes_through_without_rerunning(tmp_path: Path) -> None:
    repo, remote = project(tmp_path)
    runs = tmp_path / "runs"
    commit_ok(repo)
    assert run_pilot("check", cwd=repo, env={"RUNS": str(runs)}).returncode == 0
    assert runs.read_text() == "ran\n"
    res = push(repo, runs, "main")
    assert res.returncode == 0, res.stderr
    assert "pre-push gate: tests already passed on main" in res.stderr
    assert runs.read_text() == "ran\n"  # not run again
    assert git(remote, "rev-parse", "main").strip() == git(repo, "rev-parse", "main").strip()


def test_gate_checks_a_branch_that_is_not_checked_out_in_a_temporary_worktree(tmp_path: Path) -> None:
    repo, remote = project(tmp_path)
    runs = tmp_path / "runs"
    git(repo, "checkout", "-q", "-b", "fixed")
    commit_ok(repo)
    git(repo, "checkout", "-q", "main")
    (repo / "scratch.txt").write_text("uncommitted work\n")  # the gate must not test this
    res = push(repo, runs, "fixed")
    assert res.returncode == 0, res.stdout + res.stderr
    assert runs.read_text() == "ran\n"
    assert git(repo, "worktree", "list").count("\n") == 1
    tree = git(repo, "rev-parse", "fixed^{tree}").strip()
    assert '"result":"pass"' in git(repo, "notes", "--ref=pilot/checks", "show", tree)
    # the recorded pass makes the next push of that tree instant
    git(repo, "push", "-q", "origin", ":fixed")
    res = push(repo, runs, "fixed")
    assert res.returncode == 0 and "already passed on fixed" in res.stderr
    assert runs.read_text() == "ran\n"


def test_misnamed_gate_refuses_with_a_clear_line(tmp_path: Path) -> None:
    repo, remote = project(tmp_path, gate='["unit"]')
    res = push(repo, tmp_path / "runs", "main")
    assert res.returncode != 0
    assert "git pilot: pre-push gate ([share] gate): no check named 'unit' (checks: tests)" in res.stderr
    # --no-verify skips the gate once, as the refusal says
    assert subprocess.run(["git", "push", "-q", "--no-verify", "origin", "main"], cwd=repo).returncode == 0


def test_notes_and_deletions_are_not_gated(tmp_path: Path) -> None:
    repo, remote = project(tmp_path)
    runs = tmp_path / "runs"
    assert run_pilot("check", cwd=repo, env={"RUNS": str(runs)}).returncode == 1
    res = push(repo, runs, "refs/notes/pilot/checks")
    assert res.returncode == 0, res.stderr
    assert "pre-push gate" not in res.stderr
    assert runs.read_text() == "ran\n"


def test_a_failing_budget_recorder_never_blocks_the_push(tmp_path: Path) -> None:
    repo, remote = project(tmp_path, gate="[]")
    plug = tmp_path / "plug"
    plug.mkdir()
    # A stand-in review capability whose recorder breaks.
    (plug / "sitecustomize.py").write_text(
        "import sys, types\n"
        "m = types.ModuleType('gitpilot.review.budget')\n"
        "def record_for_commit(repo, commit):\n"
        "    raise RuntimeError('budget broke on ' + commit)\n"
        "m.record_for_commit = record_for_commit\n"
        "sys.modules['gitpilot.review.budget'] = m\n"
    )
    path = f"{plug}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"
    proc = subprocess.run(["git", "push", "origin", "main"], cwd=repo, capture_output=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": path})
    assert proc.returncode == 0, proc.stderr.decode()
    head = git(repo, "rev-parse", "HEAD").strip()
    assert f"warning: pre-push: could not record the review budget of {head[:12]}" in proc.stderr.decode()
    log = (repo / ".git" / "pilot" / "logs" / "hooks.log").read_text()
    assert f"RuntimeError: budget broke on {head}" in log
    assert git(remote, "rev-parse", "main").strip() == head


def test_a_scoped_gate_check_that_passed_on_its_files_is_not_rerun_for_a_docs_commit(
        tmp_path: Path, pilot_on_path: Path) -> None:
    repo, remote = project(tmp_path)
    cfg = repo / ".gitpilot.toml"
    cfg.write_text(cfg.read_text().replace('run = "sh check.sh"', 'run = "sh check.sh"\nfiles = ["check.sh", "ok"]'))
    runs = tmp_path / "runs"
    commit_ok(repo)
    assert run_pilot("check", cwd=repo, env={"RUNS": str(runs)}).returncode == 0
    (repo / "README.md").write_text("# docs only\n")
    git(repo, "add", "README.md", ".gitpilot.toml")
    git(repo, "commit", "-q", "-m", "docs and the scope")
    res = push(repo, runs, "main")
    assert res.returncode == 0, res.stderr
    assert "already passed" in res.stderr and runs.read_text() == "ran\n"  # not run again for the docs commit
