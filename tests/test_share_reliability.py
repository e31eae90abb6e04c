"""Many real processes writing check notes at once, and processes killed with SIGKILL mid-write."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import git, make_repo, pilot_env, run_pilot

from gitpilot.checks.records import key_hash, new_record
from gitpilot.config import CheckSpec
from gitpilot.repo import Repo
from gitpilot.store.notes import NotesStore

CONFIG = ("[[check]]\nname = \"unit\"\nrun = \"true\"\nenv = [\"RUN_ID\"]\n"
          "[share]\ntrust = [\"origin\"]\ngate = [\"unit\"]\npush = true\n")
SPEC = CheckSpec(name="unit", run="true", env=("RUN_ID",))
REF = "refs/notes/pilot/checks"


def key(run_id: str) -> str:
    return key_hash(SPEC, {"RUN_ID": run_id})


def start(args: list[str], cwd: Path, run_id: str = "") -> subprocess.Popen[bytes]:
    env = pilot_env({"RUN_ID": run_id} if run_id else None)
    return subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def pilot_args(*args: str) -> list[str]:
    return [sys.executable, "-m", "gitpilot", *args]


def all_lines(repo: Path) -> set[str]:
    """Every note line under the checks ref; fails if the ref or any object is broken."""
    tip = git(repo, "rev-parse", "--verify", f"{REF}^{{commit}}").strip()
    lines: set[str] = set()
    for row in git(repo, "notes", f"--ref={REF}", "list").splitlines():
        blob, target = row.split()
        lines.update(ln for ln in git(repo, "cat-file", "blob", blob).splitlines() if ln)
        assert len(target) == 40
    assert tip
    return lines


def setup_world(tmp: Path, worktrees: int) -> tuple[Path, Path, list[Path]]:
    remote = tmp / "remote.git"
    git(tmp, "init", "-q", "--bare", str(remote))
    main = make_repo(tmp / "main", {".gitpilot.toml": CONFIG, "app.py": "x = 0\n"})
    git(main, "remote", "add", "origin", str(remote))
    git(main, "push", "-q", "origin", "main")
    # Another clone has shared passes on trees of its own; ours will pull them.
    other = tmp / "other"
    git(tmp, "clone", "-q", str(remote), str(other))
    records: dict[str, list[str]] = {}
    for i in range(5):  # objects the other clone checked (any object id can carry a note)
        oid = git(other, "hash-object", "-w", "--stdin", input=f"other {i}\n".encode()).strip()
        rec = new_record(SPEC, key(f"other-{i}"), "pass", 0.1, 0, "other@example.com", "2024-01-01T00:00:00Z")
        records[oid] = [rec.to_line()]
    NotesStore(Repo.discover(other), REF).add_lines(records, "other clone's passes")
    assert run_pilot("share", "push", cwd=other).returncode == 0
    assert run_pilot("hooks", "install", cwd=main).returncode == 0
    (main / "app.py").write_text("x = 'main'\n")
    git(main, "commit", "-q", "-am", "main moves on")
    trees = [main]
    for i in range(1, worktrees):
        wt = tmp / f"wt{i}"
        git(main, "worktree", "add", "-q", "-b", f"b{i}", str(wt), "main")
        (wt / "app.py").write_text(f"x = {i}\n")
        git(wt, "commit", "-q", "-am", f"wt {i}")
        trees.append(wt)
    return remote, other, trees


def test_sixteen_concurrent_writers_lose_no_record(tmp_path: Path) -> None:
    remote, _, worktrees = setup_world(tmp_path, 4)
    main = worktrees[0]
    procs: list[tuple[str, subprocess.Popen[bytes]]] = []
    for i in range(8):  # `git pilot check` runs, two per worktree
        procs.append((f"check-{i}", start(pilot_args("check"), worktrees[i % 4], f"check-{i}")))
    for i, wt in enumerate(worktrees):  # real pushes whose pre-push hooks gate and share notes
        branch = git(wt, "rev-parse", "--abbrev-ref", "HEAD").strip()
        procs.append((f"push-{i}", start(["git", "push", "-q", "origin", branch], wt, f"push-{i}")))
    for i in range(4):  # merges of the other clone's notes
        procs.append((f"pull-{i}", start(pilot_args("share", "pull"), worktrees[i])))
    assert len(procs) == 16
    for name, p in procs:
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, f"{name}: {out.decode()}{err.decode()}"
    lines = all_lines(main)
    keys = {line.split('"key":"')[1][:32] for line in lines if '"remote"' not in line}
    expected = {key(f"check-{i}") for i in range(8)} | {key(f"push-{i}") for i in range(4)}
    assert expected <= keys  # every local run's record is there
    pulled = {line.split('"key":"')[1][:32] for line in lines if '"remote":"origin"' in line}
    assert {key(f"other-{i}") for i in range(5)} <= pulled
    # the remote got every worktree's gated pass, and its notes ref is valid
    remote_keys = {line.split('"key":"')[1][:32] for line in all_lines(remote)}
    assert {key(f"push-{i}") for i in range(4)} <= remote_keys
    assert git(main, "fsck", "--no-dangling", "--connectivity-only", check=False) == ""


def test_sigkill_at_any_point_leaves_refs_valid_and_earlier_records_intact(tmp_path: Path) -> None:
    remote, _, worktrees = setup_world(tmp_path, 2)
    main = worktrees[0]
    rng = random.Random(1234)
    seen: set[str] = set()
    remote_seen: set[str] = set()
    for round_no in range(6):
        procs = [
            start(pilot_args("check"), worktrees[0], f"kill-{round_no}-a"),
            start(pilot_args("check"), worktrees[1], f"kill-{round_no}-b"),
            start(pilot_args("share", "pull"), worktrees[1]),
            start(pilot_args("share", "push"), worktrees[0]),
        ]
        time.sleep(rng.uniform(0.05, 0.9))
        for p in procs:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGKILL)
        for p in procs:
            p.communicate(timeout=60)
        time.sleep(0.2)  # git children of a killed process finish their own (atomic) ref update
        now = all_lines(main) if git(main, "rev-parse", "--verify", "-q", REF, check=False) else set()
        assert seen <= now, f"round {round_no} lost records"
        seen = now
        if git(remote, "rev-parse", "--verify", "-q", REF, check=False):
            remote_now = all_lines(remote)
            assert remote_seen <= remote_now
            remote_seen = remote_now
    # no lock or half-written state is left behind: later writers and pushes still work
    res = run_pilot("check", cwd=main, env={"RUN_ID": "after"})
    assert res.returncode == 0, res.stderr
    assert run_pilot("share", "push", cwd=main).returncode == 0, "push after kills"
    assert key("after") in {ln.split('"key":"')[1][:32] for ln in all_lines(remote)}
    assert git(main, "fsck", "--no-dangling", "--connectivity-only", check=False) == ""
